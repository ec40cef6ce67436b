"""``evaluate compare``: which cases moved between two evaluation.json runs (§3.8).

`compare` is pure: two parsed reports in, the lines of ``changes.jsonl`` out —
a header (identities of both runs, counts, the aggregate diff, warnings), then
one record per case that improved, regressed, was added or was removed, in
case_id order. Unchanged cases are only counted.

Reading is lenient, as the reference reads its own artifact: every field may
be absent (a newer writer may add fields, never repurpose one), but a field
that is present must have its type, and ``taguru_evaluation`` must be a stamp
this build reads. A case is classified on `COMPARED_METRICS` only; one
metric down is enough to call it regressed, even if another went up — the
record lists both. Mismatches between the runs (context, corpus revision,
thresholds file, stamp, budget) are warnings, never refusals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.errors import EXIT_USAGE, TaguruRayError
from taguru_ray.evaluate.definitions import CASE_METRIC_PATHS, COMPARED_METRICS, scalar

CHANGES_VERSION = 1
# The evaluation.json stamps this build reads: 1..=1, the reference's range acceptance.
EVALUATION_STAMPS = range(1, 2)
# A per-case delta this small is float noise on the same value, not a change.
EPSILON = 1e-9
BUDGET_KEYS = ("max_items", "max_bytes", "max_tokens")


class EvaluationInputError(TaguruRayError):
    """BASE or HEAD is not an evaluation.json this build reads (exit 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"{path}: {why}")


def load_json(raw: bytes, path: str) -> Any:
    """Parse one report's bytes; EvaluationInputError when they are not JSON text."""

    def refuse(token: str) -> float:
        raise ValueError(f"{token} is not a JSON number")

    def finite(text: str) -> float:
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"{text} is out of range for a number")
        return number

    try:
        return json.loads(raw.decode("utf-8"), parse_constant=refuse, parse_float=finite)
    except UnicodeDecodeError as error:
        raise EvaluationInputError(path, f"not UTF-8 text ({error.reason})") from None
    except ValueError as error:  # JSONDecodeError included
        raise EvaluationInputError(path, f"malformed evaluation.json: {error}") from None


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Run:
    """What compare reads of one report; None where the report says nothing."""

    label: str  # "base" | "head"
    path: str
    stamp: int
    generated_at: str | None
    context: str | None
    budget: tuple[object, ...] | None
    revision_after: object
    stable: bool | None
    thresholds_sha256: str | None
    statistics: dict[str, str]  # metric -> its definition's statistic
    metrics: dict[str, Any]
    cases: list[tuple[str, dict[str, float | None]]]  # (case_id, compared values)


KINDS: dict[str, type | tuple[type, ...]] = {
    "an object": dict,
    "an array": list,
    "a string": str,
    "true or false": bool,
    "a number": (int, float),
}


def _field(path: str, node: Mapping[str, Any], key: str, kind: str, where: str) -> Any:
    """node[key] when it has `kind`; None when absent or null; refused when mistyped."""
    value = node.get(key)
    if value is None:
        return None
    mistyped = not isinstance(value, KINDS[kind]) or (
        kind == "a number" and isinstance(value, bool)
    )
    if mistyped:
        raise EvaluationInputError(path, f"{where}{key} must be {kind}")
    return value


