"""How taguru-ray opens its SQLite files (the context store, the session index).

Autocommit (transactions are explicit, ``BEGIN IMMEDIATE`` for a writer), WAL so
readers never wait for the writer, and a 30 s busy wait for another process's
write — declared once so the two stores cannot drift apart.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

BUSY_SECONDS = 30.0


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, 30 s busy wait."""
    conn = sqlite3.connect(
        path, isolation_level=None, timeout=BUSY_SECONDS, check_same_thread=False
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
    return conn
