"""The --out folder on fsspec: names inside it, and writes others can trust.

Every object another reader may open is written whole and atomically: on a
local disk a temp file in the same folder, fsynced, then renamed over the
target; on an object store one PUT of the whole object. A reader therefore
sees the old bytes or the new ones, never a torn file.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem

MANIFEST = ".extract-manifest.json"
LOCK = ".extract.lock"
CHECKPOINTS = ".extract-checkpoints"
TRACE = ".extract-trace"


class OutDir:
    """One --out location, addressed by names relative to it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.local = isinstance(self.fs, LocalFileSystem)

    def path(self, name: str) -> str:
        return posixpath.join(self.root, name) if name else self.root

    def local_path(self, name: str) -> str:
        """The OS path of a name; only meaningful when `local`."""
        return os.path.join(self.root, *name.split("/"))

    def ensure(self) -> None:
        """Create --out and its record folders (no-op where folders are implicit)."""
        for name in ("", CHECKPOINTS, TRACE):
            self.fs.makedirs(self.path(name), exist_ok=True)

    def read(self, name: str) -> bytes | None:
        try:
            return self.fs.cat_file(self.path(name))
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return bool(self.fs.exists(self.path(name)))

    def write(self, name: str, data: bytes) -> None:
        """Replace `name` atomically with `data`."""
        if not self.local:
            self.fs.pipe_file(self.path(name), data)
            return
        target = self.local_path(name)
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        temp = os.path.join(folder, f".{os.path.basename(target)}.tmp-{secrets.token_hex(4)}")
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.path(name))

    def names(self, folder: str = "") -> set[str]:
        """File names directly inside `folder` (one listing, not one probe per file)."""
        try:
            entries = self.fs.ls(self.path(folder), detail=False)
        except FileNotFoundError:
            return set()
        return {posixpath.basename(str(entry).rstrip("/")) for entry in entries}

    def open_append(self, name: str) -> IO[bytes]:
        """An append handle for a log written line by line (local disks)."""
        target = self.local_path(name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        return open(target, "ab")

    def open_truncate(self, name: str) -> IO[bytes]:
        target = self.local_path(name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        return open(target, "wb")
