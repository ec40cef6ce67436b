"""Applying one `Batch` to the store inside the caller's transaction (EVALUATE.md §4.1, §2.5).

Per batch: create the context if it is missing (and the batch may) → retract
the source (its attributions and its passage with everything hung on it) →
store the passage (paragraphs, BM25 postings with its questions' terms added
to their paragraph, sections, locators, metadata) → associations (concepts and
labels interned, alias spellings landing on their canonical; edge sum and
count accumulated; one attribution per (edge, source) whose paragraph the
first assertion sets; every edge the batch touched then holds the exact sum
of its attributions, `_settle_sums`) → aliases (concepts then labels, by
spelling). New paragraphs and the names whose facts changed are marked for the
embedding refresh (ADR 0033); a retracted paragraph's vectors go with it. A refusal
raises `ImportRefusal`; the caller rolls the transaction back, so nothing of
the batch is applied.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from taguru_ray.context import postings
from taguru_ray.context.importer import Batch, ImportRefusal
from taguru_ray.context.postings import PostingsBuffer
from taguru_ray.context.prepare import prepare_paragraphs
from taguru_ray.context.resolve import clamp_floor
from taguru_ray.context.terms import passage_terms


def apply_batch(
    conn: sqlite3.Connection,
    batch: Batch,
    *,
    create_missing: bool,
    buffer: PostingsBuffer | None = None,
) -> dict[str, Any]:
    """Write one batch; return its `import` counters (the keys of the `import.json` fixture).
    Its postings go to `buffer`, which the caller flushes before committing; without one
    they are written before this returns."""
    if buffer is None:
        own = PostingsBuffer()
        counts = apply_batch(conn, batch, create_missing=create_missing, buffer=own)
        own.flush(conn)
        return counts
    context, created = _context(conn, batch, create_missing)
    source = _source_row(conn, context, batch.source_id)
    held = conn.execute("SELECT edge FROM attributions WHERE source = ?", (source,))
    edges = {row[0] for row in held}  # the retraction takes weight from these
    retracted, had_passage = retract(conn, context, source, buffer)
    counts: dict[str, Any] = {
        "context": batch.context,
        "source": batch.source_id,
        "created": created,
        "retracted": retracted,
        "associations": 0,
        "aliases": 0,
        "passage_stored": False,
        "passage_dropped": False,
        "questions_stored": 0,
        "questions_dropped": 0,
        "sections_stored": 0,
        "sections_dropped": 0,
        "locators_stored": 0,
        "locators_dropped": 0,
        "association_paragraphs_dropped": 0,
        "schema_violations": 0,
    }
    paragraphs = _store_passage(conn, context, source, batch, counts, buffer)
    touched: set[int] = set()
    for fact in batch.source.associations:
        paragraph = fact.paragraph
        if paragraph is not None and paragraph >= paragraphs:
            paragraph = None
            counts["association_paragraphs_dropped"] += 1
        subject = _intern(conn, context, "concept", fact.subject)
        label = _intern(conn, context, "label", fact.label)
        object_ = _intern(conn, context, "concept", fact.object)
        edge = _associate(conn, context, source, (subject, label, object_), fact.weight, paragraph)
        edges.add(edge)
        touched.update((subject, label, object_))
        counts["associations"] += 1
    _settle_sums(conn, edges)
    mark_pending(conn, context, "name", touched)
    counts["aliases"] = _aliases(conn, context, batch)
    graph_ops = counts["associations"] + counts["aliases"] + (1 if retracted else 0)
    passage_ops = int(counts["passage_stored"]) + int(had_passage)
    conn.execute(
        "UPDATE contexts SET rev_graph = rev_graph + ?, rev_passages = rev_passages + ?,"
        " writes = writes + 1, last_write_epoch = ? WHERE id = ?",
        (graph_ops, passage_ops, int(time.time()), context),
    )
    return counts


def _context(conn: sqlite3.Connection, batch: Batch, create_missing: bool) -> tuple[int, bool]:
    row = conn.execute("SELECT id FROM contexts WHERE name = ?", (batch.context,)).fetchone()
    if row is not None:
        return row[0], False
    if batch.create is None and not create_missing:
        raise ImportRefusal(
            batch.file, batch.header_line, "context", f"context '{batch.context}' not found and "
            "the header has no create block", status=404, code="no_context", kind="no_context",
        )  # fmt: skip
    create = batch.create
    cursor = conn.execute(
        "INSERT INTO contexts (name, context_id, description, pinned, dice_floor, semantic_floor)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            batch.context,
            batch.context_id,
            (create.description if create else batch.source.header.description) or "",
            int(create.pinned) if create else 0,
            None if create is None or create.dice_floor is None
            else clamp_floor(create.dice_floor, 0.3),
            None if create is None or create.semantic_floor is None
            else clamp_floor(create.semantic_floor, 0.35),
        ),
    )  # fmt: skip
    return int(cursor.lastrowid or 0), True


def _source_row(conn: sqlite3.Connection, context: int, name: str) -> int:
    row = conn.execute(
        "SELECT id FROM sources WHERE context = ? AND name = ?", (context, name)
    ).fetchone()
    if row is not None:
        return int(row[0])
    cursor = conn.execute("INSERT INTO sources (context, name) VALUES (?, ?)", (context, name))
    return int(cursor.lastrowid or 0)


def retract(
    conn: sqlite3.Connection, context: int, source: int, buffer: PostingsBuffer | None = None
) -> tuple[int, bool]:
    """Remove a source's attributions (their weight leaves the edge) and its passage.
    Returns (attributions removed, whether a passage was removed). Names stay interned.
    `buffer`: postings of this transaction not yet written (flushed first when they hold
    one of the source's paragraphs)."""
    rows = conn.execute(
        "SELECT edge, sum, count FROM attributions WHERE source = ?", (source,)
    ).fetchall()
    ends = conn.execute(
        "SELECT e.subject, e.label, e.object FROM attributions a JOIN edges e ON e.id = a.edge"
        " WHERE a.source = ?",
        (source,),
    ).fetchall()
    mark_pending(conn, context, "name", {key for end in ends for key in end})
    conn.executemany(
        "UPDATE edges SET sum = sum - ?, count = count - ? WHERE id = ?",
        [(total, count, edge) for edge, total, count in rows],
    )
    conn.execute("DELETE FROM attributions WHERE source = ?", (source,))
    paragraphs = conn.execute(
        "SELECT id, idx, text, length FROM paragraphs WHERE source = ?", (source,)
    ).fetchall()
    if paragraphs:
        questions = _questions_by_paragraph(conn, source)
        carried: dict[int, set[str]] = {}
        for key, index, text, _ in paragraphs:
            terms = carried[key] = set(passage_terms(text))
            for question in questions.get(index, []):
                terms.update(passage_terms(question))
        if buffer is not None and not buffer.paragraphs.isdisjoint(carried):
            buffer.flush(conn)  # stored earlier in this transaction: written, then removed
        postings.remove(conn, context, carried)
        _drop_vectors(conn, context, [row[0] for row in paragraphs])
        conn.execute(
            "UPDATE contexts SET paragraphs = paragraphs - ?, paragraph_length = paragraph_length"
            " - ? WHERE id = ?",
            (len(paragraphs), sum(row[3] for row in paragraphs), context),
        )
    for table in ("paragraphs", "questions", "sections", "locators"):
        conn.execute(f"DELETE FROM {table} WHERE source = ?", (source,))
    had = conn.execute("SELECT has_passage FROM sources WHERE id = ?", (source,)).fetchone()[0]
    conn.execute(
        "UPDATE sources SET has_passage = 0, stored_at = NULL, date = NULL, tags = '[]'"
        " WHERE id = ?",
        (source,),
    )
    return len(rows), bool(had)


def mark_pending(conn: sqlite3.Connection, context: int, kind: str, keys: Iterable[int]) -> None:
    """Mark paragraphs (new) or names (their gloss may have changed) for the embedding
    refresh (ADR 0033). Marked with or without a provider, so a provider configured
    later finds every paragraph and name it has not embedded."""
    conn.executemany(
        "INSERT OR IGNORE INTO vector_pending (context, kind, key) VALUES (?, ?, ?)",
        [(context, kind, key) for key in keys],
    )


def _drop_vectors(conn: sqlite3.Connection, context: int, paragraphs: list[int]) -> None:
    """A retracted paragraph's vectors and pending mark go with it (its id may be reused)."""
    keys = [(context, key) for key in paragraphs]
    conn.executemany("DELETE FROM passage_vectors WHERE context = ? AND paragraph = ?", keys)
    conn.executemany(
        "DELETE FROM vector_pending WHERE context = ? AND kind = 'paragraph' AND key = ?", keys
    )


def _questions_by_paragraph(conn: sqlite3.Connection, source: int) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for paragraph, question in conn.execute(
        "SELECT paragraph, question FROM questions WHERE source = ? ORDER BY rowid", (source,)
    ):
        found.setdefault(paragraph, []).append(question)
    return found


def _store_passage(
    conn: sqlite3.Connection,
    context: int,
    source: int,
    batch: Batch,
    counts: dict[str, Any],
    buffer: PostingsBuffer,
) -> int:
    """Store the batch's passage; return its paragraph count (0 without one)."""
    passage = batch.source.passage
    if passage is None:
        return 0
    paragraphs = batch.prepared if batch.prepared is not None else prepare_paragraphs(batch)
    if not paragraphs:
        counts["passage_dropped"] = True
        return 0
    count = len(paragraphs)
    questions: dict[int, list[str]] = {}
    for question in batch.source.questions:
        if question.paragraph < count:
            questions.setdefault(question.paragraph, []).append(question.question)
            counts["questions_stored"] += 1
        else:
            counts["questions_dropped"] += 1
    # Ids as SQLite would give them (max + 1, ...), known up front so the rows go in one
    # executemany and the postings to the buffer.
    first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM paragraphs").fetchone()[0]
    stored = list(range(first, first + count))
    rows = [
        (key, source, p.index, p.text, p.length) for key, p in zip(stored, paragraphs, strict=True)
    ]
    conn.executemany(
        "INSERT INTO paragraphs (id, source, idx, text, length) VALUES (?, ?, ?, ?, ?)", rows
    )
    for key, paragraph in zip(stored, paragraphs, strict=True):
        buffer.add(context, key, paragraph.length, paragraph.counts)
    total = sum(p.length for p in paragraphs)
    mark_pending(conn, context, "paragraph", stored)
    conn.executemany(
        "INSERT INTO questions (source, paragraph, question) VALUES (?, ?, ?)",
        [(source, p, q) for p, texts in sorted(questions.items()) for q in texts],
    )
    markers: dict[str, dict[int, tuple[str, ...]]] = {"sections": {}, "locators": {}}
    for section in batch.source.sections:
        _mark(markers["sections"], section.paragraph, (section.section,), count, counts, "sections")
    for locator in batch.locators:
        value = (locator.kind, locator.value)
        _mark(markers["locators"], locator.paragraph, value, count, counts, "locators")
    conn.executemany(
        "INSERT INTO sections (source, paragraph, section) VALUES (?, ?, ?)",
        [(source, p, *v) for p, v in markers["sections"].items()],
    )
    conn.executemany(
        "INSERT INTO locators (source, paragraph, kind, value) VALUES (?, ?, ?, ?)",
        [(source, p, *v) for p, v in markers["locators"].items()],
    )
    conn.execute(
        "UPDATE sources SET has_passage = 1, stored_at = ?, date = ?, tags = ? WHERE id = ?",
        (int(time.time()), passage.date, json.dumps(list(passage.tags)), source),
    )
    conn.execute(
        "UPDATE contexts SET paragraphs = paragraphs + ?, paragraph_length = paragraph_length + ?"
        " WHERE id = ?",
        (count, total, context),
    )
    counts["passage_stored"] = True
    return count


def _mark(
    found: dict[int, tuple[str, ...]],
    paragraph: int,
    value: tuple[str, ...],
    count: int,
    counts: dict[str, Any],
    kind: str,
) -> None:
    """A section or locator marker: out of range dropped; the same paragraph twice, last wins."""
    if paragraph >= count:
        counts[f"{kind}_dropped"] += 1
    elif paragraph in found:
        found[paragraph] = value
    else:
        found[paragraph] = value
        counts[f"{kind}_stored"] += 1


def lookup(conn: sqlite3.Connection, context: int, kind: str, spelling: str) -> int | None:
    """The record a spelling names in one namespace: a canonical name, else an alias's target."""
    row = conn.execute(
        "SELECT id FROM names WHERE context = ? AND kind = ? AND name = ?",
        (context, kind, spelling),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT target FROM aliases WHERE context = ? AND kind = ? AND alias = ?",
            (context, kind, spelling),
        ).fetchone()
    return None if row is None else int(row[0])


def _intern(conn: sqlite3.Connection, context: int, kind: str, spelling: str) -> int:
    found = lookup(conn, context, kind, spelling)
    if found is not None:
        return found
    cursor = conn.execute(
        "INSERT INTO names (context, kind, name) VALUES (?, ?, ?)", (context, kind, spelling)
    )
    return int(cursor.lastrowid or 0)


def _associate(
    conn: sqlite3.Connection,
    context: int,
    source: int,
    triple: tuple[int, int, int],
    weight: float,
    paragraph: int | None,
) -> int:
    """Add one assertion to its edge and to the (edge, source) attribution; return the edge."""
    conn.execute(
        "INSERT INTO edges (context, subject, label, object, sum, count) VALUES (?, ?, ?, ?, ?, 1)"
        " ON CONFLICT (context, subject, label, object) DO UPDATE SET sum = sum + excluded.sum,"
        " count = count + 1",
        (context, *triple, weight),
    )
    edge = conn.execute(
        "SELECT id FROM edges WHERE context = ? AND subject = ? AND label = ? AND object = ?",
        (context, *triple),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO attributions (edge, source, sum, count, paragraph) VALUES (?, ?, ?, 1, ?)"
        " ON CONFLICT (edge, source) DO UPDATE SET sum = sum + excluded.sum, count = count + 1",
        (edge, source, weight, paragraph),
    )
    return int(edge)


def _settle_sums(conn: sqlite3.Connection, edges: set[int]) -> None:
    """Set each edge's sum to the exactly rounded sum (`math.fsum`) of its attributions'.

    The running `sum += w` (and `-= w` on a retraction) depends in its last bits on the
    order sources were imported and re-imported: a killed import rerun would leave
    2.8 where one uninterrupted import leaves 2.8000000000000003. The exact sum depends
    only on the attributions the edge holds, so every import order agrees (and an edge
    whose attributions were all retracted holds 0.0, not a residue). Costs one read of
    the touched edges' attributions per batch."""
    for edge in edges:
        parts = conn.execute("SELECT sum FROM attributions WHERE edge = ?", (edge,))
        total = math.fsum(row[0] for row in parts)
        conn.execute("UPDATE edges SET sum = ? WHERE id = ?", (total, edge))


def _aliases(conn: sqlite3.Connection, context: int, batch: Batch) -> int:
    """Register the batch's aliases (concepts, then labels, by spelling); return how many
    are new. An unknown canonical or an alias bound to another record refuses the batch."""
    order = {"concept": 0, "label": 1}
    added = 0
    for alias in sorted(batch.source.aliases, key=lambda a: (order[a.kind], a.alias)):
        line = batch.alias_line(alias.kind, alias.alias)
        path = f"{'concepts' if alias.kind == 'concept' else 'labels'}[{alias.alias!r}]"
        target = lookup(conn, context, alias.kind, alias.canonical)
        if target is None:
            raise ImportRefusal(
                batch.file, line, path, f"{alias.kind} alias '{alias.alias}' → "
                f"'{alias.canonical}': the canonical spelling is not interned",
                status=409, code="conflict", kind="unknown_reference",
                expected=f"'{alias.canonical}' already interned as a concept or label this "
                "batch's associations use", actual="not present in this request",
            )  # fmt: skip
        bound = lookup(conn, context, alias.kind, alias.alias)
        if bound == target:
            continue
        if bound is not None:
            raise ImportRefusal(
                batch.file, line, path, f"{alias.kind} alias '{alias.alias}' is already bound "
                "to another record", status=409, code="conflict", kind="conflict",
                expected=f"'{alias.alias}' unbound or bound to '{alias.canonical}'",
                actual="bound to another record",
            )  # fmt: skip
        conn.execute(
            "INSERT INTO aliases (context, kind, alias, target) VALUES (?, ?, ?, ?)",
            (context, alias.kind, alias.alias, target),
        )
        added += 1
    return added
