"""A regular file's bytes, local path or fsspec URL — never a FIFO's or a device's."""

from __future__ import annotations

import os
import stat

import fsspec


class NotRegularFile(OSError):
    """A FIFO, a device, a socket: reading one could block forever or never end."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str, limit: int | None = None) -> bytes:
    """A regular file's bytes (at most `limit`), local path or fsspec URL.

    Anything else — a FIFO, /dev/zero, a socket — is `NotRegularFile` before a byte
    is read: a local one is opened without blocking and judged by its own fstat,
    so a file swapped for a FIFO after a check still cannot hang the run.
    """
    if "://" not in path:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(fd)
            if not stat.S_ISREG(mode.st_mode):
                raise NotRegularFile(f"{kind_of(mode.st_mode)}, not a regular file")
            # Asked for by its size (plus one byte: a file growing as it is read is read
            # as it was, never past the limit), with no file object around the descriptor:
            # building one cost more than reading a small segment.
            size = mode.st_size
            if limit is None:
                return _read_to_end(fd, size + 1)
            want = size + 1 if size < limit else limit
            data = os.read(fd, want)
            if len(data) < min(size, want):  # short of what fstat said: read on, to `want`
                data += _read_to_end(fd, want - len(data), want - len(data))
            return data
        finally:
            os.close(fd)
    fs, root = fsspec.core.url_to_fs(path)
    kind = fs.info(root).get("type")
    if kind != "file":
        raise NotRegularFile(f"{kind or 'not a file'}, not a regular file")
    with fs.open(root, "rb") as handle:
        return bytes(handle.read() if limit is None else handle.read(limit))


def _read_to_end(fd: int, first: int, limit: int | None = None) -> bytes:
    """The rest of `fd` (at most `limit` bytes), the first read asking for `first`."""
    parts: list[bytes] = []
    held = 0
    ask = first
    while limit is None or held < limit:
        more = os.read(fd, ask if limit is None else min(ask, limit - held))
        if not more:
            break
        parts.append(more)
        held += len(more)
        ask = 1 << 20
    return b"".join(parts)
