"""differences.jsonl: what each pair of models extracted differently (BENCHMARK.md §2.8, §6).

For every pair of models, only segments both sides completed are compared;
every association either side produced is listed as shared or single-side,
followed by the differences that fired for it (disjoint polarity, disjoint
paragraphs, more than one surface spelling), then alias resolutions the two
sides disagree on. No record judges a side: sides are ``a``/``b``, counts
``n_present``, absence is ``null``.

Stamps follow the ADR 0042 form (``type`` tags, a ``version`` date,
``segment_coverage``, ``segment_id``/``segment_sha256`` locators).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taguru_ray.benchmark.compare.identity import (
    DEFAULT_MATCHING,
    AssocKey,
    Matching,
    Presence,
    sign,
)
from taguru_ray.benchmark.compare.load import Loaded
from taguru_ray.benchmark.compare.locator import SegmentTexts, locator
from taguru_ray.benchmark.compare.manifest import SegmentInfo
from taguru_ray.benchmark.compare.serde import dumps_compact
from taguru_ray.benchmark.compare.stability import KeyedRuns, key_runs

FORMAT_VERSION = "2026-09-17"


def pair_id(a: str, b: str) -> str:
    """``<bytes of a>:<a>__<b>``: the length prefix keeps (a, b__c) apart from (a__b, c)."""
    return f"{len(a.encode('utf-8'))}:{a}__{b}"


def model_pairs(model_ids: list[str]) -> list[dict[str, str]]:
    """Every i < j of the model order, each pair put in byte order."""
    pairs = []
    for i, first in enumerate(model_ids):
        for second in model_ids[i + 1 :]:
            a, b = sorted((first, second), key=lambda m: m.encode("utf-8"))
            pairs.append({"pair_id": pair_id(a, b), "a": a, "b": b})
    return pairs


def _runs(presence: Presence) -> dict[str, Any]:
    return {"runs": presence.runs, "n_present": presence.n_present}


def _side(presence: Presence | None, **extra: Any) -> dict[str, Any] | None:
    return None if presence is None else {**_runs(presence), **extra}


def _signs(presence: Presence) -> set[int]:
    return {sign(w) for seen in presence.by_run.values() for w in seen.weights}


def _paragraphs(presence: Presence) -> set[int | None]:
    return {p for seen in presence.by_run.values() for p in seen.paragraphs}


def _surfaces(presence: Presence | None) -> set[tuple[str, str, str]]:
    if presence is None:
        return set()
    return {s for seen in presence.by_run.values() for s in seen.spellings}


def _null_first(values: set[int | None]) -> list[int | None]:
    return sorted(values, key=lambda p: (p is not None, p or 0))


def _surface_list(forms: set[tuple[str, str, str]]) -> list[dict[str, str]]:
    return [{"subject": s, "label": lb, "object": o} for s, lb, o in sorted(forms)]


def differences_text(
    loaded: Loaded,
    with_text: bool,
    warn: Callable[[str], None],
    matching: Matching = DEFAULT_MATCHING,
) -> str:
    """The whole differences.jsonl (header, then records; ``\\n`` after each line)."""
    manifest = loaded.manifest
    model_ids = manifest.model_ids()
    pairs = model_pairs(model_ids)
    header = {
        "type": "benchmark_differences",
        "version": FORMAT_VERSION,
        "run_id": manifest.run_id,
        "pairs": pairs,
        "matching": matching.to_json(),
        "text_included": with_text,
    }
    keyed = {
        model: key_runs((d for d in loaded.doc_rows if d.model_id == model), matching)
        for model in model_ids
    }
    texts = SegmentTexts(with_text)
    records: list[dict[str, Any]] = []
    for pair in pairs:
        records.extend(_pair_records(loaded, pair, keyed[pair["a"]], keyed[pair["b"]], texts, warn))
    return "".join(dumps_compact(line) + "\n" for line in [header, *records])


def _pair_records(
    loaded: Loaded,
    pair: dict[str, str],
    side_a: KeyedRuns,
    side_b: KeyedRuns,
    texts: SegmentTexts,
    warn: Callable[[str], None],
) -> list[dict[str, Any]]:
    a, b, pid = pair["a"], pair["b"], pair["pair_id"]
    segments = loaded.manifest.segments
    records: list[dict[str, Any]] = []
    eligible: list[str] = []
    for segment_id in sorted(side_a.completed.keys() | side_b.completed.keys()):
        if segment_id not in segments:
            warn(
                f"differences: segment {segment_id} has no manifest.json entry — left out of {pid}"
            )
            continue
        runs_a, runs_b = side_a.completed.get(segment_id), side_b.completed.get(segment_id)
        records.append(
            {
                "type": "segment_coverage",
                "pair_id": pid,
                "present_in": [m for m, runs in ((a, runs_a), (b, runs_b)) if runs],
                "sides": {
                    "a": {"runs": sorted(runs_a), "n_present": len(runs_a)} if runs_a else None,
                    "b": {"runs": sorted(runs_b), "n_present": len(runs_b)} if runs_b else None,
                },
            }
        )
        if runs_a and runs_b:
            eligible.append(segment_id)
    by_segment_a = _by_segment(side_a)
    by_segment_b = _by_segment(side_b)
    for segment_id in eligible:
        keys_a = by_segment_a.get(segment_id, {})
        keys_b = by_segment_b.get(segment_id, {})
        for key in sorted(keys_a.keys() | keys_b.keys()):
            records.extend(
                _key_records(
                    a, b, pid, key, keys_a.get(key), keys_b.get(key), segments[segment_id], texts
                )
            )
    aliases_a, aliases_b = _aliases_by_segment(side_a), _aliases_by_segment(side_b)
    for segment_id in eligible:
        records.extend(
            _alias_records(
                (a, b, pid),
                aliases_a.get(segment_id, {}),
                aliases_b.get(segment_id, {}),
                locator(segments[segment_id], None, texts),
            )
        )
    return records


def _by_segment(side: KeyedRuns) -> dict[str, dict[AssocKey, Presence]]:
    grouped: dict[str, dict[AssocKey, Presence]] = {}
    for key, presence in side.presence.items():
        grouped.setdefault(key.document_id, {})[key] = presence
    return grouped


def _key_records(
    a: str,
    b: str,
    pid: str,
    key: AssocKey,
    on_a: Presence | None,
    on_b: Presence | None,
    segment: SegmentInfo,
    texts: SegmentTexts,
) -> list[dict[str, Any]]:
    """The shared/single-side record of one key, then the differences that fired for it."""
    present_in = [m for m, p in ((a, on_a), (b, on_b)) if p is not None]
    located = [p for side in (on_a, on_b) if side for p in _paragraphs(side) if p is not None]
    base = {
        "pair_id": pid,
        "present_in": present_in,
        "key": {"subject": key.subject, "label": key.label, "object": key.object},
    }
    where = locator(segment, min(located) if located else None, texts)
    both = on_a is not None and on_b is not None
    records = [
        {
            "type": "association_shared" if both else "association_single_side",
            **base,
            "sides": {"a": _side(on_a), "b": _side(on_b)},
            "locator": where,
        }
    ]
    if on_a is not None and on_b is not None:
        signs_a, signs_b = _signs(on_a), _signs(on_b)
        if signs_a.isdisjoint(signs_b):
            records.append(
                {
                    "type": "polarity_difference",
                    **base,
                    "sides": {
                        "a": _side(on_a, weight_signs=sorted(signs_a)),
                        "b": _side(on_b, weight_signs=sorted(signs_b)),
                    },
                    "locator": where,
                }
            )
        paragraphs_a, paragraphs_b = _paragraphs(on_a), _paragraphs(on_b)
        if paragraphs_a.isdisjoint(paragraphs_b):
            records.append(
                {
                    "type": "attribution_difference",
                    **base,
                    "sides": {
                        "a": _side(on_a, paragraphs=_null_first(paragraphs_a)),
                        "b": _side(on_b, paragraphs=_null_first(paragraphs_b)),
                    },
                    "locator": where,
                }
            )
    surfaces_a, surfaces_b = _surfaces(on_a), _surfaces(on_b)
    if len(surfaces_a | surfaces_b) >= 2:
        records.append(
            {
                "type": "surface_form_variation",
                **base,
                "sides": {
                    "a": _side(on_a, surface_forms=_surface_list(surfaces_a)),
                    "b": _side(on_b, surface_forms=_surface_list(surfaces_b)),
                },
                "locator": where,
            }
        )
    return records


def _aliases_by_segment(side: KeyedRuns) -> dict[str, dict[tuple[str, str], dict[int, str]]]:
    """(alias kind, spelling) → run → canonical, per segment."""
    grouped: dict[str, dict[tuple[str, str], dict[int, str]]] = {}
    for (segment_id, kind, spelling), by_run in side.aliases.items():
        grouped.setdefault(segment_id, {})[(kind, spelling)] = by_run
    return grouped


def _alias_records(
    pair: tuple[str, str, str],
    declared_a: dict[tuple[str, str], dict[int, str]],
    declared_b: dict[tuple[str, str], dict[int, str]],
    where: dict[str, Any],
) -> list[dict[str, Any]]:
    """Aliases both sides declared for a segment whose resolved canonicals are disjoint."""
    a, b, pid = pair
    records = []
    for kind, spelling in sorted(declared_a.keys() & declared_b.keys()):
        runs_a, runs_b = declared_a[(kind, spelling)], declared_b[(kind, spelling)]
        canonicals_a, canonicals_b = set(runs_a.values()), set(runs_b.values())
        if not canonicals_a.isdisjoint(canonicals_b):
            continue
        records.append(
            {
                "type": "alias_resolution_difference",
                "pair_id": pid,
                "present_in": [a, b],
                "alias_kind": kind,
                "spelling": spelling,
                "sides": {
                    "a": {
                        "runs": sorted(runs_a),
                        "n_present": len(runs_a),
                        "canonicals": sorted(canonicals_a),
                    },
                    "b": {
                        "runs": sorted(runs_b),
                        "n_present": len(runs_b),
                        "canonicals": sorted(canonicals_b),
                    },
                },
                "locator": where,
            }
        )
    return records
