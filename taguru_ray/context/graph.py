"""Reading the graph: `query` facts with their attributions, and a context's stats
(EVALUATE.md §1.4, §2.5).

A position is pinned by an exact stored spelling, canonical or alias (both land
on the canonical record), one or any of several; a free position matches
anything. Facts sort by |weight| descending (weight = sum / count), then by
subject, label and object; ``total`` counts them before ``limit``. An edge
whose every attribution was retracted (count 0) is not served.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from taguru_ray.context.apply import lookup
from taguru_ray.context.errors import Position, invalid_argument
from taguru_ray.context.passages import markers

MAX_LIMIT = 1000
_SAMPLE = 10


def _spellings(position: Position) -> list[str] | None:
    if position is None:
        return None
    if isinstance(position, str):
        return [position]
    if isinstance(position, Sequence) and all(isinstance(item, str) for item in position):
        return list(position)
    raise invalid_argument("a position is a string, a list of strings or null")


def query(
    conn: sqlite3.Connection,
    context: int,
    positions: tuple[Position, Position, Position],
    *,
    limit: int,
    since: int | None,
    until: int | None,
) -> tuple[int, list[dict[str, Any]]]:
    """(total before limit, matches) for (subject, label, object) positions."""
    if limit < 0:
        raise invalid_argument("limit must not be negative")
    if since is not None and until is not None and since >= until:
        raise invalid_argument(f"since ({since}) must be before until ({until})")
    spellings = [_spellings(p) for p in positions]
    if all(s is None for s in spellings):
        raise invalid_argument("pin at least one of subject, label, object")
    where, values = ["e.context = ?", "e.count > 0"], [context]
    columns = (("subject", "concept"), ("label", "label"), ("object", "concept"))
    for (column, kind), names in zip(columns, spellings, strict=True):
        if names is None:
            continue
        ids = {lookup(conn, context, kind, name) for name in names} - {None}
        if not ids:
            return 0, []
        where.append(f"e.{column} IN ({','.join('?' * len(ids))})")
        values.extend(sorted(ids))  # type: ignore[arg-type]
    rows = conn.execute(
        "SELECT e.id, s.name, l.name, o.name, e.sum, e.count FROM edges e"
        " JOIN names s ON s.id = e.subject JOIN names l ON l.id = e.label"
        " JOIN names o ON o.id = e.object WHERE " + " AND ".join(where),
        values,
    ).fetchall()
    facts = []
    for edge, subject, label, object_, total, count in rows:
        attributions = _attributions(conn, edge, since, until)
        if (since is not None or until is not None) and not attributions:
            continue
        facts.append((total / count, subject, label, object_, count, attributions))
    facts.sort(key=lambda f: (-abs(f[0]), f[1], f[2], f[3]))
    matches = [
        {"subject": s, "label": lb, "object": o, "weight": w, "count": n, "attributions": a}
        for w, s, lb, o, n, a in facts[: min(limit, MAX_LIMIT)]
    ]
    return len(facts), matches


def _attributions(
    conn: sqlite3.Connection, edge: int, since: int | None, until: int | None
) -> list[dict[str, Any]]:
    found = []
    for source, name, total, count, paragraph, stamp in conn.execute(
        "SELECT a.source, s.name, a.sum, a.count, a.paragraph, coalesce(s.date, s.stored_at)"
        " FROM attributions a JOIN sources s ON s.id = a.source WHERE a.edge = ? ORDER BY s.name",
        (edge,),
    ):
        if since is not None or until is not None:
            if stamp is None or (since is not None and stamp < since):
                continue
            if until is not None and stamp >= until:
                continue
        marks = {"section": None, "locator": None}
        if paragraph is not None:
            marks = markers(conn, source, paragraph)
        found.append({"source": name, "weight": total, "count": count, "paragraph": paragraph,
                      **marks})  # fmt: skip
    return found


def stats(conn: sqlite3.Connection, context: int) -> dict[str, Any]:
    """A DirectoryEntry's `stats`: what this store can count (the rest reads 0)."""

    def one(sql: str) -> Any:
        return conn.execute(sql, (context,)).fetchone()[0]

    top = conn.execute(
        "SELECT n.name, count(*) AS degree FROM (SELECT subject AS concept FROM edges"
        " WHERE context = ? AND count > 0 UNION ALL SELECT object FROM edges"
        " WHERE context = ? AND count > 0) JOIN names n ON n.id = concept"
        " GROUP BY n.id ORDER BY degree DESC, n.name LIMIT ?",
        (context, context, _SAMPLE),
    ).fetchall()
    labels = conn.execute(
        "SELECT name FROM names WHERE context = ? AND kind = 'label' ORDER BY name LIMIT ?",
        (context, _SAMPLE),
    ).fetchall()
    return {
        "arena_slack": 0,
        "associations": one("SELECT count(*) FROM edges WHERE context = ? AND count > 0"),
        "concepts": one("SELECT count(*) FROM names WHERE context = ? AND kind = 'concept'"),
        "dead_attributions": 0,
        "dead_edges": one("SELECT count(*) FROM edges WHERE context = ? AND count <= 0"),
        "footprint_bytes": 0,
        "label_sample": [row[0] for row in labels],
        "labels": one("SELECT count(*) FROM names WHERE context = ? AND kind = 'label'"),
        "sources": one(
            "SELECT count(*) FROM sources s WHERE s.context = ? AND (s.has_passage = 1"
            " OR EXISTS (SELECT 1 FROM attributions a WHERE a.source = s.id))"
        ),
        "top_concepts": [{"count": degree, "label": name} for name, degree in top],
        "unsourced_edges": 0,
        "unsourced_weight": 0.0,
    }