def _read(document: object, label: str, path: str) -> _Run:
    if not isinstance(document, dict):
        raise EvaluationInputError(path, "not an evaluation report (not a JSON object)")
    stamp = document.get("taguru_evaluation")
    if isinstance(stamp, bool) or not isinstance(stamp, int) or stamp not in EVALUATION_STAMPS:
        shown = "none" if stamp is None else json.dumps(stamp)
        raise EvaluationInputError(
            path,
            f"taguru_evaluation must be within {EVALUATION_STAMPS.start}..="
            f"{EVALUATION_STAMPS.stop - 1}, got {shown}",
        )
    inputs = _field(path, document, "inputs", "an object", "") or {}
    corpus = _field(path, document, "corpus", "an object", "") or {}
    budget = _field(path, inputs, "budget", "an object", "inputs.")
    thresholds = _field(path, document, "thresholds", "an object", "") or {}
    statistics: dict[str, str] = {}
    definitions = _field(path, document, "definitions", "an object", "") or {}
    for name in definitions:
        entry = _field(path, definitions, name, "an object", "definitions.") or {}
        statistic = _field(path, entry, "statistic", "a string", f"definitions.{name}.")
        if statistic is not None:
            statistics[name] = statistic
    cases = []
    for index, case in enumerate(_field(path, document, "cases", "an array", "") or []):
        where = f"cases[{index}]."
        if not isinstance(case, dict):
            raise EvaluationInputError(path, f"cases[{index}] must be an object")
        case_id = _field(path, case, "case_id", "a string", where) or ""
        values = {m: _case_number(path, case, m, where) for m in COMPARED_METRICS}
        cases.append((case_id, values))
    return _Run(
        label=label,
        path=path,
        stamp=stamp,
        generated_at=_field(path, document, "generated_at", "a string", ""),
        context=_field(path, inputs, "context", "a string", "inputs."),
        budget=None if budget is None else tuple(budget.get(key) for key in BUDGET_KEYS),
        revision_after=_field(path, corpus, "revision_after", "an object", "corpus."),
        stable=_field(path, corpus, "stable", "true or false", "corpus."),
        thresholds_sha256=_field(path, thresholds, "sha256", "a string", "thresholds."),
        statistics=statistics,
        metrics=_field(path, document, "metrics", "an object", "") or {},
        cases=cases,
    )


def _case_number(path: str, case: Mapping[str, Any], metric: str, where: str) -> float | None:
    """One compared metric of one case, followed along its path in the case object."""
    *blocks, leaf = CASE_METRIC_PATHS[metric]
    node = case
    for key in blocks:
        node = _field(path, node, key, "an object", where)
        if node is None:
            return None
        where = f"{where}{key}."
    value = _field(path, node, leaf, "a number", where)
    return None if value is None else float(value)


# ----------------------------------------------------------------------------- comparing


def compare(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    base_path: str,
    head_path: str,
    *,
    generated_at: str,
) -> list[dict[str, Any]]:
    """The lines of changes.jsonl, header first; EvaluationInputError on a bad report.

    `generated_at` is when the comparison was made (the reference stamps the
    clock at compare time); passing it in keeps this function pure.
    """
    old, new = _read(base, "base", base_path), _read(head, "head", head_path)
    warnings = _mismatches(old, new)
    old_cases, new_cases = _index(old, warnings), _index(new, warnings)
    records: list[dict[str, Any]] = []
    counts = dict.fromkeys(("improved", "regressed", "added", "removed", "unchanged"), 0)
    for case_id in sorted(old_cases.keys() | new_cases.keys()):
        before, after = old_cases.get(case_id), new_cases.get(case_id)
        if before is not None and after is not None:
            kind, metrics = _classify(case_id, before, after, warnings)
        elif before is not None:
            kind, metrics = "removed", _one_sided(before, "base")
        else:
            kind, metrics = "added", _one_sided(after or {}, "head")
        counts[kind] += 1
        if kind != "unchanged":
            records.append({"kind": kind, "case_id": case_id, "metrics": metrics})
    header: dict[str, Any] = {
        "kind": "header",
        "taguru_evaluation_changes": CHANGES_VERSION,
        "generated_at": generated_at,
        "base": _identity(old),
        "head": _identity(new),
        "counts": {**counts, "cases_base": len(old_cases), "cases_head": len(new_cases)},
        "metrics": _aggregate_diff(old, new, warnings),
    }
    if warnings:
        header["warnings"] = warnings
    return [header, *records]


def render(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """changes.jsonl's bytes: one compact JSON object per line, UTF-8, non-ASCII kept."""
    text = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    )
    return text.encode("utf-8")


Values = dict[str, float | None]


def _classify(
    case_id: str, base: Values, head: Values, warnings: list[str]
) -> tuple[str, list[dict[str, Any]]]:
    changed: list[dict[str, Any]] = []
    for metric in COMPARED_METRICS:
        before, after = base[metric], head[metric]
        if before is None and after is None:
            continue
        if before is None or after is None:
            warnings.append(
                f"case '{case_id}': '{metric}' has a value on one side only — "
                "left out of the classification"
            )
            continue
        delta = after - before
        if abs(delta) > EPSILON:
            direction = "improved" if delta > 0 else "regressed"
            sides = {"base": before, "head": after}
            changed.append(
                {"metric": metric, "sides": sides, "delta": delta, "direction": direction}
            )
    directions = {entry["direction"] for entry in changed}
    # Quality gate first: any drop makes the case regressed, whatever else rose.
    kind = next((d for d in ("regressed", "improved") if d in directions), "unchanged")
    return kind, changed


