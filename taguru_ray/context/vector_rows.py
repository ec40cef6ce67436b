"""The store's vectors (ADR 0033): the embedding refresh and the embeddings status
(the lanes that score against them: `vector_lanes`).

**Refresh.** An import marks new paragraphs and the names whose facts changed as
pending (`apply.mark_pending`); `refresh` embeds them batch by batch — glosses always,
paragraph rows (its text, then each question) only with ``TAGURU_EMBED_PASSAGES`` and up
to ``TAGURU_PASSAGE_VECTOR_LIMIT`` rows per context. The provider is called outside any
write transaction; each batch is then written in one, keeping only rows whose text is
still what was embedded. Per context and kind the model and width are recorded: a
provider of another model wipes that kind and re-marks everything, and so does a width
that changed under the same name, so widths never mix. A provider failure stops the
refresh where it is: what landed stays, the rest stays pending for the next refresh.
With nothing pending, a refresh still learns the provider's width (from a call it
made, else one probe) so a width change is re-embedded rather than left to refuse.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np

from taguru_ray.context.embeddings import BATCH, Embedder, EmbeddingsError
from taguru_ray.context.vectors import (
    GLOSS_EXAMPLES,
    GLOSS_FACTS,
    Fact,
    encode,
    gloss_text,
    heaviest,
)

PASSAGES = "passages"
GLOSSES = "glosses"
Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]


@dataclass(frozen=True)
class Model:
    model: str
    width: int
    revision: int


def model_of(conn: sqlite3.Connection, context: int, kind: str) -> Model | None:
    row = conn.execute(
        "SELECT model, width, revision FROM vector_models WHERE context = ? AND kind = ?",
        (context, kind),
    ).fetchone()
    return None if row is None else Model(*row)


def status(conn: sqlite3.Connection, context: int, provider_model: str | None) -> dict[str, Any]:
    """GET /contexts/{name}/embeddings: `{provider_model, glosses?, passages?}`."""
    result: dict[str, Any] = {"provider_model": provider_model}
    glosses = model_of(conn, context, GLOSSES)
    if glosses is not None and glosses.width:
        counts = dict(conn.execute(
            "SELECT n.kind, count(*) FROM gloss_vectors v JOIN names n ON n.id = v.name"
            " WHERE v.context = ? GROUP BY n.kind", (context,),
        ).fetchall())  # fmt: skip
        if counts:
            result["glosses"] = {"model": glosses.model, "width": glosses.width,
                                 "concepts": counts.get("concept", 0),
                                 "labels": counts.get("label", 0)}  # fmt: skip
    passages = model_of(conn, context, PASSAGES)
    if passages is not None and passages.width:
        rows = conn.execute("SELECT count(*) FROM passage_vectors WHERE context = ?", (context,))
        count = rows.fetchone()[0]
        if count:
            result["passages"] = {"model": passages.model, "width": passages.width, "rows": count}
    return result


# ---------------------------------------------------------------- refresh


@dataclass
class Refresh:
    """One context's refresh: vectors written, rows left over the limit, the failure."""

    context: str
    glosses: int = 0
    passages: int = 0
    skipped_over_limit: int = 0
    failure: str | None = None


def refresh(read: Transaction, write: Transaction, embedder: Embedder, context: int,
            name: str) -> Refresh:  # fmt: skip
    report = Refresh(name)
    try:
        report.glosses = _refresh_glosses(read, write, embedder, context)
        if embedder.config.passages:
            report.passages, report.skipped_over_limit = _refresh_passages(
                read, write, embedder, context
            )
    except EmbeddingsError as error:
        report.failure = str(error)
    return report


