"""The segments a run reads: positional paths expanded, local or fsspec URLs.

A file argument is taken as it is; a folder contributes its regular ``*.md``
and ``*.txt`` files (case-sensitive, not recursive), sorted by name. The
*source* of a segment is the path string as seen — the folder as typed joined
with the file name, never canonicalised — because it names the segment in the
header, the manifest and every record.

The sources are held as a `SourceList`: a folder's names front-coded, a path
made when asked for (ADR 0042). A million paths as strings cost most of two
hundred megabytes of driver memory.
"""

from __future__ import annotations

import os
import posixpath
import stat
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, overload

import fsspec
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.errors import UsageError
from taguru_ray.store.front_coded import FrontCoded
from taguru_ray.text.terminal import printable

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
        try:
            mode = os.fstat(fd)
            if not stat.S_ISREG(mode.st_mode):
                raise NotRegularFile(f"{_kind(mode.st_mode)}, not a regular file")
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
                _check_utf8(_join(path, entry.name))
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


def _check_utf8(path: str) -> None:
    """A name whose bytes are not UTF-8 cannot be a source: the header, the output name
    and every record spell the source as UTF-8 text. Refused by name, as a FIFO is."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{printable(path)}: the name is not UTF-8 — rename it (a source is named in "
            "UTF-8 text)"
        ) from None


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


class SourceList(Sequence[str]):
    """The sources of a run in order, a part per argument: a folder's part is the folder
    as typed and its names, sorted and front-coded (`store/front_coded.py`: about 7 bytes
    a name where a path string costs over a hundred); a file's part is its path alone. A
    path is made when asked for. Equal to a list of the same paths."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # the index each part starts at
        self._parts: list[tuple[str, FrontCoded | None]] = []  # (prefix, names)
        self._count = 0

    def add_file(self, path: str) -> None:
        self._add(path, None, 1)

    def add_folder(self, folder: str, names: list[str]) -> None:
        """`names` (sorted, as listed) under `folder`, each joined as `_join` joins it."""
        coded = FrontCoded()
        for name in names:
            coded.append(name.encode("utf-8", "surrogatepass"))
        self._add(folder if folder.endswith("/") else folder + "/", coded, len(names))

    def _add(self, prefix: str, names: FrontCoded | None, count: int) -> None:
        self._starts.append(self._count)
        self._parts.append((prefix, names))
        self._count += count

    @property
    def parts(self) -> int:
        """How many arguments the paths came from (one: no path can repeat)."""
        return len(self._parts)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("source index out of range")
        part = 0 if len(self._starts) == 1 else bisect_right(self._starts, index) - 1
        prefix, names = self._parts[part]
        if names is None:
            return prefix
        return prefix + names[index - self._starts[part]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        for prefix, names in self._parts:
            if names is None:
                yield prefix
                continue
            for name in names:
                yield prefix + name.decode("utf-8", "surrogatepass")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceList | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"SourceList({list(self)!r})"


def expand(paths: tuple[str, ...] | list[str]) -> SourceList:
    """Every segment source, in argument order, folders expanded in name order.

    A path that is no folder and no regular file (a FIFO, a device, a link that
    loops or dangles), or a folder that cannot be listed, is a usage error naming
    it: nothing is read and nothing written. A path a folder on its way hides (no
    search permission) is taken as a file: its read fails by name, like any
    unreadable segment's, and the rest are written.
    """
    sources = SourceList()
    for path in paths:
        try:
            _expand_one(path, sources)
        except UsageError:
            raise
        except OSError as error:
            why = error.strerror or str(error)
            raise UsageError(
                f"{path}: cannot be read ({why}) — name readable files or folders"
            ) from None
    return sources


def _expand_one(path: str, sources: SourceList) -> None:
    _check_utf8(path)
    if "://" not in path:
        try:
            os.stat(path)
        except PermissionError:  # a folder on its way hides it: not missing, unreadable —
            sources.add_file(path)  # its read fails by name, and the rest are written
            return
        except OSError as error:
            if os.path.islink(path):  # ELOOP, or a link to nothing
                why = error.strerror or str(error)
                raise UsageError(
                    f"{path}: a symbolic link that cannot be followed ({why})"
                ) from None
            if isinstance(error, FileNotFoundError):
                raise UsageError(f"{path}: no such file or folder") from None
            raise
    fs, root = fsspec.core.url_to_fs(path)
    if fs.isdir(root):
        names = _file_names(fs, root, path)
        if not names:
            raise UsageError(
                f"{path}: the folder holds no .md or .txt files — name files or another folder"
            )
        names.sort()
        sources.add_folder(path, names)
        return
    if not fs.exists(root):
        raise UsageError(f"{path}: no such file or folder")
    kind = fs.info(root).get("type")
    if kind != "file":
        what = _kind(os.stat(root).st_mode) if "://" not in path else str(kind)
        raise UsageError(f"{path}: {what}, not a regular file — name .md/.txt files or a folder")
    sources.add_file(path)


def read_source(source: str) -> bytes:
    """A segment's bytes, at most READ_LIMIT of them; OSError when unreadable (a FIFO or
    a device included: `NotRegularFile`)."""
    return read_regular(source, READ_LIMIT)


def iter_sources(paths: tuple[str, ...] | list[str]) -> Iterator[str]:
    yield from expand(paths)
