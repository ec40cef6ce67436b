"""`POST /contexts/{name}/evidence`: one budgeted evidence package from every lane.

The reference's pipeline (its ADR 0006; ADR 0063 here): each origin cue is resolved
and its top candidate becomes an anchor; with `labels` the anchors' facts under those
labels are queried (`graph_query`); the anchors spread activation (`graph_activate`,
activate.py); the passage lane searches `text_fallback_query` (else the origins
joined by "; ") as `sources/search` does; the associations' attributed paragraphs
are looked up as citations; evidence_select.py fuses and admits under the budget.
Communities and a reranker are not part of this store: the plan says so, never
silently. Every call is one of the store's own reads, so the package agrees with
what `resolve`, `query`, `sources/search` and `citations` answer.
"""

from __future__ import annotations

from typing import Any

from taguru_ray.context import graph
from taguru_ray.context.activate import activate
from taguru_ray.context.apply import lookup
from taguru_ray.context.errors import ContextError
from taguru_ray.context.evidence_request import (
    NO_ANCHORS,
    QUERY_LIMIT_DEFAULT,
    EvidenceRequest,
)
from taguru_ray.context.evidence_select import Candidate, Limits, Origin, fuse, select


def _ran() -> dict[str, Any]:
    return {"ran": True}


def _skipped(reason: str) -> dict[str, Any]:
    return {"ran": False, "reason": reason}


class EvidenceReads:
    """The `evidence` read of `SqliteStore` (a mixin: it calls the store's own reads)."""

    def evidence(self: Any, name: str, request: EvidenceRequest) -> dict[str, Any]:
        with self._read() as conn:
            key = self._row(conn, name)[0]  # no_context before any lane
        anchors: list[str] = []
        for cue in request.origins:
            served = self.resolve(
                name,
                cue,
                limit=1000 if request.resolve_limit is None else request.resolve_limit,
                dice_floor=request.dice_floor,
                semantic_floor=request.semantic_floor,
            )
            if served and served[0]["name"] not in anchors:
                anchors.append(served[0]["name"])
        lanes: dict[str, Any] = {
            "resolve": _ran() if request.origins else _skipped("origins was empty")
        }
        pool: list[Candidate] = []
        if not anchors:
            lanes["query"] = _skipped(NO_ANCHORS)
        elif not request.labels:
            lanes["query"] = _skipped("no 'labels' given")
        else:
            found = self.query(
                name, subject=anchors, label=list(request.labels), limit=QUERY_LIMIT_DEFAULT
            )
            pool += [_association(m, "graph_query", r) for r, m in enumerate(found["matches"], 1)]
            lanes["query"] = _ran()
        if anchors:
            pool += self._activated(key, anchors, request)
            lanes["activate"] = _ran()
        else:
            lanes["activate"] = _skipped(NO_ANCHORS)
        query = request.text_fallback_query
        if query is None:
            query = "; ".join(request.origins)
        searched = self.search(
            name, query, limit=request.search_limit, semantic_floor=request.semantic_floor
        )
        lanes["passages"] = _passage_plan(searched["plan"]["contexts"][0]["lanes"])
        pool += [_passage(name, hit, rank) for rank, hit in enumerate(searched["hits"], 1)]
        lanes["communities"] = _skipped(
            "include_communities was false"
            if not request.include_communities
            else f"no communities artifact for '{name}': the embedded store builds none — "
            "run `taguru communities` against a Taguru server"
        )
        wanted = sorted({o for c in pool if c.kind == "association" for o in c.origins})
        citations = self._citations(name, wanted)
        lanes["citations"] = _ran()
        fused, dropped = fuse(pool)
        limits = Limits(request.max_items, request.max_bytes, request.max_tokens)
        chosen = select(fused, dropped, limits, citations)
        reranker: dict[str, Any] = {"configured": False, "ran": False}
        if request.rerank_model is not None:
            reranker["reason"] = "not_configured"
        selection = chosen.pop("selection")
        return chosen | {
            "plan": {
                "lanes": dict(sorted(lanes.items())),
                "selection": selection,
                "reranker": reranker,
            }
        }

    def _activated(
        self: Any, key: int, anchors: list[str], request: EvidenceRequest
    ) -> list[Candidate]:
        with self._read() as conn:
            ids = [lookup(conn, key, "concept", name) for name in anchors]
            _, reached = activate(
                conn,
                key,
                [i for i in ids if i is not None],
                request.activate_decay,
                request.activate_limit,
            )
            facts = []
            for found in reached:
                subject, label, object_ = conn.execute(
                    "SELECT s.name, l.name, o.name FROM edges e JOIN names s ON s.id = e.subject"
                    " JOIN names l ON l.id = e.label JOIN names o ON o.id = e.object"
                    " WHERE e.id = ?",
                    (found.edge,),
                ).fetchone()
                _, matches = graph.query(
                    conn, key, (subject, label, object_), limit=1, since=None, until=None
                )
                facts += matches
        return [_association(fact, "graph_activate", rank) for rank, fact in enumerate(facts, 1)]

    def _citations(self: Any, name: str, wanted: list[Origin]) -> dict[Origin, dict[str, Any]]:
        found = {}
        for source, paragraph in wanted:
            try:
                found[(source, paragraph)] = self.citation(name, source, paragraph)
            except ContextError as error:
                if error.status != 404 or error.code == "no_context":
                    raise
        return found


def _passage_plan(lanes: dict[str, Any]) -> dict[str, Any]:
    if lanes["bm25"]["ran"] or lanes["vector"]["ran"]:
        return _ran()
    return _skipped(lanes["bm25"].get("reason", "the passage search did not run"))


def _association(fact: dict[str, Any], lane: str, rank: int) -> Candidate:
    attributions = fact["attributions"]
    # The last of equally heavy attributions, as Rust's `max_by` picks.
    heaviest = max(reversed(attributions), key=lambda a: abs(a["weight"]), default=None)
    return Candidate(
        kind="association",
        canonical_key=f"{fact['subject']}\0{fact['label']}\0{fact['object']}",
        source=None if heaviest is None else heaviest["source"],
        lane=lane,
        lane_rank=rank,
        payload=fact,
        origins={(a["source"], a["paragraph"]) for a in attributions if a["paragraph"] is not None},
    )


def _passage(context: str, hit: dict[str, Any], rank: int) -> Candidate:
    lanes = hit.get("lanes") or {}
    lane = {(True, True): "passage_fused", (False, True): "passage_vector"}.get(
        ("bm25" in lanes, "vector" in lanes), "passage_bm25"
    )
    return Candidate(
        kind="passage",
        canonical_key=f"{context}\0{hit['source']}\0{hit['paragraph']}",
        source=hit["source"],
        lane=lane,
        lane_rank=rank,
        payload=hit,
        origins={(hit["source"], hit["paragraph"])},
    )
