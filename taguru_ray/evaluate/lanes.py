"""The three lanes of one case, as HTTP calls and the blocks they record.

Passage (``sources/search``, or ``evidence`` under ``--assembly``), then
structural (``resolve``/``resolve_label`` per cue, association positions pinned
and queried), then citation (one ``citations`` call per expectation), in that
fixed order; no lane's answer feeds another's call. A failing call is recorded
in its block (its message cut to 200 bytes) and the case goes on. What a block
holds is locators, names and counts — never a paragraph's text.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.evalset import SECTION_UNCHECKED, Case, ExpectedAssociation, ExpectedCitation
from taguru_ray.evaluate import scoring
from taguru_ray.evaluate.budget import Limits, truncate
from taguru_ray.remote.client import RemoteError, TaguruClient, cut_message
from taguru_ray.remote.search_page import SearchShapeError, read_search_result

RESOLVE_LIMIT = 5


class AssemblyUnavailable(Exception):
    """The server has no ``POST …/evidence``: ``--assembly`` cannot run against it."""


@dataclass(frozen=True)
class PassageLane:
    passage: dict[str, Any]  # the case's `passage` block
    hits: list[scoring.Locator] | None  # None when the lane failed
    evidence: dict[str, Any] | None = None  # assembly only
    budget: dict[str, Any] | None = None  # with a budget flag, or assembly


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _failed(message: str, latency_ms: int) -> dict[str, Any]:
    return {"outcome": "failed", "message": cut_message(message), "latency_ms": latency_ms}


def passage_lane(
    client: TaguruClient, context: str, case: Case, limit: int, limits: Limits | None
) -> PassageLane:
    """``sources/search``; with `limits` (a budget flag) its hits truncated to them."""
    options = case.options
    body = {
        "query": case.query,
        "limit": limit,
        "semantic_floor": options.floor,
        "tags": list(options.tags),
        "since": options.since,
        "until": options.until,
    }
    started = time.monotonic()
    try:
        reply = client.search(context, body)
        page = read_search_result(reply.result)
    except (RemoteError, SearchShapeError) as error:
        return PassageLane(_failed(str(error), _elapsed(started)), None)
    hits: Sequence[Mapping[str, Any]] = page.hits
    budget = None
    if limits is not None:
        cut = truncate(context, hits, limits)
        hits = cut.hits
        budget = cut.usage | {"omitted_total": cut.omitted_total}
    block: dict[str, Any] = {"outcome": "searched"}
    if page.plan is not None:
        block["plan"] = page.plan
    block["hits"] = [
        {
            "source": hit["source"],
            "paragraph": hit["paragraph"],
            "score": hit["score"],
            "lanes": hit["lanes"] or {},
        }
        for hit in hits
    ]
    block["latency_ms"] = reply.latency_ms
    return PassageLane(block, [(hit["source"], hit["paragraph"]) for hit in hits], None, budget)


def evidence_lane(
    client: TaguruClient,
    context: str,
    case: Case,
    limit: int,
    limits: Limits,
    rerank: str | None,
) -> PassageLane:
    """``POST …/evidence`` in place of the passage search: its admitted items' own
    locators and citation refs, in fused order, are the case's hits (first `limit`)."""
    body: dict[str, Any] = {
        "origins": list(case.cues) or [case.query],
        "text_fallback_query": case.query,
        "search_limit": limit,
        "semantic_floor": case.options.floor,
        "budget": limits.to_json(),
    }
    if rerank is not None:
        body["rerank"] = {"model": rerank}
    started = time.monotonic()
    try:
        reply = client.evidence(context, body)
    except RemoteError as error:
        if error.status == 404 and error.code in ("unknown_path", None):
            raise AssemblyUnavailable(str(error)) from None
        failed = _failed(str(error), _elapsed(started))
        return PassageLane(failed, None, failed)
    try:
        items, package = _package(reply.result)
    except (KeyError, TypeError, ValueError) as error:
        message = f"response carries no recognizable evidence package ({error})"
        failed = _failed(message, reply.latency_ms)
        return PassageLane(failed, None, failed)
    hits: list[scoring.Locator] = []
    for item in items:
        own = [(item["source"], item["paragraph"])] if "source" in item else []
        hits += own + [(ref["source"], ref["paragraph"]) for ref in item["citation_refs"]]
    hits = hits[:limit]
    passage = {
        "outcome": "searched",
        "hits": [{"source": s, "paragraph": p, "score": 0.0, "lanes": {}} for s, p in hits],
        "latency_ms": reply.latency_ms,
    }
    evidence: dict[str, Any] = {
        "outcome": "assembled",
        "latency_ms": reply.latency_ms,
        "items": items,
    }
    if package["omitted_by_reason"]:
        evidence["omitted_by_reason"] = package["omitted_by_reason"]
    evidence["selection"] = package["plan"]["selection"]
    evidence["reranker"] = package["plan"]["reranker"]
    budget = dict(package["budget"]) | {"omitted_total": package["omitted_total"]}
    return PassageLane(passage, hits, evidence, budget)


