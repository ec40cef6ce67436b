"""A lease's renewals stop reaching the run once it is detached (issue 37, item 12).

After the summary, the driver shuts Ray down while the lease is still held and
renewed; a renewal that then called an actor found it gone (`Can't find actor`)
and Ray's auto-init started a second local Ray. `detach` is the driver's cut:
once it returns, no renewal is telling the run anything, nor will one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from taguru_ray.store.lease import LeaseLock, Seen
from taguru_ray.store.outdir import OutDir
from tests.support import REPO


class MemoryStore:
    """The lock object in memory, versioned like an ETag."""

    def __init__(self) -> None:
        self.seen: Seen | None = None
        self._version = 0

    def read(self) -> Seen | None:
        return self.seen

    def _put(self, data: bytes) -> Seen:
        self._version += 1
        self.seen = Seen(data, str(self._version))
        return self.seen

    def create(self, data: bytes) -> Seen:
        return self._put(data)

    def replace(self, data: bytes, seen: Seen) -> Seen:
        return self._put(data)

    def delete(self, seen: Seen) -> None:
        self.seen = None


def held(tmp_path: Path) -> LeaseLock:
    lock = LeaseLock(OutDir(str(tmp_path)), print, seconds=600, store=MemoryStore())
    lock.acquire()  # its heartbeat waits 150 s: the test renews by hand
    return lock


def test_a_detached_lease_is_renewed_without_telling_the_run(tmp_path: Path) -> None:
    lock = held(tmp_path)
    told: list[float] = []
    lock.on_renewed = told.append
    lock.renew()
    assert len(told) == 1
    lock.detach()
    before = lock.valid_until
    lock.renew()
    assert len(told) == 1 and lock.valid_until >= before  # renewed, not told
    lock.release()


def test_detach_returns_only_after_a_call_under_way_has_finished(tmp_path: Path) -> None:
    lock = held(tmp_path)
    entered, go, finished = threading.Event(), threading.Event(), threading.Event()

    def slow(_: float) -> None:
        entered.set()
        go.wait(30)
        finished.set()

    lock.on_renewed = slow
    renewing = threading.Thread(target=lock.renew)
    renewing.start()
    assert entered.wait(30)
    detaching = threading.Thread(target=lock.detach)
    detaching.start()
    detaching.join(0.2)
    assert detaching.is_alive() and not finished.is_set()  # held while the call runs
    go.set()
    detaching.join(30)
    renewing.join(30)
    assert not detaching.is_alive() and finished.is_set() and lock.on_renewed is None
    lock.release()


def test_the_console_script_never_lets_ray_start_itself() -> None:
    """A stray Ray call after the verb's own Ray is gone raises; it does not auto-start a
    local Ray (RAY_ENABLE_AUTO_CONNECT=0, set before any verb imports Ray)."""
    code = (
        "import contextlib, io\n"
        "from taguru_ray.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['inspect', '--help'])\n"
        "import ray\n"
        "@ray.remote\n"
        "def f():\n"
        "    return 1\n"
        "try:\n"
        "    f.remote()\n"
        "except Exception as error:\n"
        "    print('refused', type(error).__name__)\n"
        "print('initialized', ray.is_initialized())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_AUTO_CONNECT"}
    env["PYTHONPATH"] = str(REPO)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "refused" in result.stdout and "initialized False" in result.stdout, result.stdout
