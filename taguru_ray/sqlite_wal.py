"""How taguru-ray opens its SQLite files (the context store, the session index).

Autocommit (transactions are explicit, ``BEGIN IMMEDIATE`` for a writer), WAL so
readers never wait for the writer, and a 30 s busy wait for another process's
write — declared once so the two stores cannot drift apart. What opening a
store's file can raise (its folder is a file, the file is no database, the
folder is read-only) becomes one line naming ``--store`` and the fix
(`opening`), for every verb that opens either store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from taguru_ray.errors import StartupError, TaguruRayError, UsageError
from taguru_ray.text.terminal import printable

BUSY_SECONDS = 30.0


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, 30 s busy wait."""
    conn = sqlite3.connect(
        path, isolation_level=None, timeout=BUSY_SECONDS, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def opening(folder: str | Path, path: Path, kind: str) -> Iterator[None]:
    """Open a store's file (`path`, in `folder`) inside: what it raises becomes one line.

    A folder that is a file, a file that is no database or of another schema is the
    user naming the wrong place (a `UsageError`, exit 2, as `serve` decides); a store
    SQLite cannot write — read-only, locked — is a `StartupError` (exit 1).
    """
    store = f"--store {printable(str(folder))}"
    try:
        yield
    except TaguruRayError:
        raise
    except (FileExistsError, NotADirectoryError):
        raise UsageError(
            f"{store}: a file, not a folder — give the folder that holds (or is to hold) "
            f"{path.name}"
        ) from None
    except (sqlite3.OperationalError, PermissionError) as error:
        failure = unwritable(folder, path, error, "open")
        raise failure or StartupError(f"{store}: cannot open {path.name} ({error})") from None
    except sqlite3.DatabaseError as error:  # "file is not a database", "malformed"
        raise UsageError(
            f"{store}: {path.name} is not a {kind} ({error}) — give another --store, or move "
            "that file away"
        ) from None
    except ValueError as error:  # another schema: the message names the versions
        raise UsageError(f"{store}: {printable(str(error))}") from None
    except OSError as error:
        raise StartupError(
            f"{store}: cannot open {path.name} ({error.strerror or error}) — give another "
            "--store"
        ) from None


# SQLite's reasons a store cannot be opened or written that are the file's or the
# folder's state, not a fault in a statement (`sqlite_errorname` prefixes).
_STATE = ("SQLITE_READONLY", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN",
          "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM")  # fmt: skip


def unwritable(folder: str | Path, path: Path, error: Exception, doing: str) -> StartupError | None:
    """The line for a store SQLite could not open or write (read-only, locked, full),
    or None when `error` is of another kind (a statement's own fault)."""
    name = getattr(error, "sqlite_errorname", "") or ""
    if isinstance(error, sqlite3.Error) and not name.startswith(_STATE):
        return None
    why = getattr(error, "strerror", None) or str(error)
    fix = (
        "another process holds it: wait for it, or give another --store"
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
        else "make the folder and its files writable, or give another --store"
    )
    return StartupError(
        f"--store {printable(str(folder))}: cannot {doing} {path.name} ({why}) — {fix}"
    )
