"""The embedded store's SQLite file: its tables and how a connection is opened.

One file per store folder, ``<store>/taguru-context.sqlite3``, in WAL mode so
readers never wait for the one writer (ADR 0032). Names, sources and
paragraphs are rows; a term's postings are packed per window of paragraph ids
(`postings`, ADR 0066), one row per (context, term, window) with the bounds a
search skips windows by; a retraction removes its own paragraphs' postings,
their terms recomputed from the stored text. A schema-1 store (a row per
posting) is converted when it is opened. Vectors
(ADR 0033) are rows too: one per paragraph text or question, one per gloss,
with the model and width they were made by per context; an import marks what
it changed as pending, and the embedding refresh turns pending into vectors.
The vector tables are additive, so a store written before them opens as is.
"""

from __future__ import annotations

from pathlib import Path

from taguru_ray.context import postings
from taguru_ray.sqlite_wal import connect

FILE_NAME = "taguru-context.sqlite3"
SCHEMA_VERSION = "2"  # 2: postings packed per term and window (ADR 0066)

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS contexts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    context_id TEXT,
    description TEXT NOT NULL DEFAULT '',
    pinned INTEGER NOT NULL DEFAULT 0,
    dice_floor REAL,
    semantic_floor REAL,
    rev_graph INTEGER NOT NULL DEFAULT 0,
    rev_passages INTEGER NOT NULL DEFAULT 0,
    rev_config INTEGER NOT NULL DEFAULT 0,
    paragraphs INTEGER NOT NULL DEFAULT 0,        -- live paragraphs: BM25's N
    paragraph_length INTEGER NOT NULL DEFAULT 0,  -- their summed term counts
    writes INTEGER NOT NULL DEFAULT 0,
    last_write_epoch INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS names (
    id INTEGER PRIMARY KEY,
    context INTEGER NOT NULL,
    kind TEXT NOT NULL,  -- concept | label
    name TEXT NOT NULL,
    UNIQUE (context, kind, name)
);
CREATE TABLE IF NOT EXISTS aliases (
    context INTEGER NOT NULL,
    kind TEXT NOT NULL,
    alias TEXT NOT NULL,
    target INTEGER NOT NULL,  -- names.id of the canonical
    PRIMARY KEY (context, kind, alias)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS edges (
    id INTEGER PRIMARY KEY,
    context INTEGER NOT NULL,
    subject INTEGER NOT NULL,
    label INTEGER NOT NULL,
    object INTEGER NOT NULL,
    sum REAL NOT NULL,
    count INTEGER NOT NULL,
    UNIQUE (context, subject, label, object)
);
CREATE INDEX IF NOT EXISTS edges_by_label ON edges (context, label);
CREATE INDEX IF NOT EXISTS edges_by_object ON edges (context, object);
CREATE TABLE IF NOT EXISTS attributions (
    edge INTEGER NOT NULL,
    source INTEGER NOT NULL,
    sum REAL NOT NULL,
    count INTEGER NOT NULL,
    paragraph INTEGER,
    PRIMARY KEY (edge, source)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attributions_by_source ON attributions (source);
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    context INTEGER NOT NULL,
    name TEXT NOT NULL,
    has_passage INTEGER NOT NULL DEFAULT 0,
    stored_at INTEGER,
    date INTEGER,
    tags TEXT NOT NULL DEFAULT '[]',
    UNIQUE (context, name)
);
CREATE TABLE IF NOT EXISTS paragraphs (
    id INTEGER PRIMARY KEY,
    source INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    length INTEGER NOT NULL,  -- term count, its questions' terms included
    UNIQUE (source, idx)
);
CREATE TABLE IF NOT EXISTS questions (
    source INTEGER NOT NULL,
    paragraph INTEGER NOT NULL,
    question TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_by_source ON questions (source, paragraph);
CREATE TABLE IF NOT EXISTS sections (
    source INTEGER NOT NULL,
    paragraph INTEGER NOT NULL,
    section TEXT NOT NULL,
    PRIMARY KEY (source, paragraph)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS locators (
    source INTEGER NOT NULL,
    paragraph INTEGER NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (source, paragraph)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vector_models (
    context INTEGER NOT NULL,
    kind TEXT NOT NULL,     -- passages | glosses
    model TEXT NOT NULL,
    width INTEGER NOT NULL, -- 0 until the first vector of this model lands
    revision INTEGER NOT NULL DEFAULT 0,  -- bumped by every vector write
    PRIMARY KEY (context, kind)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS passage_vectors (
    context INTEGER NOT NULL,
    paragraph INTEGER NOT NULL,  -- paragraphs.id
    row INTEGER NOT NULL,        -- 0 the paragraph's text, 1.. its questions in stored order
    vector BLOB NOT NULL,        -- float32 little-endian, unit length
    PRIMARY KEY (context, paragraph, row)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gloss_vectors (
    context INTEGER NOT NULL,
    name INTEGER NOT NULL,  -- names.id: a concept or a label
    gloss TEXT NOT NULL,    -- the text embedded
    vector BLOB NOT NULL,
    PRIMARY KEY (context, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vector_pending (
    context INTEGER NOT NULL,
    kind TEXT NOT NULL,  -- paragraph (paragraphs.id) | name (names.id: its gloss may have changed)
    key INTEGER NOT NULL,
    PRIMARY KEY (context, kind, key)
) WITHOUT ROWID;
"""


def store_file(folder: str | Path) -> Path:
    return Path(folder) / FILE_NAME


def create(path: Path) -> None:
    """Create the folder's file and tables if missing; refuse a file of another schema."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for statement in [*_TABLES.split(";"), postings.TABLE]:
            if statement.strip():
                conn.execute(statement)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] == "1":  # a row per posting: packed into windows
            postings.migrate(conn)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
        elif row is None:
            conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            conn.execute("ROLLBACK")
            raise ValueError(f"{path}: store schema {row[0]}, this build reads {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    finally:
        conn.close()
