"""Logs that only grow, record by record, on a local disk or an object store.

On a local disk an append handle, flushed and fsynced per call (inside a
group-commit batch, synced by the batch's barrier); on an object store, which
has no append, the whole object re-PUT per call, so the one object readers open
always holds every record appended so far (ADR 0009).
"""

from __future__ import annotations

import errno
import os
from typing import IO, Protocol

from taguru_ray.store.commit import stage_append, staging


class Appender(Protocol):
    """A log that only grows; every `append` is durable before it returns (inside a
    group-commit batch: before the awaited `offload` returns)."""

    def append(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class Objects(Protocol):
    """What an object-store log needs of its folder: whole-object reads and writes."""

    def read(self, name: str) -> bytes | None: ...

    def write(self, name: str, data: bytes) -> None: ...


class LinkRefused(OSError):
    """A symbolic link where --out holds a record: never written through."""

    def __init__(self, path: str, what: str = "a record") -> None:
        super().__init__(
            f"{path}: a symbolic link where {what} belongs — remove it; taguru-ray never "
            "writes through a link under --out"
        )


class FileAppender:
    """A local append handle: each append is written, flushed and fsynced (inside a
    group-commit batch, synced by the batch's barrier).

    Opened without following a symbolic link (a link planted at a log's name would
    have it truncate or grow whatever file it points at), and a continued log whose
    last line a killed run tore is cut back to its last whole line first, so the
    tear is never buried mid-file under the records appended after it.
    """

    def __init__(self, target: str, *, fresh: bool, make_folder: bool = True) -> None:
        if make_folder:  # False: the caller knows the folder is there (a refused mkdir saved)
            os.makedirs(os.path.dirname(target), exist_ok=True)
        self._target = target
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        flags |= os.O_TRUNC if fresh else os.O_APPEND
        try:
            fd = os.open(target, flags, 0o644)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise LinkRefused(target) from None
            raise
        if not fresh:
            _trim_torn_tail(fd)
        self._handle: IO[bytes] | None = os.fdopen(fd, "ab")

    def append(self, data: bytes) -> None:
        if self._handle is None:
            raise ValueError("append to a closed log")
        self._handle.write(data)
        self._handle.flush()
        batch = staging()
        if batch is not None:  # synced with its batch
            stage_append(batch, self._target)
        else:
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def _trim_torn_tail(fd: int) -> None:
    """Cut a file that does not end in a newline back to its last whole line."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def trimmed(data: bytes) -> bytes:
    """`data` up to its last whole line (an object-store log a killed run tore)."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else b""


class ObjectAppender:
    """An object-store log: the whole object, held in memory, re-PUT per append.

    A continued log starts from the object's current bytes (one GET). A fresh
    one replaces the old object with its first append — or with an empty one
    at close, if nothing was appended — as a local truncation would.
    """

    def __init__(self, out: Objects, name: str, *, fresh: bool) -> None:
        self._out = out
        self._name = name
        self._data = bytearray() if fresh else bytearray(trimmed(out.read(name) or b""))
        self._unwritten = fresh
        self._closed = False

    def append(self, data: bytes) -> None:
        if self._closed:
            raise ValueError("append to a closed log")
        self._data += data
        self._out.write(self._name, bytes(self._data))
        self._unwritten = False

    def close(self) -> None:
        if not self._closed and self._unwritten:
            self._out.write(self._name, b"")
        self._closed = True
