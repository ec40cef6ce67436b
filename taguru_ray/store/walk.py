"""The one recursive folder walk: every file under a folder, and every folder it could not list.

A walk that skips a folder it cannot list (permissions, a vanished mount, a
refused object-store prefix) loses that folder's files without a word: ``os.walk``
and fsspec's ``walk``/``find`` do exactly that unless told otherwise. Every
recursive reader walks through `walk`, which returns the folders it could not
list beside the files, so the verb says each one and exits 1 (issue 37). A test
(`tests/test_walk.py`) refuses any other recursive walk in the package.

Local folders are listed with ``os.scandir``; a symbolic link to a folder is
followed, and a folder already walked (the same device and inode: a link loop, or
two links to one folder) is not walked again — every file is still found once.
Any other filesystem is listed with its ``ls``.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fsspec.implementations.local import LocalFileSystem


@dataclass(frozen=True)
class Unlisted:
    """A folder the walk could not list: its path relative to the root ("" is the root)."""

    folder: str
    why: str


@dataclass
class Walk:
    """What a walk found: file paths relative to the root, '/'-joined, in name order."""

    files: list[str] = field(default_factory=list)
    unlisted: list[Unlisted] = field(default_factory=list)


def walk(fs: Any, root: str, *, hidden: bool = False) -> Walk:
    """Every file under `root` on `fs`. A name starting with ``.`` (file or folder) is
    skipped unless `hidden`: a hidden folder is never entered, so it is never unlisted."""
    found = Walk()
    local = isinstance(fs, LocalFileSystem)
    seen: set[tuple[int, int]] = set()
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            entries = _local(root, folder, seen) if local else _remote(fs, root, folder)
        except OSError as error:
            found.unlisted.append(Unlisted(folder, _why(error)))
            continue
        for name, is_folder in entries:
            if name.startswith(".") and not hidden:
                continue
            relative = posixpath.join(folder, name) if folder else name
            (pending if is_folder else found.files).append(relative)
    found.files.sort()
    found.unlisted.sort(key=lambda unlisted: unlisted.folder)
    return found


def reach(fs: Any, root: str) -> None:
    """FileNotFoundError when nothing is at `root`. A local path that a folder on its way
    hides (no search permission) raises that PermissionError instead: it is not missing,
    and "no such file" would send its user looking in the wrong place."""
    if isinstance(fs, LocalFileSystem):
        try:
            os.stat(root)  # PermissionError, a link loop: the real reason
        except FileNotFoundError:
            raise FileNotFoundError("no such folder or file") from None
    elif not fs.exists(root):
        raise FileNotFoundError("no such folder or file")


def _local(root: str, folder: str, seen: set[tuple[int, int]]) -> list[tuple[str, bool]]:
    """(name, is a folder) of each entry; [] for a folder already walked."""
    path = os.path.join(root, folder) if folder else root
    with os.scandir(path) as listing:
        identity = os.stat(path)  # after scandir: an unlistable folder is said as one
        key = (identity.st_dev, identity.st_ino)
        if key in seen:
            return []
        seen.add(key)
        return [(entry.name, _is_folder(entry)) for entry in listing]


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a link: a linked folder is walked
    except OSError:  # a link that loops or cannot be followed: a file, its read fails by name
        return False


def _remote(fs: Any, root: str, folder: str) -> list[tuple[str, bool]]:
    path = posixpath.join(root, folder) if folder else root
    try:
        entries = fs.ls(path, detail=True)
    except OSError:
        raise
    except Exception as error:  # object stores raise their own types; say what failed
        raise OSError(str(error)) from error
    listed = []
    for entry in entries:
        name = str(entry["name"]).rstrip("/")
        if name == path.rstrip("/"):  # some stores list a folder as its own first entry
            continue
        listed.append((posixpath.basename(name), entry.get("type") == "directory"))
    return listed


def _why(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


@dataclass(frozen=True)
class Found:
    """One entry of an ordered walk: a file (`regular` False for a FIFO, a device, a
    link that cannot be followed), or a folder it could not list (`unlisted`: why)."""

    path: str  # relative to the root, '/'-joined
    regular: bool = True
    unlisted: str | None = None


def ordered(fs: Any, root: str, *, hidden: bool = False) -> Iterator[Found]:
    """Every file under `root` in path order, as a stream: one folder's listing held at a
    time (and the names of the folders still to enter), never the tree's — a tree of a
    million files is walked in the memory of its largest folder. Children are ordered
    by name with a folder's name read as ending in ``/``, so the files come out in the
    byte order of their whole paths (``a/b.md`` before ``a/b/c.md``). A folder that
    cannot be listed comes out as `Found.unlisted` where its files would have been. A
    folder whose name starts with ``.`` (``.git``, a run's ``.extract-trace``) is not
    entered unless `hidden`; a file's name is the caller's to judge."""
    local = isinstance(fs, LocalFileSystem)
    seen: set[tuple[int, int]] = set()
    # Folders still to enter, each with its sorted children still to go, innermost last.
    stack: list[tuple[str, Iterator[tuple[str, bool, bool]]]] = []
    listed = _children(fs, root, "", seen, local, hidden)
    if isinstance(listed, Found):
        yield listed
        return
    stack.append(("", iter(listed)))
    while stack:
        folder, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        name, is_folder, regular = child
        relative = posixpath.join(folder, name) if folder else name
        if not is_folder:
            yield Found(relative, regular)
            continue
        listed = _children(fs, root, relative, seen, local, hidden)
        if isinstance(listed, Found):
            yield listed
        else:
            stack.append((relative, iter(listed)))


def _children(
    fs: Any, root: str, folder: str, seen: set[tuple[int, int]], local: bool, hidden: bool
) -> list[tuple[str, bool, bool]] | Found:
    """(name, is a folder, is a regular file) of a folder's entries in walk order, or the
    `Found` saying it could not be listed."""
    try:
        if local:
            entries = _local_kinds(root, folder, seen)
        else:
            entries = [(name, is_folder, True) for name, is_folder in _remote(fs, root, folder)]
            # An object store's client keeps every listing it made (s3fs's dircache): a
            # walk of a million objects would hold them all. This one is not asked again.
            fs.invalidate_cache(posixpath.join(root, folder) if folder else root)
    except OSError as error:
        return Found(folder, False, _why(error))
    kept = [entry for entry in entries if hidden or not (entry[1] and entry[0].startswith("."))]
    kept.sort(key=lambda entry: entry[0] + "/" if entry[1] else entry[0])
    return kept


def _local_kinds(
    root: str, folder: str, seen: set[tuple[int, int]]
) -> list[tuple[str, bool, bool]]:
    path = os.path.join(root, folder) if folder else root
    with os.scandir(path) as listing:
        identity = os.stat(path)
        key = (identity.st_dev, identity.st_ino)
        if key in seen:
            return []
        seen.add(key)
        found = []
        for entry in listing:
            is_folder = _is_folder(entry)
            found.append((entry.name, is_folder, is_folder or _is_regular(entry)))
        return found


def _is_regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # follows a link
    except OSError:
        return False
