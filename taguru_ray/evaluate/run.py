"""One evaluate run: the call sequence of EVALUATE.md §1.1 and the artifact it yields.

Health twice (a best-effort version read, then reachability), the context's entry
(revision before), its embeddings, the source listing walked to an empty page
(every expected source must be listed before any case runs), the cases one by
one, the entry again (revision after). A changed revision does not stop the run;
it reads ``stable: false`` and fails a thresholds gate unless allowed.

Exit codes: `RunFailed` carries 1 (the server or a write failed: retry) or 2
(the input is wrong: fix it); a completed run is 0, or 3 when a threshold was
violated.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray import __version__
from taguru_ray.errors import EXIT_FAILED, EXIT_USAGE
from taguru_ray.evalset import Case, EvalSet
from taguru_ray.evaluate import lanes, scoring
from taguru_ray.evaluate.budget import Limits
from taguru_ray.evaluate.definitions import definitions_for
from taguru_ray.evaluate.metrics import build_metrics
from taguru_ray.evaluate.thresholds import Thresholds, check
from taguru_ray.remote.address import mask_url
from taguru_ray.remote.client import HEALTH_PROBE_SECONDS, RemoteError, TaguruClient, cut_message

EXIT_REGRESSED = 3
DEFAULT_LIMIT = 10
SOURCES_PAGE = 1000
MATCHING = {
    "normalization": "taguru::context::normalize_entry",
    "normalized": ["expected_concepts", "expected_labels"],
    "sources": "exact (source, paragraph) match — no normalization",
}
UNREADABLE = object()
_ENTRY_KEYS = ("name", "description", "pinned", "loaded", "stats", "usage")


class RunFailed(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Request:
    eval_path: str
    evalset: EvalSet
    context: str
    base: str
    out: str
    thresholds: Thresholds | None
    assembly: bool
    budget: Limits | None  # given by a --max-* flag, or always under --assembly
    rerank: str | None
    token: str | None = field(default=None, repr=False)  # the bearer: never shown or written


@dataclass(frozen=True)
class Outcome:
    artifact: dict[str, Any]
    exit_code: int


def evaluate(
    request: Request,
    client: TaguruClient,
    now: Callable[[], str],
    note: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> Outcome:
    """Run every case; RunFailed when the run cannot complete."""
    _health(client, note)
    context = request.context
    before = _entry(client, context)
    warnings = _filter_warnings(request)
    embeddings = _embeddings(client, context, note, warnings)
    sources = _sources(client, context)
    _preflight(request.evalset, sources, context)

    cases = [_case(request, client, case) for case in request.evalset.cases]
    after = _entry(client, context)

    corpus: dict[str, Any] = {
        "revision_before": before.get("revision", {}),
        "revision_after": after.get("revision", {}),
        "stable": _revision(before) == _revision(after),
        "last_write_epoch_before": _last_write(before),
        "last_write_epoch_after": _last_write(after),
    }
    if embeddings is not UNREADABLE:
        corpus["embeddings"] = {"provider_model": embeddings}
    corpus["sources_count"] = len(sources)
    metrics = build_metrics(cases, request.assembly, request.rerank is not None)
    artifact: dict[str, Any] = {
        "taguru_evaluation": 1,
        "generated_at": now(),
        "matching": MATCHING,
        "inputs": _inputs(request),
        "corpus": corpus,
        "thresholds": None,
        "definitions": definitions_for(metrics),
    }
    if warnings:
        artifact["warnings"] = warnings
    artifact["cases"] = cases
    artifact["metrics"] = {name: value.to_json() for name, value in metrics.items()}
    if request.thresholds is None:
        return Outcome(artifact, 0)
    artifact["thresholds"] = check(request.thresholds, artifact)
    return Outcome(artifact, 0 if artifact["thresholds"]["passed"] else EXIT_REGRESSED)


def _health(client: TaguruClient, note: Callable[[str], None]) -> None:
    try:  # best effort: only a version to compare, never a reason to stop
        version = client.health(timeout=HEALTH_PROBE_SECONDS).get("version")
        if isinstance(version, str) and version != __version__:
            note(
                f"taguru-ray: evaluate: note: the server reports version {version}, this "
                f"client is {__version__}"
            )
    except RemoteError:
        pass
    try:
        client.health()
    except RemoteError as error:
        raise RunFailed(EXIT_FAILED, f"the server is not reachable: {error.cut()}") from None


def _entry(client: TaguruClient, context: str) -> dict[str, Any]:
    try:
        result = client.context(context).result
    except RemoteError as error:
        if error.status == 404:
            raise RunFailed(
                EXIT_USAGE,
                f"context '{context}' does not exist on {mask_url(client.base)} — "
                "import it first, or name another with --context",
            ) from None
        raise RunFailed(EXIT_FAILED, f"reading context '{context}': {error.cut()}") from None
    if not isinstance(result, dict) or any(key not in result for key in _ENTRY_KEYS):
        raise RunFailed(EXIT_FAILED, f"context '{context}': the server's entry is unreadable")
    return result


def _revision(entry: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    revision = entry.get("revision") or {}
    return revision.get("graph"), revision.get("passages"), revision.get("config")


def _last_write(entry: Mapping[str, Any]) -> int:
    value = (entry.get("usage") or {}).get("last_write_epoch")
    return value if isinstance(value, int) else 0


def _embeddings(
    client: TaguruClient, context: str, note: Callable[[str], None], warnings: list[str]
) -> str | object | None:
    """The provider's model name (None: no provider); UNREADABLE when it cannot be read."""
    try:
        result = client.embeddings(context).result
        model = result["provider_model"]
        if model is not None and not isinstance(model, str):
            raise TypeError("provider_model is not a string")
        return model
    except (RemoteError, KeyError, TypeError) as error:
        line = f"embeddings of context '{context}' unreadable, corpus.embeddings omitted: {error}"
        note(f"taguru-ray: evaluate: warning: {line}")
        warnings.append(cut_message(line))
        return UNREADABLE


