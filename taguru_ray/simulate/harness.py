"""Run the simulator as a real subprocess, for tests and benchmarks.

`SimulatorProcess` starts `python -m taguru_ray.cli.simulate --port 0 ...`
(extra arguments pass through; a later `--port` wins; the keywords `vary`,
`vary_seed` and `vary_run` add `--vary`, `--vary-seed` and `--vary-run`, left
out when None), reads the base URL
from the first stdout line, and stops the process on exit: SIGTERM, then
SIGKILL after a grace period. A separate process keeps the server's event
loop and CPU apart from the client under test, as a real model server is.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import taguru_ray

_PROJECT_ROOT = Path(taguru_ray.__file__).resolve().parent.parent
# The simulator is on loopback: a proxy set in the environment must not stand between.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class SimulatorProcess:
    """A running `taguru-ray simulate`; use as a context manager.

    with SimulatorProcess("--slots", "2", "--latency-ms", "200") as sim:
        post(sim.chat_url, request_body)  # any HTTP client
        sim.stats()["max_in_flight"]

    `SimulatorProcess(vary=0.2, vary_seed=7, vary_run=2)` is one benchmark run of
    a model whose answers vary from run to run (simulate/vary.py); flags given in
    `args` come after these, so they win.
    """

    def __init__(
        self,
        *args: str,
        startup_timeout: float = 30.0,
        stop_grace: float = 5.0,
        vary: float | None = None,
        vary_seed: int | None = None,
        vary_run: int | str | None = None,
    ) -> None:
        self.args = [*_vary_args(vary, vary_seed, vary_run), *args]
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None
        self._base_url: str | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`, as the server printed it."""
        if self._base_url is None:
            raise RuntimeError("the simulator is not running; call start() or use `with`")
        return self._base_url

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def root_url(self) -> str:
        """The base URL without `/v1`: where `/stats` and `/script` live."""
        return self.base_url.removesuffix("/v1")

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("the simulator is not running")
        return self._proc.pid

    def start(self) -> SimulatorProcess:
        """Start the process and wait for its base URL; raises RuntimeError
        (with the server's stderr) when it exits or stays silent instead."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
        # Owned by this object and closed in stop(), past any `with` block here.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "taguru_ray.cli.simulate", "--port", "0", *self.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        line = self._first_line(self._proc)
        if not line.startswith("http://"):
            why = f"exit {self._proc.poll()}, first line {line!r}: {self._stderr_text()}"
            self.stop()
            raise RuntimeError(f"simulator did not start ({why})")
        self._base_url = line.strip()
        return self

    def stop(self) -> int | None:
        """Terminate (then kill after `stop_grace` s); returns the exit code."""
        proc, self._proc = self._proc, None
        self._base_url = None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(self.stop_grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return proc.returncode

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/stats")

    def reset(self) -> dict[str, Any]:
        """Zero the counters (POST /stats/reset); returns the fresh stats."""
        return self._call("POST", "/stats/reset")

    def set_script(self, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Replace the script rules (POST /script); returns them as stored."""
        return self._call("POST", "/script", rules)

    def script(self) -> list[dict[str, Any]]:
        return self._call("GET", "/script")

    def batch_stats(self) -> dict[str, Any]:
        """The batch desk's counters: requests by custom_id, those handed over twice."""
        return self._call("GET", "/batches/stats")

    def set_batch_behaviour(self, **fields: float) -> dict[str, Any]:
        """delay_seconds, expire, fail_rate of batches created from now on; with
        `reset`, the batch counters (and mischief) are zeroed first; with `forget`, every
        batch and file too."""
        forget = bool(fields.pop("forget", False))
        if fields.pop("reset", False) or forget:
            self._call("POST", "/batches/reset", {"forget": True} if forget else {})
        return self._call("POST", "/batches/behaviour", fields)

    def set_batch_mischief(self, tricks: list[dict[str, Any]]) -> dict[str, Any]:
        """The batch routes' scripted misbehaviours (POST /batches/mischief)."""
        return self._call("POST", "/batches/mischief", tricks)

    def __enter__(self) -> SimulatorProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _call(self, method: str, path: str, body: object = None) -> Any:
        """A control call on loopback (no proxy from the environment; an HTTP error
        status raises)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.root_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with _DIRECT.open(request, timeout=30.0) as response:
            return json.loads(response.read())

    def _first_line(self, proc: subprocess.Popen[str]) -> str:
        # readline() has no timeout; a helper thread gives it one, so a server
        # that hangs before printing fails the caller instead of blocking it.
        lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            return lines.get(timeout=self.startup_timeout)
        except queue.Empty:
            return ""

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", errors="replace").strip()


def _vary_args(vary: float | None, seed: int | None, run: int | str | None) -> list[str]:
    """`--vary`, `--vary-seed`, `--vary-run` for the keywords given (None = not given)."""
    flags = (("--vary", vary), ("--vary-seed", seed), ("--vary-run", run))
    return [part for flag, value in flags if value is not None for part in (flag, str(value))]
