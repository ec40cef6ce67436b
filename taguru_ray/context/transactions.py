"""An import's transactions: a group of files in one, and a refusal in the wire's form.

`apply_group` applies several files in the caller's transaction, each file all or
nothing inside it (a ``SAVEPOINT`` each): a refused file is rolled back alone, rowids
and counters included, and its `ImportRefusal` returned in its place. The group's
postings are written once at its end, one upsert per row (ADR 0067), so a kill
leaves whole groups — never part of a file — and a rerun replaces each source exactly.
`refusal_error` turns a refusal of ``POST /import`` into its error envelope.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from taguru_ray.context.apply import apply_batch
from taguru_ray.context.errors import ContextError
from taguru_ray.context.importer import Batch, ImportRefusal
from taguru_ray.context.postings import PostingsBuffer


def apply_group(
    conn: sqlite3.Connection, files: Sequence[Sequence[Batch]], *, create_missing: bool
) -> list[list[dict[str, Any]] | ImportRefusal]:
    """Each file's batch counters, or its refusal, in file order."""
    answers: list[list[dict[str, Any]] | ImportRefusal] = []
    group, seen = PostingsBuffer(), set()
    for batches in files:
        named = {(b.context, b.source_id) for b in batches}
        if not seen.isdisjoint(named):  # a retraction of this group's own postings:
            group.flush(conn)  # they are written first, outside the file's savepoint
        seen |= named
        own = PostingsBuffer()
        conn.execute("SAVEPOINT file")
        try:
            answers.append(
                [apply_batch(conn, b, create_missing=create_missing, buffer=own) for b in batches]
            )
        except ImportRefusal as refusal:
            conn.execute("ROLLBACK TO file")
            answers.append(refusal)
        else:
            group.absorb(own)
        conn.execute("RELEASE file")
    group.flush(conn)
    return answers


def refusal_error(
    refusal: ImportRefusal, durable: int, total: int, batch: Batch | None = None
) -> Any:
    """An import refusal in the wire's error form (`import_refusal_durable_prefix.json`)."""
    where = f"line {refusal.line}: {refusal.path}: "
    if batch is not None:
        where = (
            f"batch {durable + 1} of {total} (context '{batch.context}', source "
            f"'{batch.source_id}') refused — "
        )
        if durable:
            where += (
                f"the {durable} batch(es) before it landed durably; fixing the stream and "
                "re-POSTing it whole is exact (each batch replaces its own source): "
            )
    path = refusal.path if batch is None else f"batches[{durable}].{refusal.path}"
    issue = {"path": path, "kind": refusal.kind, "expected": refusal.expected or "a valid line",
             "actual": refusal.actual or refusal.message}  # fmt: skip
    return ContextError(
        refusal.status,
        refusal.code,
        f"{where}{refusal.message}; nothing was applied",
        {
            "issues": [issue],
            "issues_total": 1,
            "integrity": "durable_prefix" if durable else "nothing_written",
            "durable_batches": durable,
            "retryable_after_correction": True,
        },
    )
