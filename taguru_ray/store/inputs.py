"""The segments a run reads: positional paths expanded, local or fsspec URLs.

A file argument is taken as it is; a folder contributes its regular ``*.md``
and ``*.txt`` files (case-sensitive, not recursive), sorted by name. The
*source* of a segment is the path string as seen — the folder as typed joined
with the file name, never canonicalised — because it names the segment in the
header, the manifest and every record.
"""

from __future__ import annotations

import os
import posixpath
import stat
import sys
from collections.abc import Iterator
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.errors import UsageError

SEGMENT_SUFFIXES = (".md", ".txt")
# Read at most this much: enough to tell an over-cap segment apart without
# reading all of it (a leading BOM does not count against the cap).
READ_LIMIT = MAX_PASSAGE_BYTES + 4


class NotRegularFile(OSError):
    """A FIFO, a device, a socket: reading one could block forever or never end."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str, limit: int | None = None) -> bytes:
    """A regular file's bytes (at most `limit`), local path or fsspec URL.

    Anything else — a FIFO, /dev/zero, a socket — is `NotRegularFile` before a byte
    is read: a local one is opened without blocking and judged by its own fstat,
    so a file swapped for a FIFO after a check still cannot hang the run.
    """
    if "://" not in path:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as local:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise NotRegularFile(f"{_kind(mode)}, not a regular file")
            # read(limit) allocates the whole limit first: three times the cost of
            # reading a small file. Ask for its size (plus one byte: a file growing as
            # it is read is read as it was, never past the limit).
            size = os.fstat(fd).st_size
            if limit is None:
                return local.read()
            return local.read(limit if size >= limit else size + 1)
    fs, root = fsspec.core.url_to_fs(path)
    kind = fs.info(root).get("type")
    if kind != "file":
        raise NotRegularFile(f"{kind or 'not a file'}, not a regular file")
    with fs.open(root, "rb") as handle:
        return bytes(handle.read() if limit is None else handle.read(limit))


def _join(folder: str, name: str) -> str:
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


def _file_names(fs: Any, root: str, path: str) -> list[str]:
    """The segment files directly in a folder; a local one is read with one scandir
    (fsspec's local listing stats every entry, a second at 100 000 files). An entry
    named like a segment that is no regular file (a FIFO, a device, a link that loops
    or dangles) is a usage error naming it: left out, its segment would go missing."""
    if isinstance(fs, LocalFileSystem):
        names = []
        with os.scandir(root) as entries:
            for entry in entries:
                if not entry.name.endswith(SEGMENT_SUFFIXES):
                    continue
                if not _is_file(entry):
                    raise UsageError(
                        f"{_join(path, entry.name)}: {_entry_kind(entry)}, not a regular file "
                        "— remove it or name the files to read"
                    )
                names.append(entry.name)
        return names
    return [
        name
        for entry in fs.ls(root, detail=True)
        if entry.get("type") == "file"
        and (name := posixpath.basename(str(entry["name"]).rstrip("/"))).endswith(SEGMENT_SUFFIXES)
    ]


def _entry_kind(entry: os.DirEntry[str]) -> str:
    try:
        return _kind(entry.stat().st_mode)
    except OSError as error:  # a link that loops or points at nothing
        return f"a symbolic link that cannot be followed ({error.strerror or error})"


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:  # a link loop, on some platforms
        return False


def expand(paths: tuple[str, ...] | list[str]) -> list[str]:
    """Every segment source, in argument order, folders expanded in name order.

    A path that is no folder and no regular file (a FIFO, a device, a link that
    loops or dangles), or a folder that cannot be listed, is a usage error naming
    it: nothing is read and nothing written.
    """
    sources: list[str] = []
    for path in paths:
        try:
            sources.extend(_expand_one(path))
        except UsageError:
            raise
        except OSError as error:
            why = error.strerror or str(error)
            raise UsageError(
                f"{path}: cannot be read ({why}) — name readable files or folders"
            ) from None
    return sources


def _expand_one(path: str) -> list[str]:
    if "://" not in path and os.path.islink(path) and not os.path.exists(path):
        try:
            os.stat(path)
        except OSError as error:  # ELOOP, or a link to nothing
            why = error.strerror or str(error)
            raise UsageError(f"{path}: a symbolic link that cannot be followed ({why})") from None
    fs, root = fsspec.core.url_to_fs(path)
    if fs.isdir(root):
        # Interned: the manifest interns its keys, so a big corpus's paths are
        # held once, not once per structure that names them.
        found = [sys.intern(_join(path, name)) for name in sorted(_file_names(fs, root, path))]
        if not found:
            raise UsageError(
                f"{path}: the folder holds no .md or .txt files — name files or another folder"
            )
        return found
    if not fs.exists(root):
        raise UsageError(f"{path}: no such file or folder")
    kind = fs.info(root).get("type")
    if kind != "file":
        what = _kind(os.stat(root).st_mode) if "://" not in path else str(kind)
        raise UsageError(f"{path}: {what}, not a regular file — name .md/.txt files or a folder")
    return [path]


def read_source(source: str) -> bytes:
    """A segment's bytes, at most READ_LIMIT of them; OSError when unreadable (a FIFO or
    a device included: `NotRegularFile`)."""
    return read_regular(source, READ_LIMIT)


def iter_sources(paths: tuple[str, ...] | list[str]) -> Iterator[str]:
    yield from expand(paths)
