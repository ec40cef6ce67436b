"""The session store's SQLite file: its tables and how a connection is opened.

One file per store folder, ``<store>/taguru-sessions.sqlite3``, in WAL mode so a
`sessions search` never waits for an import. A session is a row keyed (agent,
session_id) with a fingerprint of its conversion, so a re-import can tell
"unchanged" from "replaced" without reading its events, and a key of what its
conversion read, so an import can skip converting a file it stored before. A turn
is a row keyed (session, seq) holding the unified event field by field
(SESSIONS.md §3), so `show` and extraction read it back exactly.

The full-text index is FTS5 with ``tokenize='trigram'`` over the events' text,
as an external-content table (the text is stored once, in ``events``): every
run of three characters is a term, so Japanese and Chinese are searchable by
substring with no word segmentation and no dictionary (SESSIONS.md §9; SQLite
3.34 and later). Its rowid is ``events.id``; a replaced session deletes its own
rows from the index with FTS5's ``'delete'`` command before its events go.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from taguru_ray.errors import TaguruRayError

FILE_NAME = "taguru-sessions.sqlite3"
SCHEMA_VERSION = "1"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    file TEXT NOT NULL,
    digest TEXT NOT NULL,      -- sha256 of the file's bytes
    fingerprint TEXT NOT NULL, -- sha256 of the conversion: the same again is a no-op
    inputs TEXT,               -- sha256 of what the conversion read (bytes, flags, rules)
    started_ms INTEGER,
    cwd TEXT,
    branch TEXT,
    model TEXT,
    masked TEXT NOT NULL,      -- JSON array of "line N: rule" (--mask)
    allowlist TEXT,            -- the converter's allow-list, e.g. "codex allow-list v1"
    turns INTEGER NOT NULL,
    facts INTEGER,             -- NULL until extraction has written this session's facts
    UNIQUE (agent, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_by_inputs ON sessions (inputs);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,    -- the full-text index's rowid
    session INTEGER NOT NULL,  -- sessions.id
    seq INTEGER NOT NULL,
    speaker_id TEXT NOT NULL,
    ts_ms INTEGER,
    ts_exact INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    line INTEGER NOT NULL,
    uuid TEXT,
    parent TEXT,
    block INTEGER,
    tool_name TEXT,            -- NULL: no tool
    tool_call_id TEXT,
    tool_is_error INTEGER,
    branch TEXT,
    sidechain INTEGER NOT NULL,
    UNIQUE (session, seq)
);
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(
    text, content='events', content_rowid='id', tokenize='trigram'
);
"""


class SchemaError(TaguruRayError):
    """The file is of another schema, or this SQLite cannot build the index."""


def store_file(folder: str | Path) -> Path:
    return Path(folder) / FILE_NAME


def create(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables if missing; refuse a file of another schema."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _TABLES.split(";"):
            if statement.strip():
                conn.execute(statement)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise SchemaError(
                f"{path}: session store schema {row[0]}, this build reads {SCHEMA_VERSION} "
                "— import the sessions into a new --store"
            )
    except sqlite3.OperationalError as error:
        conn.execute("ROLLBACK")
        raise SchemaError(
            f"{path}: SQLite {sqlite3.sqlite_version} cannot build the full-text index "
            f"({error}) — FTS5 with the trigram tokenizer needs SQLite 3.34 or later"
        ) from None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