def _prepare(conn: sqlite3.Connection, context: int, kind: str, model: str, width: int) -> Model:
    """The kind's record for `model` (and `width`, when known): another model's or
    width's vectors are wiped and everything is marked pending again."""
    record = model_of(conn, context, kind)
    if record is not None and record.model == model and (not width or record.width in (0, width)):
        return record
    if kind == GLOSSES:
        conn.execute("DELETE FROM gloss_vectors WHERE context = ?", (context,))
        conn.execute(
            "INSERT OR IGNORE INTO vector_pending SELECT ?, 'name', id FROM names"
            " WHERE context = ?",
            (context, context),
        )
    else:
        conn.execute("DELETE FROM passage_vectors WHERE context = ?", (context,))
        conn.execute(
            "INSERT OR IGNORE INTO vector_pending SELECT ?, 'paragraph', g.id FROM paragraphs g"
            " JOIN sources s ON s.id = g.source WHERE s.context = ?",
            (context, context),
        )
    revision = 0 if record is None else record.revision + 1
    conn.execute(
        "INSERT OR REPLACE INTO vector_models (context, kind, model, width, revision)"
        " VALUES (?, ?, ?, 0, ?)",
        (context, kind, model, revision),
    )
    return Model(model, 0, revision)


def _landed(conn: sqlite3.Connection, context: int, kind: str, width: int) -> None:
    conn.execute(
        "UPDATE vector_models SET width = ?, revision = revision + 1"
        " WHERE context = ? AND kind = ?",
        (width, context, kind),
    )


def _pending(conn: sqlite3.Connection, context: int, kind: str, limit: int) -> list[int]:
    rows = conn.execute(
        "SELECT key FROM vector_pending WHERE context = ? AND kind = ? ORDER BY key LIMIT ?",
        (context, kind, limit),
    )
    return [row[0] for row in rows]


def _unmark(conn: sqlite3.Connection, context: int, kind: str, key: int) -> bool:
    """Clear a pending mark; False when it was already gone (another refresh took it)."""
    cursor = conn.execute(
        "DELETE FROM vector_pending WHERE context = ? AND kind = ? AND key = ?",
        (context, kind, key),
    )
    return cursor.rowcount > 0


def gloss_of(conn: sqlite3.Connection, context: int, key: int) -> str | None:
    """A name's gloss (vectors.gloss_text): None when the name is gone."""
    row = conn.execute("SELECT kind, name FROM names WHERE id = ?", (key,)).fetchone()
    if row is None:
        return None
    kind, name = row
    where = "(e.subject = ? OR e.object = ?)" if kind == "concept" else "e.label = ?"
    facts = [Fact(*r) for r in conn.execute(
        "SELECT e.id, s.name, l.name, o.name, e.sum FROM edges e JOIN names s ON s.id ="
        " e.subject JOIN names l ON l.id = e.label JOIN names o ON o.id = e.object"
        f" WHERE e.context = ? AND {where} AND e.count > 0",
        (context, key, key) if kind == "concept" else (context, key),
    )]  # fmt: skip
    if kind == "concept":
        return gloss_text(name, heaviest(facts, GLOSS_FACTS), name)
    return gloss_text(name, heaviest(facts, GLOSS_EXAMPLES), None)


def _refresh_glosses(read: Transaction, write: Transaction, embedder: Embedder,
                     context: int) -> int:  # fmt: skip
    done = 0
    with write() as conn:
        _prepare(conn, context, GLOSSES, embedder.model, 0)
    while True:
        with read() as conn:
            keys = _pending(conn, context, "name", BATCH)
            glosses = {key: gloss_of(conn, context, key) for key in keys}
            marks = ",".join("?" * len(keys))
            stored = dict(conn.execute(
                f"SELECT name, gloss FROM gloss_vectors WHERE context = ? AND name IN ({marks})",
                (context, *keys),
            ).fetchall()) if keys else {}  # fmt: skip
        if not keys:
            if done or not _width_moved(read, write, embedder, context, GLOSSES):
                return done
            continue
        todo = [k for k in keys if glosses[k] is not None and stored.get(k) != glosses[k]]
        matrix = embedder.embed([glosses[k] or "" for k in todo]) if todo else None
        with write() as conn:
            width = 0 if matrix is None else matrix.shape[1]
            before = model_of(conn, context, GLOSSES)
            record = _prepare(conn, context, GLOSSES, embedder.model, width)
            if before is None or record.revision != before.revision:
                continue  # wiped for another model or width: everything is pending again
            rows = dict(zip(todo, [] if matrix is None else list(matrix), strict=True))
            for key in keys:
                if key not in rows:
                    _unmark(conn, context, "name", key)  # unchanged, or the name is gone
                elif gloss_of(conn, context, key) == glosses[key] and _unmark(
                    conn, context, "name", key
                ):
                    conn.execute(
                        "INSERT OR REPLACE INTO gloss_vectors (context, name, gloss, vector)"
                        " VALUES (?, ?, ?, ?)",
                        (context, key, glosses[key], encode(rows[key])),
                    )
                    done += 1
            if width:
                _landed(conn, context, GLOSSES, width)


