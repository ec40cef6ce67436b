"""Local store writes in batches: one thread, one durability barrier per batch (ADR 0018).

A segment worker writes four or five small files per completion, each durable
before it goes on (the attempts log, the checkpoint, the source file and its
trace). Run on a thread each, with an fsync each, at 300 completions a second
on two cores, those writes cost more than the pipeline: dozens of GIL
hand-offs and context switches per completion between the event loop and
thirty store threads, and the loop runnable but waiting for a core.

Here one thread per process runs every queued write function in a batch.
Inside it, a local `OutDir.write` stages its temp file and an append its bytes
(`staging()`), without an fsync; the batch then pays one barrier — `syncfs`
of each filesystem it touched (Linux), or an fsync per staged file elsewhere
— before the temp files are renamed over their targets and the callers
resume. What a caller may rely on is unchanged: a file's bytes are durable
before its rename, and both before the awaited call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import queue
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_FOLDER_FDS = 64  # folders kept open for the barrier; --out has three in practice


@dataclass
class _Op:
    """One write function handed to the committer, and what it staged."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    durable: list[str] = field(default_factory=list)  # files whose bytes the barrier syncs
    renames: list[tuple[str, str]] = field(default_factory=list)  # (temp, target), in order
    result: Any = None
    error: BaseException | None = None


_current = threading.local()


def staging() -> _Op | None:
    """The batch entry the calling thread writes for, if any: its writes defer durability."""
    op: _Op | None = getattr(_current, "op", None)
    return op


def stage_write(op: _Op, temp: str, target: str) -> None:
    """A temp file written (not synced): made durable, then renamed over `target`."""
    op.durable.append(temp)
    op.renames.append((temp, target))


def stage_append(op: _Op, path: str) -> None:
    """Bytes appended to `path` (flushed, not synced): made durable by the barrier."""
    op.durable.append(path)


class Committer:
    """The process's group-commit thread for local store writes."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Op] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._barrier = _Barrier()

    def run(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run `fn(*args)` in the next batch; the future resolves once its writes are durable."""
        loop = asyncio.get_running_loop()
        op = _Op(fn, args, loop, loop.create_future())
        self._ensure_thread()
        self._queue.put(op)
        return op.future

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="store-commit", daemon=True
                )
                self._thread.start()

    def _serve(self) -> None:
        while True:
            batch = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    batch.append(self._queue.get_nowait())
            try:
                self.commit(batch)
            except Exception as error:  # the callers get it; the thread goes on serving
                for op in batch:
                    op.error = op.error or error
                    _publish(op, {})  # renames nothing: drops its temp files
                _settle(batch)

    def commit(self, batch: list[_Op]) -> None:
        """Run, sync, rename, then wake the callers: one barrier for the whole batch."""
        for op in batch:
            _current.op = op
            try:
                op.result = op.fn(*op.args)
            except BaseException as error:  # the caller gets it, as from a thread
                op.error = error
            finally:
                _current.op = None
        ready = [op for op in batch if op.error is None]
        failures = self._barrier.sync([path for op in ready for path in op.durable])
        for op in batch:
            _publish(op, failures)
        _settle(batch)


def _publish(op: _Op, failures: dict[str, OSError]) -> None:
    """Rename the op's temp files (its bytes are durable), or drop them when it failed."""
    if op.error is None:
        op.error = next((failures[path] for path in op.durable if path in failures), None)
    for temp, target in op.renames:
        if op.error is None:
            try:
                os.replace(temp, target)
                continue
            except OSError as error:
                op.error = error
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _settle(batch: list[_Op]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[_Op]] = defaultdict(list)
    for op in batch:
        by_loop[op.loop].append(op)
    for loop, ops in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop has no caller left
            loop.call_soon_threadsafe(_resolve, ops)


def _resolve(ops: list[_Op]) -> None:
    for op in ops:
        if op.future.done():  # its caller was cancelled: the write went on regardless
            continue
        if op.error is not None:
            op.future.set_exception(op.error)
        else:
            op.future.set_result(op.result)


class _Barrier:
    """Makes staged files durable: `syncfs` per filesystem, else an fsync per file."""

    def __init__(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
        except (OSError, TypeError):  # no C library to load by name: fsync per file
            libc = None
        self._syncfs: Callable[[int], int] | None = getattr(libc, "syncfs", None)
        self._folders: dict[str, tuple[int, int]] = {}  # folder → (fd, device)

    def sync(self, paths: list[str]) -> dict[str, OSError]:
        """Sync `paths`; returns the paths that could not be made durable, with why."""
        if not paths:
            return {}
        if self._syncfs is None:
            return self._fsync_each(paths)
        failures: dict[str, OSError] = {}
        devices: dict[int, tuple[int, list[str]]] = {}
        for path in paths:
            try:
                fd, device = self._folder(os.path.dirname(path))
            except OSError as error:
                failures[path] = error
                continue
            devices.setdefault(device, (fd, []))[1].append(path)
        for fd, members in devices.values():
            if self._syncfs(fd) != 0:
                number = ctypes.get_errno()
                error = OSError(number, f"syncfs: {os.strerror(number)}")
                failures.update((path, error) for path in members)
        return failures

    def _folder(self, folder: str) -> tuple[int, int]:
        known = self._folders.get(folder)
        if known is not None:
            return known
        if len(self._folders) >= _FOLDER_FDS:
            for fd, _ in self._folders.values():
                os.close(fd)
            self._folders.clear()
        fd = os.open(folder, os.O_RDONLY)
        try:
            entry = (fd, os.fstat(fd).st_dev)
        except OSError:
            os.close(fd)
            raise
        self._folders[folder] = entry
        return entry

    @staticmethod
    def _fsync_each(paths: list[str]) -> dict[str, OSError]:
        failures: dict[str, OSError] = {}
        for path in dict.fromkeys(paths):
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as error:
                failures[path] = error
        return failures


COMMITTER = Committer()
