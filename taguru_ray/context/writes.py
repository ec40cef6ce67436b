"""The write API of a context, as the reference's HTTP routes apply it (ADR 0064).

`SqliteStore` gains these as a mixin; every method runs in one write transaction
(`_write`), so a refused request applies nothing and a reader sees a write whole or
not at all. Passages go through the importer's own `apply` functions (paragraph
split, BM25 postings, questions, sections, locators, metadata), so how a passage is
indexed is decided in one place for `import` and for `POST …/sources` alike.

- create / update / rename / delete a context (409 `already_exists`, 404 `no_context`);
  delete retracts every source through `apply.retract`, then drops the rest.
- `add_associations` accumulates: edge `sum += w`, `count += 1`, public weight
  sum/count; a sourced assertion also adds to its (edge, source) attribution,
  whose paragraph the first assertion sets. Unsourced weight lives on the edge
  only (a later import touching that edge re-sums it from its attributions).
- `store_passages` replaces each named source's passage and keeps its
  attributions; the raw text is kept beside the paragraphs so `lookup` answers
  it exactly (a source re-imported since answers its paragraphs joined by a
  blank line — the stored raw text no longer splits into them).
- `retract_source` removes the source's attributions and passage.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from taguru_ray.context import apply
from taguru_ray.context.errors import ContextError
from taguru_ray.context.importer import Batch, Locator
from taguru_ray.contract.items import Question
from taguru_ray.contract.source_file import Header, Passage, Section, SourceFile
from taguru_ray.text.paragraphs import split_paragraphs

_RAW = (
    "CREATE TABLE IF NOT EXISTS passage_texts ("
    "source INTEGER PRIMARY KEY, text TEXT NOT NULL)"  # sources.id → the text as stored
)
_STORED_KEYS = ("questions", "sections", "locators")


class AssociationOp(BaseModel):
    model_config = ConfigDict(frozen=True)

    subject: str
    label: str
    object: str
    weight: float = 1.0
    source: str | None = None
    paragraph: int | None = None


class PassageSubmission(BaseModel):
    """One source's passage and what rides with it (the request's per-source maps)."""

    model_config = ConfigDict(frozen=True)

    text: str
    questions: tuple[tuple[int, str], ...] = ()
    sections: tuple[tuple[int, str], ...] = ()
    locators: tuple[tuple[int, str, str], ...] = ()  # (paragraph, kind, value)
    tags: tuple[str, ...] = ()
    date: int | None = None


class ContextMeta(BaseModel):
    model_config = ConfigDict(frozen=True)

    description: str | None = None
    pinned: bool | None = None
    dice_floor: float | None = None
    semantic_floor: float | None = None


def already_exists(name: str) -> ContextError:
    return ContextError(409, "already_exists", f"context '{name}' already exists")


class ContextWrites:
    """The write half of `SqliteStore` (a mixin over its `_write`, `_row`, `_read`)."""

    def create_context(self: Any, name: str, meta: ContextMeta) -> bool:
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM contexts WHERE name = ?", (name,)).fetchone():
                raise already_exists(name)
            conn.execute(
                "INSERT INTO contexts (name, context_id, description, pinned, dice_floor,"
                " semantic_floor, last_write_epoch) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    name,
                    meta.description or "",
                    int(bool(meta.pinned)),
                    meta.dice_floor,
                    meta.semantic_floor,
                    int(time.time()),
                ),
            )
        return True

    def update_context(self: Any, name: str, meta: ContextMeta) -> dict[str, Any]:
        """PATCH: set what `meta` names; answer the whole ContextMeta."""
        with self._write() as conn:
            key = self._row(conn, name)[0]
            for column, value in meta.model_dump().items():
                if value is not None:
                    value = int(value) if column == "pinned" else value
                    conn.execute(f"UPDATE contexts SET {column} = ? WHERE id = ?", (value, key))
            conn.execute("UPDATE contexts SET rev_config = rev_config + 1 WHERE id = ?", (key,))
            row = conn.execute(
                "SELECT description, pinned, dice_floor, semantic_floor FROM contexts WHERE id = ?",
                (key,),
            ).fetchone()
        return {
            "description": row[0],
            "pinned": bool(row[1]),
            "dice_floor": row[2],
            "semantic_floor": row[3],
        }

    def rename_context(self: Any, name: str, to: str) -> bool:
        with self._write() as conn:
            self._row(conn, name)
            if (
                to != name
                and conn.execute("SELECT 1 FROM contexts WHERE name = ?", (to,)).fetchone()
            ):
                raise already_exists(to)
            conn.execute("UPDATE contexts SET name = ? WHERE name = ?", (to, name))
        # Usage counters are kept by name in memory: they follow the context.
        with self._usage_lock:
            usage = self._reads.pop(name, None)
            if usage is not None and to != name:
                self._reads[to] = usage
        return True

    def delete_context(self: Any, name: str) -> bool:
        with self._write() as conn:
            key = self._row(conn, name)[0]
            conn.execute(_RAW)
            sources = conn.execute("SELECT id FROM sources WHERE context = ?", (key,)).fetchall()
            for (source,) in sources:
                apply.retract(conn, key, source)  # the index drops its postings its own way
                conn.execute("DELETE FROM passage_texts WHERE source = ?", (source,))
            for table in (
                "names",
                "aliases",
                "edges",
                "sources",
                "vector_models",
                "passage_vectors",
                "gloss_vectors",
                "vector_pending",
            ):
                conn.execute(f"DELETE FROM {table} WHERE context = ?", (key,))
            conn.execute("DELETE FROM contexts WHERE id = ?", (key,))
        # A context id SQLite may hand out again must not find this one's cached index.
        with self._usage_lock:
            self._indexes = {k: v for k, v in self._indexes.items() if k[0] != key}
            self._reads.pop(name, None)
        self._matrices = type(self._matrices)()  # vectors cached by id: reloaded on demand
        return True

    def add_associations(self: Any, name: str, ops: Sequence[AssociationOp]) -> int:
        with self._write() as conn:
            key = self._row(conn, name)[0]
            touched: set[int] = set()
            for op in ops:
                ends = (
                    apply._intern(conn, key, "concept", op.subject),
                    apply._intern(conn, key, "label", op.label),
                    apply._intern(conn, key, "concept", op.object),
                )
                touched.update(ends)
                if op.source is None:
                    _unsourced(conn, key, ends, op.weight)
                else:
                    source = apply._source_row(conn, key, op.source)
                    apply._associate(conn, key, source, ends, op.weight, op.paragraph)
            apply.mark_pending(conn, key, "name", touched)
            _wrote(conn, key, graph=len(ops))
        return len(ops)

    def store_passages(
        self: Any, name: str, passages: dict[str, PassageSubmission]
    ) -> dict[str, int]:
        counts = dict.fromkeys(
            [f"{kind}_{verdict}" for kind in _STORED_KEYS for verdict in ("stored", "dropped")], 0
        )
        stored = 0
        with self._write() as conn:
            key = self._row(conn, name)[0]
            conn.execute(_RAW)
            for source_name, submission in sorted(passages.items()):
                source = apply._source_row(conn, key, source_name)
                kept = _attributions(conn, source)
                # The importer's own batch: it retracts the source and stores the passage
                # (postings, questions, sections, locators, metadata) as an import does.
                found = apply.apply_batch(
                    conn, _batch(name, source_name, submission), create_missing=False
                )
                _restore(conn, kept)
                for counter in counts:
                    counts[counter] += found[counter]
                if found["passage_stored"]:
                    stored += 1
                    conn.execute(
                        "INSERT OR REPLACE INTO passage_texts (source, text) VALUES (?, ?)",
                        (source, submission.text),
                    )
        return {"stored": stored, **counts}

    def lookup_passages(self: Any, name: str, sources: Sequence[str]) -> dict[str, Any]:
        found: dict[str, str] = {}
        missing: list[str] = []
        with self._read() as conn:
            key = self._row(conn, name)[0]
            for source in dict.fromkeys(sources):
                text = _passage_text(conn, key, source)
                if text is None:
                    missing.append(source)
                else:
                    found[source] = text
        return {"passages": dict(sorted(found.items())), "missing": missing}

    def retract_source(
        self: Any, name: str, source_name: str, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Remove the source's attributions and passage; `dry_run`: say what it would
        remove, write nothing (the reference's ``?dry_run=true``). A source the context
        does not hold answers zero and nothing, and counts no write."""
        if dry_run:  # read only: a server started without --writable previews too
            with self._read() as conn:
                key = self._row(conn, name)[0]
                row = conn.execute(
                    "SELECT id, has_passage FROM sources WHERE context = ? AND name = ?",
                    (key, source_name),
                ).fetchone()
                if row is None:
                    return {"associations_touched": 0, "passage_removed": False}
                (touched,) = conn.execute(
                    "SELECT count(*) FROM attributions WHERE source = ?", (row[0],)
                ).fetchone()
                return {"associations_touched": touched, "passage_removed": bool(row[1])}
        with self._write() as conn:
            key = self._row(conn, name)[0]
            row = conn.execute(
                "SELECT id FROM sources WHERE context = ? AND name = ?", (key, source_name)
            ).fetchone()
            if row is None:
                return {"associations_touched": 0, "passage_removed": False}
            edges = {
                e
                for (e,) in conn.execute(
                    "SELECT edge FROM attributions WHERE source = ?", (row[0],)
                )
            }
            touched, removed = apply.retract(conn, key, row[0])
            apply._settle_sums(conn, edges)
            if touched or removed:
                _wrote(conn, key, graph=int(bool(touched)), passages=int(removed))
        return {"associations_touched": touched, "passage_removed": removed}

    def write_ready(self: Any, name: str) -> None:
        """404 `no_context` unless the context exists (a write route's first check)."""
        with self._read() as conn:
            self._row(conn, name)


