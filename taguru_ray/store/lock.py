"""One run per --out: the ``.extract.lock`` — an flock on a local disk, a lease on object stores.

On a local disk the lock is an ``flock`` on the lock file, held for the whole
run by the driver process: the kernel drops it the moment that process dies,
however it dies, so a killed driver's lock never blocks the rerun. The file
keeps the holder's pid and host only to name it in the refusal.

An object store has no flock and no process to watch, so there the lock is
the lease of `lease.py`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Callable
from typing import IO

from taguru_ray.errors import StartupError
from taguru_ray.store.lease import LeaseLock, refusal
from taguru_ray.store.outdir import LOCK, OutDir


class OutLock:
    def __init__(self, out: OutDir) -> None:
        self._out = out
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        path = self._out.local_path(LOCK)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the run
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe(handle.read())
            handle.close()
            raise StartupError(refusal(self._out, holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> OutLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"


def lock_for(out: OutDir, say: Callable[[str], None]) -> OutLock | LeaseLock:
    """The lock that fits --out's backend (`say` prints a line to stderr)."""
    if out.local:
        return OutLock(out)
    return LeaseLock(out, say)
