"""One run per --out: the ``.extract.lock`` — an flock on a local disk, a lease on object stores.

On a local disk the lock is an ``flock`` on the lock file, held for the whole
run by the driver process: the kernel drops it the moment that process dies,
however it dies, so a killed driver's lock never blocks the rerun. The file
keeps the holder's pid and host only to name it in the refusal.

An object store has no flock and no process to watch, so there the lock is
the lease of `lease.py`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
from collections.abc import Callable
from typing import IO

from taguru_ray.contract.names import LOCK
from taguru_ray.errors import StartupError
from taguru_ray.store.lease import LeaseLock, refusal
from taguru_ray.store.outdir import OutDir


class OutLock:
    """Two flocks, both held for the run and both dropped by the kernel with the process:
    one on the --out folder itself, one on ``.extract.lock`` (which older builds lock).

    The folder's lock is what removing or replacing the lock file cannot get round: a
    second run that finds a fresh ``.extract.lock`` still meets the folder held (by any
    path to it: the lock is on its inode). The file is opened without following a
    symbolic link — a link planted there is refused, never truncated through — and its
    identity is checked after locking, so a file swapped in meanwhile is not taken.
    """

    def __init__(self, out: OutDir) -> None:
        self._out = out
        self._handle: IO[str] | None = None
        self._folder: int | None = None

    def acquire(self) -> None:
        path = self._out.local_path(LOCK)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(folder)
            raise StartupError(refusal(self._out, _holder_of(path))) from None
        try:
            handle = _open_lock_file(path)
        except BaseException:
            os.close(folder)
            raise
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe(handle.read())
            handle.close()
            os.close(folder)
            raise StartupError(refusal(self._out, holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        handle.flush()
        self._handle, self._folder = handle, folder

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
        if self._folder is not None:
            fcntl.flock(self._folder, fcntl.LOCK_UN)
            os.close(self._folder)
            self._folder = None

    def __enter__(self) -> OutLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open_lock_file(path: str) -> IO[str]:
    """``.extract.lock`` opened for update, created if missing, never through a symbolic
    link; the file opened must still be the one at the path (not swapped meanwhile)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise StartupError(
                f"{path}: a symbolic link where the lock file belongs — remove it; taguru-ray "
                "never writes through a link under --out"
            ) from None
        raise StartupError(f"{path}: cannot open the lock file ({error.strerror})") from None
    opened, there = os.fstat(fd), os.lstat(path)
    if (opened.st_dev, opened.st_ino) != (there.st_dev, there.st_ino) or not stat.S_ISREG(
        opened.st_mode
    ):
        os.close(fd)
        raise StartupError(f"{path}: the lock file changed while it was opened — run again")
    return os.fdopen(fd, "r+", encoding="utf-8")


def _holder_of(path: str) -> str:
    """Who holds the folder, as its lock file says (read without following a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "holder unknown"
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        return _describe(handle.read(4096))


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"


def lock_for(out: OutDir, say: Callable[[str], None], lease_seconds: float) -> OutLock | LeaseLock:
    """The lock that fits --out's backend (`say` prints a line to stderr; an object
    store's lease lasts `lease_seconds`)."""
    if out.local:
        return OutLock(out)
    return LeaseLock(out, say, seconds=lease_seconds)