def _has_raw(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'passage_texts'"
        ).fetchone()
        is not None
    )


def _wrote(conn: sqlite3.Connection, key: int, *, graph: int = 0, passages: int = 0) -> None:
    conn.execute(
        "UPDATE contexts SET rev_graph = rev_graph + ?, rev_passages = rev_passages + ?,"
        " writes = writes + 1, last_write_epoch = ? WHERE id = ?",
        (graph, passages, int(time.time()), key),
    )


def _unsourced(
    conn: sqlite3.Connection, key: int, ends: tuple[int, int, int], weight: float
) -> None:
    conn.execute(
        "INSERT INTO edges (context, subject, label, object, sum, count) VALUES (?, ?, ?, ?, ?, 1)"
        " ON CONFLICT (context, subject, label, object) DO UPDATE SET sum = sum + excluded.sum,"
        " count = count + 1",
        (key, *ends, weight),
    )


def _attributions(conn: sqlite3.Connection, source: int) -> list[tuple[Any, ...]]:
    """The source's attributions, read before a passage store retracts the source, so
    `_restore` puts them back: storing a passage replaces the passage only."""
    rows = conn.execute(
        "SELECT edge, sum, count, paragraph, source FROM attributions WHERE source = ?", (source,)
    ).fetchall()
    return [tuple(row) for row in rows]


