"""A replica's model server, as its actor runs it: started under the guard, its log,
its health and version asked over HTTP, stopped.

The server writes its stdout and stderr to a log file on its node, and the guard
its own lines to the same file (`guard.py`); the last lines of it are what a
failed start, or a server that died, says. Health and version are asked the
way each engine answers (`contract/engines.py`): a server is up when its
health path answers 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field

import aiohttp

from taguru_ray.contract.engines import ServerSpec
from taguru_ray.text.terminal import printable

STOP_GRACE_S = 10.0  # SIGTERM to SIGKILL: a server finishes what it has in flight
ASK_S = 3.0  # one health or version question, at the most
TAIL_LINES = 6
TAIL_CHARS = 240  # a line of the tail, at the most
COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # servers colour their log lines: not for a message


def free_port(host: str) -> int:
    """A port nothing listens on at `host` now; the server binds it a moment later (a
    port taken in between is a server that cannot start: its log says so)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def answers(http: aiohttp.ClientSession, url: str) -> bool:
    """Whether GET `url` answers 200 within ASK_S."""
    try:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=ASK_S)) as response:
            await response.read()
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


@dataclass
class Server:
    """One server process (under its guard) and where it listens."""

    spec: ServerSpec
    host: str
    port: int
    log_path: str
    grace: float = STOP_GRACE_S
    started_at: float = 0.0
    _guard: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base(self) -> str:
        """http://HOST:PORT, where the engine's own paths are."""
        return f"http://{url_host(self.host)}:{self.port}"

    @property
    def argv(self) -> list[str]:
        return self.spec.argv(sys.executable, self.host, self.port)

    def start(self) -> None:
        """Spawn the guard, which spawns the server; both write to the log."""
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        guard = [sys.executable, "-m", "taguru_ray.engine.replicas.guard"]
        guard += [str(os.getpid()), f"{self.grace:g}", "--", *self.argv]
        with open(self.log_path, "ab") as log:
            self._guard = subprocess.Popen(
                guard,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl+C at the driver's terminal is the run's to handle
                # (in-flight completions finish), never the server's.
                start_new_session=True,
            )
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        """The guard's pid (the server is its child)."""
        return self._guard.pid if self._guard is not None else None

    def exited(self) -> int | None:
        """The server's exit code once it ended (the guard's is the server's)."""
        return None if self._guard is None else self._guard.poll()

    def tail(self, lines: int = TAIL_LINES) -> list[str]:
        """The log's last non-empty lines, each made safe to print and cut short."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(handle.tell() - 64 * 1024, 0))
                data = handle.read()
        except OSError:
            return []
        kept: deque[str] = deque(maxlen=lines)
        for raw in data.decode("utf-8", "replace").splitlines():
            line = printable(COLOUR.sub("", raw).strip())
            if line:
                kept.append(line if len(line) <= TAIL_CHARS else line[: TAIL_CHARS - 1] + "…")
        return list(kept)

    async def healthy(self, http: aiohttp.ClientSession) -> bool:
        """Whether the engine's health path answers 200 now."""
        return await answers(http, self.base + self.spec.kind.health)

    async def version(self, http: aiohttp.ClientSession) -> str | None:
        """The version the running server states (None when none of its paths says)."""
        for path in self.spec.kind.versions:
            try:
                async with http.get(
                    self.base + path, timeout=aiohttp.ClientTimeout(total=ASK_S)
                ) as response:
                    if response.status != 200:
                        continue
                    body = await response.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
                continue
            if isinstance(body, dict) and isinstance(body.get("version"), str | int | float):
                return printable(str(body["version"]))[:64]
        return None

    def stop(self) -> int | None:
        """Ask the guard to end the server (SIGTERM, its grace, SIGKILL) and wait for it;
        a guard that outlives that is killed, and the server with it. The exit code."""
        guard = self._guard
        if guard is None:
            return None
        if guard.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                guard.send_signal(signal.SIGTERM)
            try:
                guard.wait(self.grace + 5.0)
            except subprocess.TimeoutExpired:
                guard.kill()  # the server has a parent-death SIGKILL from it
                guard.wait()
        return guard.returncode

    async def stopped(self) -> int | None:
        """`stop`, off the event loop."""
        return await asyncio.to_thread(self.stop)