def _sources(client: TaguruClient, context: str) -> list[str]:
    listed: list[str] = []
    after: str | None = None
    while True:
        try:
            page = client.sources_page(context, after, SOURCES_PAGE).result["sources"]
        except (RemoteError, KeyError, TypeError) as error:
            message = error.cut() if isinstance(error, RemoteError) else f"unreadable ({error})"
            raise RunFailed(EXIT_FAILED, f"listing the sources of '{context}': {message}") from None
        if not page:
            return listed
        listed += page
        after = page[-1]


def _preflight(evalset: EvalSet, sources: list[str], context: str) -> None:
    listed = set(sources)
    missing = sorted(
        {
            expected.source
            for case in evalset.cases
            for expected in case.expected_sources
            if expected.source not in listed
        }
    )
    if missing:
        shown = ", ".join(f"'{source}'" for source in missing[:5])
        raise RunFailed(
            EXIT_USAGE,
            f"expected_sources name {len(missing)} source(s) context '{context}' does not hold "
            f"(no stored passage): {shown} — import them, or fix the eval file",
        )


def _filter_warnings(request: Request) -> list[str]:
    if not request.assembly:
        return []
    filtered = [
        case.case_id
        for case in request.evalset.cases
        if case.options.tags or case.options.since is not None or case.options.until is not None
    ]
    if not filtered:
        return []
    return [
        f"--assembly: options.tags/since/until are not applied by evidence assembly "
        f"(cases: {', '.join(filtered[:5])}{', …' if len(filtered) > 5 else ''})"
    ]


def _inputs(request: Request) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "eval": {
            "path": request.eval_path,
            "name": request.evalset.name,
            "cases": len(request.evalset.cases),
        },
        "context": request.context,
        "url": mask_url(request.base),
        "out": request.out,
        "default_limit": DEFAULT_LIMIT,
        "resolve_limit": lanes.RESOLVE_LIMIT,
        "mode": "assembly" if request.assembly else "baseline",
    }
    if request.budget is not None:
        inputs["budget"] = request.budget.to_json()
    if request.rerank is not None:
        inputs["rerank"] = request.rerank
    return inputs


def _case(request: Request, client: TaguruClient, case: Case) -> dict[str, Any]:
    context = request.context
    limit = case.options.limit or DEFAULT_LIMIT
    if request.assembly:
        assert request.budget is not None
        lane = lanes.evidence_lane(client, context, case, limit, request.budget, request.rerank)
    else:
        lane = lanes.passage_lane(client, context, case, limit, request.budget)
    structural = lanes.structural_lane(client, context, case) if case.structural_expected else None
    probes = structural["associations"] if structural else []
    served = scoring.served_locators(lane.hits, probes)
    checks = [
        lanes.citation_check(client, context, expected, served)
        for expected in case.expected_citations
    ]

    block: dict[str, Any] = {"case_id": case.case_id, "query": case.query}
    if case.cues:
        block["cues"] = list(case.cues)
    block |= {"limit": limit, "passage": lane.passage}
    if structural is not None:
        block["structural"] = structural
    recall = (
        scoring.recall_block(case.expected_sources, lane.hits) if lane.hits is not None else None
    )
    if recall is not None:
        block["recall"] = recall
    coverage = _coverage(case, structural)
    if coverage is not None:
        block["coverage"] = coverage
        cross = scoring.lane_cross(coverage, recall)
        if cross is not None:
            block["lane_cross"] = cross
    if checks:
        block["citations"] = scoring.citations_block(checks)
    cues = structural["cues"] if structural else []
    missed, dropped = scoring.missed(case, lane.hits, cues, probes, checks)
    block |= {"missed": missed, "missed_truncated": dropped}
    if lane.evidence is not None:
        block["evidence"] = lane.evidence
    if lane.budget is not None:
        block["budget"] = lane.budget
    if lane.hits is not None:
        block["diversity_sources"] = len({source for source, _ in lane.hits})
    return block


def _coverage(case: Case, structural: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if structural is None:
        return None
    cues = structural["cues"]
    found = {
        "concepts": scoring.coverage_counts(
            case.expected_concepts, [c for c in cues if c["kind"] == "concept"]
        ),
        "labels": scoring.coverage_counts(
            case.expected_labels, [c for c in cues if c["kind"] == "label"]
        ),
        "associations": scoring.association_coverage(structural["associations"]),
    }
    return {name: counts for name, counts in found.items() if counts is not None}