def _refresh_passages(read: Transaction, write: Transaction, embedder: Embedder,
                      context: int) -> tuple[int, int]:  # fmt: skip
    done = 0
    limit = embedder.config.passage_vector_limit
    with write() as conn:
        _prepare(conn, context, PASSAGES, embedder.model, 0)
    while True:
        with read() as conn:
            have = conn.execute(
                "SELECT count(*) FROM passage_vectors WHERE context = ?", (context,)
            ).fetchone()[0]
            keys = _pending(conn, context, "paragraph", BATCH)
            texts = {key: _rows_of(conn, key) for key in keys}
            waiting = conn.execute(
                "SELECT count(*) FROM vector_pending WHERE context = ? AND kind = 'paragraph'",
                (context,),
            ).fetchone()[0]
        if not keys:
            if done or not _width_moved(read, write, embedder, context, PASSAGES):
                return done, 0
            continue
        chosen: list[int] = []
        room = limit - have
        for key in keys:
            size = len(texts[key] or ())
            if size > room:
                break
            chosen.append(key)
            room -= size
        if not chosen and all(texts[k] is not None for k in keys):
            return done, waiting  # over the limit: the rest stays pending, BM25 serves it
        flat = [text for key in chosen for text in texts[key] or ()]
        matrix = embedder.embed(flat) if flat else np.zeros((0, 0), np.float32)
        with write() as conn:
            width = matrix.shape[1] if flat else 0
            before = model_of(conn, context, PASSAGES)
            record = _prepare(conn, context, PASSAGES, embedder.model, width)
            if before is None or record.revision != before.revision:
                continue  # wiped for another model or width: everything is pending again
            at = 0
            for key in keys:
                rows = texts[key]
                if rows is None:
                    _unmark(conn, context, "paragraph", key)  # retracted since
                    continue
                if key not in chosen:
                    continue
                vectors, at = matrix[at : at + len(rows)], at + len(rows)
                if _rows_of(conn, key) != rows or not _unmark(conn, context, "paragraph", key):
                    continue  # replaced or taken meanwhile: its own mark covers it
                conn.execute(
                    "DELETE FROM passage_vectors WHERE context = ? AND paragraph = ?",
                    (context, key),
                )
                conn.executemany(
                    "INSERT INTO passage_vectors (context, paragraph, row, vector)"
                    " VALUES (?, ?, ?, ?)",
                    [(context, key, row, encode(v)) for row, v in enumerate(vectors)],
                )
                done += len(rows)
            if width:
                _landed(conn, context, PASSAGES, width)


def _width_moved(
    read: Transaction, write: Transaction, embedder: Embedder, context: int, kind: str
) -> bool:
    """With nothing pending, whether the provider's width moved under the same model name
    (one probe call, unless it already answered in this process); if it did, the kind is
    wiped and everything marked pending again."""
    with read() as conn:
        record = model_of(conn, context, kind)
    if record is None or not record.width:
        return False
    width = embedder.width or embedder.embed(["width"]).shape[1]
    if width == record.width:
        return False
    with write() as conn:
        _prepare(conn, context, kind, embedder.model, width)
    return True


def _rows_of(conn: sqlite3.Connection, key: int) -> list[str] | None:
    """A paragraph's embedded rows: its text, then its questions in stored order."""
    row = conn.execute("SELECT source, idx, text FROM paragraphs WHERE id = ?", (key,)).fetchone()
    if row is None:
        return None
    questions = conn.execute(
        "SELECT question FROM questions WHERE source = ? AND paragraph = ? ORDER BY rowid",
        (row[0], row[1]),
    )
    return [row[2], *(q[0] for q in questions)]