def _package(result: Any) -> tuple[list[dict[str, Any]], Mapping[str, Any]]:
    """The package's items as locators (no payload: a payload may carry text)."""
    items = []
    for item in result["items"]:
        located: dict[str, Any] = {
            "candidate_id": item["candidate_id"],
            "kind": item["kind"],
            "fused_rank": item["fused_rank"],
        }
        if isinstance(item.get("passage"), Mapping):
            located |= {
                "source": item["passage"]["source"],
                "paragraph": item["passage"]["paragraph"],
            }
        elif isinstance(item.get("community"), Mapping):
            community = item["community"]
            located |= {
                "source": f"community:{community['community']}",
                "paragraph": community["paragraph"],
            }
        located["citation_refs"] = [
            {"source": ref["source"], "paragraph": ref["paragraph"]}
            for ref in item["citation_refs"]
        ]
        items.append(located)
    for key in ("budget", "omitted_total", "omitted_by_reason", "plan"):
        result[key]  # a package without these is not one
    return items, result


# -- structural -----------------------------------------------------------------


def _candidates(client: TaguruClient, context: str, cue: str, label: bool) -> tuple[list, int]:
    reply = client.resolve(context, cue, RESOLVE_LIMIT, label=label)
    result = reply.result
    if not isinstance(result, list) or not all(
        isinstance(c, Mapping) and isinstance(c.get("name"), str) and isinstance(c.get("tier"), str)
        for c in result
    ):
        route = "resolve_label" if label else "resolve"
        raise RemoteError(f"{route} response did not parse: expected an array of candidates")
    return result, reply.latency_ms


def resolve_cue(client: TaguruClient, context: str, cue: str, kind: str) -> dict[str, Any]:
    started = time.monotonic()
    try:
        candidates, latency_ms = _candidates(client, context, cue, kind == "label")
    except RemoteError as error:
        return {
            "cue": cue,
            "kind": kind,
            "resolved_names": [],
            "limit": RESOLVE_LIMIT,
            "latency_ms": _elapsed(started),
            "error": error.cut(),
        }
    group = scoring.top_tier(candidates)
    block: dict[str, Any] = {"cue": cue, "kind": kind, "resolved_names": [c["name"] for c in group]}
    if group:
        block["tier"] = group[0]["tier"]
    return block | {"limit": RESOLVE_LIMIT, "latency_ms": latency_ms}


def _position(client: TaguruClient, context: str, cue: str, label: bool) -> dict[str, Any]:
    started = time.monotonic()
    try:
        candidates, latency_ms = _candidates(client, context, cue, label)
    except RemoteError as error:
        return {"outcome": "errored", "message": error.cut(), "latency_ms": _elapsed(started)}
    return scoring.position_outcome(scoring.top_tier(candidates), latency_ms)


