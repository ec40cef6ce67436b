"""The --out folder on fsspec: names inside it, and writes others can trust.

Every object another reader may open is written whole and atomically: on a
local disk a temp file in the same folder, fsynced, then renamed over the
target; on an object store one PUT of the whole object (``pipe_file``). A
reader therefore sees the old bytes or the new ones, never a torn file.

Logs written record by record go through an `Appender` (`store/appenders.py`,
ADR 0009).

Writes run through `offload` from async code join a group commit on a local
disk (`store/commit.py`, ADR 0018): the fsync becomes one barrier per batch,
still before the rename and before the caller resumes.

Listings and existence checks bypass fsspec's directory cache: other
processes (the workers) write into --out behind this process's back.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import io
import operator
import os
import posixpath
import secrets
from array import array
from collections.abc import Awaitable, Callable, Container, Iterable
from datetime import datetime
from typing import IO, Any, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.contract.names import CHECKPOINTS, MANIFEST, MANIFEST_JOURNAL, RETIRED, TRACE
from taguru_ray.store.appenders import Appender, FileAppender, LinkRefused, ObjectAppender
from taguru_ray.store.commit import COMMITTER, stage_write, staging

T = TypeVar("T")


# What fsspec's batched reads and listings take as a glob pattern in a path.
_GLOB = frozenset("*?[")


def _bytes_or_error(value: Any) -> bytes | OSError:
    if isinstance(value, OSError):
        return value
    if isinstance(value, BaseException):  # an object store's own error type
        return OSError(str(value) or type(value).__name__)
    return bytes(value)


class OutDir:
    """One --out location, addressed by names relative to it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.local = isinstance(self.fs, LocalFileSystem)
        # Called before every write or delete: raises `Fenced` once this run's lease on
        # an object store is lost or about to lapse (None: a local folder's flock, which
        # nobody can take over while this process lives).
        self.fence: Callable[[], None] | None = None
        # Local folders this OutDir made or found: a write checks its folder once, not
        # with a stat and a refused mkdir per file (a tenth of a worker's store time).
        self._folders: set[str] = set()

    def _fenced(self) -> None:
        if self.fence is not None:
            self.fence()

    def path(self, name: str) -> str:
        return posixpath.join(self.root, name) if name else self.root

    def local_path(self, name: str) -> str:
        """The OS path of a name; only meaningful when `local`."""
        return os.path.join(self.root, *name.split("/"))

    def ensure(self) -> None:
        """Make --out ready for writes; OSError (FileNotFoundError) when it cannot be.

        A local disk gets the folder and its record folders. An object store has
        no folders — a prefix exists once an object is under it — so nothing is
        created there (s3fs's ``makedirs`` would even create a missing bucket);
        only the bucket itself must exist, checked with one request.
        """
        if self.local:
            for name in (CHECKPOINTS, TRACE, MANIFEST_JOURNAL, MANIFEST, RETIRED):
                if os.path.islink(self.local_path(name)):
                    raise LinkRefused(self.local_path(name), "a folder or file of its own")
            for name in ("", CHECKPOINTS, TRACE):
                self.fs.makedirs(self.path(name), exist_ok=True)
            return
        bucket = self.root.split("/", 1)[0]
        if bucket and not self.fs.exists(bucket):
            raise FileNotFoundError(f"the bucket {bucket!r} does not exist")

    def read(self, name: str) -> bytes | None:
        """The bytes of `name`, or None when there is no such file."""
        try:
            if self.local:  # fsspec's path handling costs more than a small read
                with open(self.local_path(name), "rb") as handle:
                    return handle.read()
            return bytes(self.fs.cat_file(self.path(name)))
        except FileNotFoundError:
            return None

    def open_text(self, name: str) -> IO[str] | None:
        """`name` opened for reading as UTF-8 text, or None when there is no such file."""
        try:
            if self.local:
                return open(self.local_path(name), encoding="utf-8")
            return io.TextIOWrapper(self.fs.open(self.path(name), "rb"), encoding="utf-8")
        except FileNotFoundError:
            return None

    def open_bytes(self, name: str) -> IO[bytes] | None:
        """`name` opened for reading bytes, or None when there is no such file."""
        try:
            if self.local:
                return open(self.local_path(name), "rb")
            return self.fs.open(self.path(name), "rb")  # type: ignore[no-any-return]
        except FileNotFoundError:
            return None

    def read_many(self, names: list[str]) -> dict[str, bytes]:
        """The files among `names` that exist, fetched concurrently where the backend can.
        One that cannot be read is left out like a missing one: for a reader that must
        say which, `read_each`."""
        return {name: data for name, data in self.read_each(names).items()
                if isinstance(data, bytes)}  # fmt: skip

    def read_each(self, names: list[str]) -> dict[str, bytes | OSError]:
        """Every one of `names`: its bytes, or the OSError that kept it unread (a missing
        one's FileNotFoundError included). A name is taken as written: fsspec's batched
        `cat` expands glob patterns, so ``[0].jsonl`` or ``a*.jsonl`` is read on its own."""
        literal = [name for name in names if not _GLOB.intersection(name)]
        by_path = {self.path(name): name for name in literal}
        found: dict[str, Any] = self.fs.cat(list(by_path), on_error="return") if by_path else {}
        read: dict[str, bytes | OSError] = {}
        for path, name in by_path.items():
            read[name] = _bytes_or_error(found.get(path, FileNotFoundError(2, "no such file")))
        for name in names:
            if name not in read:
                try:
                    read[name] = bytes(self.fs.cat_file(self.path(name)))
                except OSError as error:
                    read[name] = error
        return read

    def exists(self, name: str) -> bool:
        path = self.path(name)
        self.fs.invalidate_cache(path)
        return bool(self.fs.exists(path))

    def modified(self, name: str) -> float | None:
        """When `name` was last written (epoch seconds, the store's clock), if known."""
        path = self.path(name)
        self.fs.invalidate_cache(path)
        try:
            return _modified(self.fs.info(path))
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        """Replace `name` atomically with `data`."""
        self.write_chunks(name, (data,))

    def write_chunks(self, name: str, chunks: Iterable[bytes]) -> None:
        """Replace `name` atomically with the bytes of `chunks`, in order. A local file is
        written as the chunks come, never held whole; an object store takes one PUT."""
        self._fenced()
        if not self.local:
            self.fs.pipe_file(self.path(name), b"".join(chunks))
            return
        target = self.local_path(name)
        folder = os.path.dirname(target)
        temp = os.path.join(folder, f".{os.path.basename(target)}.tmp-{secrets.token_hex(4)}")
        batch = staging()
        try:
            with os.fdopen(self._create(temp), "wb") as handle:
                for data in chunks:
                    handle.write(data)
                handle.flush()
                if batch is None:
                    os.fsync(handle.fileno())
            if batch is not None:  # synced with its batch, then renamed
                stage_write(batch, temp, target)
                return
            os.replace(temp, target)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise

    def _create(self, temp: str) -> int:
        """A new file of our own, never a path someone planted: the rename after it then
        replaces whatever sits at the target, a symbolic link included, unfollowed. Its
        folder is made on first use, and again if it went away since."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return self._in_folder(temp, lambda: os.open(temp, flags, 0o644))

    def _in_folder(self, path: str, create: Callable[[], T]) -> T:
        """`create()`, which makes the local file `path`: its folder checked once per
        OutDir (not with a stat and a refused mkdir per file), and made again if it went
        away since."""
        folder = os.path.dirname(path)
        if folder in self._folders:
            try:
                return create()
            except FileNotFoundError:
                self._folders.discard(folder)
        os.makedirs(folder, exist_ok=True)
        self._folders.add(folder)
        return create()

    def offload(self, fn: Callable[..., T], *args: Any) -> Awaitable[T]:
        """Run `fn(*args)`, a function that writes here, off the event loop.

        Local writes join the process's group commit (one durability barrier
        for every write queued meanwhile, ADR 0018); an object store's requests
        go to a thread each, as they wait on the network, not the disk.
        """
        if self.local:
            return COMMITTER.run(fn, *args)
        return asyncio.to_thread(fn, *args)

    def move(self, name: str, to: str) -> bool:
        """Move `name` to `to`, replacing what is there; False when there is no `name`.

        On a local disk one rename (atomic). On an object store, which has no rename,
        a server-side copy and then the delete: a kill between the two leaves both,
        and the same move done again replaces the copy with the same bytes.
        """
        self._fenced()
        if self.local:
            source, target = self.local_path(name), self.local_path(to)
            if not os.path.lexists(source):
                return False
            os.makedirs(os.path.dirname(target), exist_ok=True)
            try:
                os.replace(source, target)
            except FileNotFoundError:  # gone since the check: someone else moved it
                return False
            return True
        path = self.path(name)
        self.fs.invalidate_cache(path)
        try:
            self.fs.copy(path, self.path(to))
        except FileNotFoundError:
            return False
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)
        return True

    def delete(self, name: str) -> None:
        self._fenced()
        with contextlib.suppress(FileNotFoundError):
            if self.local:
                os.remove(self.local_path(name))
            else:
                self.fs.rm_file(self.path(name))

    def delete_many(self, names: list[str]) -> None:
        """Delete every existing file among `names` (batched requests on object stores)."""
        if not names:
            return
        self._fenced()
        if self.local:
            for name in names:
                self.delete(name)
            return
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm([self.path(name) for name in names])

    def remove_empty_folder(self, folder: str) -> None:
        """Drop a local folder left empty; object stores have no folders to drop."""
        if self.local:
            self._folders.discard(self.local_path(folder))
            with contextlib.suppress(OSError):
                os.rmdir(self.local_path(folder))

    def listing(self, folder: str = "") -> dict[str, float | None]:
        """Names directly inside `folder` → when each was last written, from one listing."""
        path = self.path(folder)
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return {}
        return {
            posixpath.basename(str(entry["name"]).rstrip("/")): _modified(entry)
            for entry in entries
        }

    def names(self, folder: str = "") -> set[str]:
        """File names directly inside `folder` (one listing, not one probe per file)."""
        if self.local:  # names only: no stat per entry, which fsspec's listing pays
            try:
                with os.scandir(self.local_path(folder) if folder else self.root) as entries:
                    return {entry.name for entry in entries}
            except FileNotFoundError:
                return set()
        return set(self.listing(folder))

    def presence(self) -> Container[str]:
        """Which top-level names exist, for many `in` checks, from one listing.

        Held as the names' 64-bit hashes, not the names: a million outputs listed
        as strings cost well over a hundred MB of driver memory. A name that does
        not exist passes only if its hash equals an existing name's, about one
        chance in 10^13 at a million files; a stat per name instead costs more
        than the whole listing.
        """
        if self.local:  # hashed as listed: the names themselves are never all held
            try:
                with os.scandir(self.root) as entries:
                    return HashedNames(map(_NAME, entries))
            except FileNotFoundError:
                return HashedNames(())
        return HashedNames(self.names())

    def appender(self, name: str, *, fresh: bool) -> Appender:
        """A log at `name`: emptied when `fresh`, else continued after its current bytes."""
        if not self.local:
            return ObjectAppender(self, name, fresh=fresh)
        target = self.local_path(name)
        return self._in_folder(target, lambda: FileAppender(target, fresh=fresh, make_folder=False))


class HashedNames:
    """Names held as their sorted 64-bit hashes: 8 bytes a name, looked up by bisection.

    Sorted a bucket at a time (by the hash's top byte), so no list of a million
    integers is ever built: that list alone was 40 MB at the driver's peak.
    """

    def __init__(self, names: Iterable[str]) -> None:
        buckets = [array("Q") for _ in range(256)]
        for name in names:
            key = hash(name) & _MASK64
            buckets[key >> 56].append(key)
        self._hashes = array("Q")
        for at, bucket in enumerate(buckets):
            self._hashes.extend(sorted(bucket))
            buckets[at] = array("Q")  # the bucket's memory goes as the sorted copy grows

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = hash(name) & _MASK64
        at = bisect.bisect_left(self._hashes, key)
        return at < len(self._hashes) and self._hashes[at] == key


_MASK64 = (1 << 64) - 1
_NAME = operator.attrgetter("name")


class Fenced(OSError):
    """This run's lease on --out was lost (or is about to lapse unrenewed): another run
    may hold the folder now, so this one writes nothing more there."""

    def __init__(self, url: str) -> None:
        super().__init__(
            f"the lease on {url} was lost or lapsed unrenewed: this run writes nothing more "
            "there (the run that takes it over finishes the work; checkpoints are kept)"
        )


def _modified(info: dict[str, Any]) -> float | None:
    """A listing entry's modification time across backends (local, s3, gcs, memory)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return None
