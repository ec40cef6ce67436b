"""Documents converted in a child process, with a time and a memory limit (ADR 0078).

A segment worker keeps one child (`engine/converter_child.py`) and sends it one
document at a time. The child caps its own address space (``--convert-memory``); a
conversion that passes ``--convert-timeout`` has its child killed. Either way that
document fails in one line naming why — the next one starts a fresh child — and the
worker, its other segments and the run go on. The child lives as long as its worker:
its imports (trafilatura's take a second) are paid once, not per document.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from taguru_ray.documents.converted import Converted, DocumentRefused
from taguru_ray.engine.converter_child import LENGTH

CHILD = (sys.executable, "-m", "taguru_ray.engine.converter_child")


class Converter:
    """A child converting documents, one at a time (calls from several threads queue)."""

    def __init__(
        self, timeout_s: float, memory_bytes: int, command: Sequence[str] = CHILD
    ) -> None:
        self._timeout = timeout_s
        self._memory = memory_bytes
        self._command = tuple(command)
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def convert(self, kind: str, data: bytes) -> Converted:
        """The document's paragraphs; `DocumentRefused` naming why it has none."""
        with self._lock:
            child = self._started()
            try:
                body = self._ask(child, kind, data)
            except _Died as died:
                self._child = None
                raise DocumentRefused(self._death(died.child, died.timed_out)) from None
        try:
            answer = json.loads(body)
            refused = answer.get("refused")
            converted = None if refused is not None else Converted.from_json(answer["converted"])
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise DocumentRefused(f"the converter answered garbage ({error})") from None
        if converted is None:
            raise DocumentRefused(str(refused))
        return converted

    def close(self) -> None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            _end(child)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._child is None or self._child.poll() is not None:
            self._child = subprocess.Popen(
                [*self._command, str(self._memory)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        return self._child

    def _ask(self, child: subprocess.Popen[bytes], kind: str, data: bytes) -> bytes:
        assert child.stdin is not None and child.stdout is not None
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        writer = threading.Thread(
            target=_write, args=(child, kind.encode() + b"\n" + LENGTH.pack(len(data)), data),
            daemon=True,
        )
        writer.start()
        header = _read(child, LENGTH.size, deadline)
        body = _read(child, LENGTH.unpack(header)[0], deadline)
        writer.join()
        return body

    def _death(self, child: subprocess.Popen[bytes], timed_out: bool) -> str:
        if timed_out:
            return (
                f"its conversion took longer than {self._timeout:g} s and was stopped — "
                "raise --convert-timeout, or split the document"
            )
        code = child.returncode
        mib = self._memory >> 20
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return (
                f"its converter died ({name}) — most likely past its {mib} MiB memory limit "
                "(--convert-memory); raise it, or split the document"
            )
        return (
            f"its converter ended (exit {code}) — most likely past its {mib} MiB memory limit "
            "(--convert-memory); raise it, or split the document"
        )


class _Died(Exception):
    def __init__(self, child: subprocess.Popen[bytes], timed_out: bool) -> None:
        super().__init__()
        self.child = child
        self.timed_out = timed_out


def _write(child: subprocess.Popen[bytes], head: bytes, data: bytes) -> None:
    assert child.stdin is not None
    try:
        child.stdin.write(head)
        child.stdin.write(data)
        child.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass  # the child died reading it: the reader sees the end of its output


def _read(child: subprocess.Popen[bytes], size: int, deadline: float | None) -> bytes:
    assert child.stdout is not None
    fd = child.stdout.fileno()
    parts: list[bytes] = []
    held = 0
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while held < size:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                _end(child)
                raise _Died(child, timed_out=True)
            if not selector.select(wait):
                continue
            chunk = os.read(fd, min(size - held, 1 << 20))
            if not chunk:
                _end(child)
                raise _Died(child, timed_out=False)
            parts.append(chunk)
            held += len(chunk)
    return b"".join(parts)


def _end(child: subprocess.Popen[bytes]) -> None:
    """Kill the child this converter started (by its own handle) and reap it."""
    if child.poll() is None:
        child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=10)
    for stream in (child.stdin, child.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