def _query(client: TaguruClient, context: str, s: str, l: str, o: str) -> dict[str, Any]:  # noqa: E741
    started = time.monotonic()
    try:
        reply = client.query(context, s, l, o, limit=1)
    except RemoteError as error:
        return {"outcome": "errored", "message": error.cut(), "latency_ms": _elapsed(started)}
    try:
        total = reply.result["total"]
        matches = reply.result["matches"]
        attributions = [
            {"source": a["source"], "paragraph": a.get("paragraph")}
            for match in matches
            for a in match.get("attributions", ())
        ]
        if not isinstance(total, int):
            raise TypeError("'total' is not a count")
    except (KeyError, TypeError) as error:
        message = f"query response did not parse: {error}"
        return {
            "outcome": "errored",
            "message": cut_message(message),
            "latency_ms": reply.latency_ms,
        }
    block: dict[str, Any] = {"outcome": "queried", "total": total, "matches": len(matches)}
    if attributions:
        block["attributions"] = attributions
    return block | {"latency_ms": reply.latency_ms}


def association_probe(
    client: TaguruClient, context: str, expected: ExpectedAssociation
) -> dict[str, Any]:
    """Resolve the three positions; query the triple only when each pinned exactly one
    name — never a guessed combination."""
    subject = _position(client, context, expected.subject, False)
    label = _position(client, context, expected.label, True)
    object_ = _position(client, context, expected.object, False)
    probe: dict[str, Any] = {
        "subject_cue": expected.subject,
        "label_cue": expected.label,
        "object_cue": expected.object,
        "subject": subject,
        "label": label,
        "object": object_,
    }
    if all(p["outcome"] == "resolved" for p in (subject, label, object_)):
        probe["query"] = _query(client, context, subject["name"], label["name"], object_["name"])
    return probe


def structural_lane(client: TaguruClient, context: str, case: Case) -> dict[str, Any]:
    cues = list(case.cues) or [case.query]
    resolved = []
    if case.expected_concepts:
        resolved += [resolve_cue(client, context, cue, "concept") for cue in cues]
    if case.expected_labels:
        resolved += [resolve_cue(client, context, cue, "label") for cue in cues]
    probes = [association_probe(client, context, a) for a in case.expected_associations]
    return {"cues": resolved, "associations": probes}


# -- citations ------------------------------------------------------------------


def citation_check(
    client: TaguruClient, context: str, expected: ExpectedCitation, served: set[scoring.Locator]
) -> dict[str, Any]:
    check: dict[str, Any] = {
        "source": expected.source,
        "paragraph": expected.paragraph,
        "served": (expected.source, expected.paragraph) in served,
    }
    started = time.monotonic()
    try:
        reply = client.citation(context, expected.source, expected.paragraph)
        text, section = reply.result["text"], reply.result["section"]
        if not isinstance(text, str) or not (section is None or isinstance(section, str)):
            raise TypeError("'text' or 'section' has the wrong type")
    except RemoteError as error:
        code = error.code if error.status == 404 else None
        return check | {
            "outcome": "unresolved",
            "code": code,
            "message": error.cut(),
            "latency_ms": _elapsed(started),
        }
    except (KeyError, TypeError) as error:
        message = cut_message(f"citation response did not parse: {error}")
        return check | {
            "outcome": "unresolved",
            "code": None,
            "message": message,
            "latency_ms": _elapsed(started),
        }
    declared = expected.section is not SECTION_UNCHECKED
    expected_section = None if not declared else expected.section
    check |= {
        "outcome": "resolved",
        "section": scoring.section_check(declared, expected_section, section),
    }
    if expected.quote is not None:
        check["quote"] = {
            "declared": expected.quote,
            "matched": scoring.quote_matches(expected.quote, text),
        }
    return check | {"latency_ms": _elapsed(started)}