def _one_sided(values: Values, side: str) -> list[dict[str, Any]]:
    """An added or removed case's values: nothing to diff against, so not_comparable."""
    return [
        {
            "metric": metric,
            "sides": {
                "base": value if side == "base" else None,
                "head": value if side == "head" else None,
            },
            "delta": None,
            "direction": "not_comparable",
        }
        for metric, value in values.items()
        if value is not None
    ]


def _index(run: _Run, warnings: list[str]) -> dict[str, Values]:
    indexed: dict[str, Values] = {}
    for case_id, values in run.cases:
        if case_id in indexed:
            warnings.append(
                f"{run.label}: duplicate case_id '{case_id}' — the last occurrence is compared"
            )
        indexed[case_id] = values
    return indexed


def _identity(run: _Run) -> dict[str, Any]:
    return {
        "path": run.path,
        "context": run.context,
        "taguru_evaluation": run.stamp,
        "generated_at": run.generated_at,
        "corpus_revision_after": run.revision_after,
        "corpus_stable": run.stable,
        "thresholds_sha256": run.thresholds_sha256,
    }


def _mismatches(base: _Run, head: _Run) -> list[str]:
    """What makes the two runs less than comparable; warned, never refused."""
    warnings = []
    if base.context != head.context:
        warnings.append(
            f"context differs: base {_shown(base.context)}, head {_shown(head.context)}"
        )
    if base.revision_after != head.revision_after:
        warnings.append("corpus.revision_after differs between base and head")
    for run in (base, head):
        if run.stable is False:
            warnings.append(f"{run.path}: corpus.stable is false — the corpus changed mid-run")
    if base.thresholds_sha256 != head.thresholds_sha256:
        warnings.append(
            f"thresholds file differs: base {_sha(base.thresholds_sha256)}, "
            f"head {_sha(head.thresholds_sha256)}"
        )
    if base.stamp != head.stamp:
        warnings.append(f"taguru_evaluation stamp differs: base {base.stamp}, head {head.stamp}")
    if base.budget != head.budget:
        warnings.append(
            f"budget differs: base {_budget(base.budget)}, head {_budget(head.budget)} — "
            "not an equal-budget comparison"
        )
    return warnings


def _shown(value: str | None) -> str:
    return "(none)" if value is None else f"'{value}'"


def _sha(value: str | None) -> str:
    return "none" if value is None else value[:12]


def _budget(limits: tuple[object, ...] | None) -> str:
    if limits is None:
        return "none (untruncated baseline)"
    return " ".join(
        f"{key}={json.dumps(value)}" for key, value in zip(BUDGET_KEYS, limits, strict=True)
    )


def _aggregate_diff(base: _Run, head: _Run, warnings: list[str]) -> list[dict[str, Any]]:
    """Every metric name in either run, each side read via its own definition."""
    diffs = []
    for metric in sorted(base.metrics.keys() | head.metrics.keys()):
        before, after = _scalar(base, metric, warnings), _scalar(head, metric, warnings)
        if before is None and after is None:
            continue
        diffs.append(
            {
                "metric": metric,
                "statistic": head.statistics.get(metric, base.statistics.get(metric)),
                "sides": {"base": before, "head": after},
                "delta": None if before is None or after is None else after - before,
            }
        )
    return diffs


def _scalar(run: _Run, metric: str, warnings: list[str]) -> float | None:
    if metric not in run.metrics:
        return None
    statistic = run.statistics.get(metric)
    if statistic is None:
        warnings.append(
            f"{run.label}: metric '{metric}' has no definitions entry — "
            "left out of the aggregate diff"
        )
        return None
    try:
        return scalar(statistic, run.metrics[metric])
    except ValueError as error:
        warnings.append(f"{run.label}: metric '{metric}': {error}")
        return None
