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


def _join(folder: str, name: str) -> str:
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


def _file_names(fs: Any, root: str) -> list[str]:
    """The regular files directly in a folder; a local one is read with one scandir
    (fsspec's local listing stats every entry, a second at 100 000 files)."""
    if isinstance(fs, LocalFileSystem):
        with os.scandir(root) as entries:
            return [entry.name for entry in entries if entry.is_file()]
    return [
        posixpath.basename(str(entry["name"]).rstrip("/"))
        for entry in fs.ls(root, detail=True)
        if entry.get("type") == "file"
    ]


def expand(paths: tuple[str, ...] | list[str]) -> list[str]:
    """Every segment source, in argument order, folders expanded in name order."""
    sources: list[str] = []
    for path in paths:
        fs, root = fsspec.core.url_to_fs(path)
        if fs.isdir(root):
            names = sorted(_file_names(fs, root))
            # Interned: the manifest interns its keys, so a big corpus's paths are
            # held once, not once per structure that names them.
            found = [
                sys.intern(_join(path, name)) for name in names if name.endswith(SEGMENT_SUFFIXES)
            ]
            if not found:
                raise UsageError(
                    f"{path}: the folder holds no .md or .txt files — name files or another folder"
                )
            sources.extend(found)
        elif fs.exists(root):
            sources.append(path)
        else:
            raise UsageError(f"{path}: no such file or folder")
    return sources


def read_source(source: str) -> bytes:
    """A segment's bytes, at most READ_LIMIT of them; OSError when unreadable."""
    if "://" not in source:  # a plain local path: skip fsspec's per-file overhead
        with open(source, "rb") as local:
            # read(READ_LIMIT) allocates the whole limit first: three times the cost of
            # reading a small segment. Ask for its size (plus one byte: a file growing
            # as it is read is read as it was, never past the limit).
            size = os.fstat(local.fileno()).st_size
            return local.read(READ_LIMIT if size >= READ_LIMIT else size + 1)
    with fsspec.open(source, "rb") as handle:
        return handle.read(READ_LIMIT)


def iter_sources(paths: tuple[str, ...] | list[str]) -> Iterator[str]:
    yield from expand(paths)
