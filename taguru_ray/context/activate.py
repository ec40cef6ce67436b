"""Spreading activation from anchor concepts: the graph lane of evidence assembly.

The reference's `activate` (ADR 0006 §6) as evidence assembly calls it: each anchor
starts at activation 1.0; concepts are settled best-first; a settled concept's live
edges (count > 0, either direction) each score `activation · decay · |sum|` and keep
their best score as their strength; the score, shared out by the concept's total
edge magnitude, flows on to the edge's other end when it beats that end's best.
Edges rank by strength descending, then edge id. The embedded store serves no
`POST …/activate` route (501): this lane exists so `/evidence` ranks graph facts
the way the reference does, one anchor hop and beyond.
"""

from __future__ import annotations

import heapq
import sqlite3
from dataclasses import dataclass

ACTIVATION_FLOOR = 1e-6  # below it a flow is not worth following (the reference's floor)


@dataclass(frozen=True)
class Activated:
    strength: float
    edge: int


def activate(
    conn: sqlite3.Connection, context: int, anchors: list[int], decay: float, limit: int
) -> tuple[int, list[Activated]]:
    """(edges reached, the `limit` strongest) from the anchor concept ids."""
    decay = min(1.0, max(0.0, decay)) if decay == decay else 0.0  # NaN → 0, as clamp_unit_or
    best: dict[int, float] = {}
    heap: list[tuple[float, int]] = []
    for concept in anchors:
        best[concept] = 1.0
        heapq.heappush(heap, (-1.0, concept))
    settled: set[int] = set()
    strengths: dict[int, float] = {}
    while heap:
        negative, concept = heapq.heappop(heap)
        if concept in settled:
            continue
        settled.add(concept)
        edges = _edges(conn, context, concept)
        # A self-loop is counted once in the total (the reference skips it as incoming).
        total = sum(abs(weight) for _, _, _, weight in edges)
        if total == 0.0:
            continue
        for edge, subject, object_, weight in edges:
            score = -negative * decay * abs(weight)
            if score <= 0.0:
                continue
            if score > strengths.get(edge, 0.0):
                strengths[edge] = score
            flow = score / total
            if flow < ACTIVATION_FLOOR:
                continue
            for neighbour in (subject, object_):
                if neighbour not in settled and flow > best.get(neighbour, 0.0):
                    best[neighbour] = flow
                    heapq.heappush(heap, (-flow, neighbour))
    ranked = sorted(strengths.items(), key=lambda item: (-item[1], item[0]))
    return len(ranked), [Activated(strength, edge) for edge, strength in ranked[:limit]]


def _edges(
    conn: sqlite3.Connection, context: int, concept: int
) -> list[tuple[int, int, int, float]]:
    """The concept's live edges, outgoing and incoming, each once: (id, subject, object, sum)."""
    rows = conn.execute(
        "SELECT id, subject, object, sum FROM edges WHERE context = ? AND count > 0"
        " AND subject = ? UNION SELECT id, subject, object, sum FROM edges"
        " WHERE context = ? AND count > 0 AND object = ? ORDER BY id",
        (context, concept, context, concept),
    ).fetchall()
    return [(int(a), int(b), int(c), float(d)) for a, b, c, d in rows]