def _restore(conn: sqlite3.Connection, kept: list[tuple[Any, ...]]) -> None:
    for edge, total, count, paragraph, source in kept:
        conn.execute(
            "INSERT INTO attributions (edge, source, sum, count, paragraph) VALUES (?, ?, ?, ?, ?)",
            (edge, source, total, count, paragraph),
        )
        conn.execute("UPDATE edges SET count = count + ? WHERE id = ?", (count, edge))
    apply._settle_sums(conn, {row[0] for row in kept})


def _batch(context: str, source: str, submission: PassageSubmission) -> Batch:
    """The submission as the importer's `Batch`, so `apply` stores it as it stores an import."""
    file = SourceFile(
        header=Header(id=source, context_id=context),
        passage=Passage(text=submission.text, date=submission.date, tags=submission.tags),
        questions=[Question(paragraph=p, question=q) for p, q in submission.questions],
        sections=[Section(paragraph=p, section=s) for p, s in submission.sections],
    )
    batch = Batch("POST sources", 0, file, context, context, None)
    batch.locators = [Locator(p, kind, value) for p, kind, value in submission.locators]
    return batch


def _passage_text(conn: sqlite3.Connection, key: int, source: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM sources WHERE context = ? AND name = ? AND has_passage = 1", (key, source)
    ).fetchone()
    if row is None:
        return None
    paragraphs = [
        t
        for (t,) in conn.execute(
            "SELECT text FROM paragraphs WHERE source = ? ORDER BY idx", (row[0],)
        )
    ]
    if _has_raw(conn):
        raw = conn.execute("SELECT text FROM passage_texts WHERE source = ?", (row[0],)).fetchone()
        if raw is not None and [p.text for p in split_paragraphs(raw[0])] == paragraphs:
            return str(raw[0])
    return "\n\n".join(paragraphs)
