"""The ``--thresholds`` file: loading it, and checking a run against it (EVALUATE.md §3.6).

A person writes this file by hand and checks it in, so it is read strictly:
the stamp ``taguru_evaluate_thresholds`` must be exactly 1, no level accepts a
key it does not know, and a metric name or case_id that names nothing is an
error. A hand-edited file often has several typos at once, so `parse_thresholds`
reports every problem together, one per line, before the run makes any call.

`check` is pure: it reads the evaluation.json-shaped artifact (``corpus.stable``,
``cases``, ``metrics``, ``definitions``) and returns the artifact's
``thresholds`` block. A per-case metric the case never computed is skipped,
never violated; an aggregate with no samples is a violation.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.errors import EXIT_USAGE, TaguruRayError
from taguru_ray.evaluate.definitions import CASE_METRICS, DEFINITIONS, case_value, scalar

STAMP = "taguru_evaluate_thresholds"
VERSION = 1
TOP_KEYS = (STAMP, "aggregate", "cases", "allow_unstable_corpus")
CASES_KEYS = ("default", "overrides")
BOUND_KEYS = ("min", "max")
# Why a known metric can still be refused under cases.*: only these have one value per case.
PER_CASE = f" (cases.* takes only the per-case metrics: {', '.join(CASE_METRICS)})"


class ThresholdsError(TaguruRayError):
    """The thresholds file is unusable; the message lists every problem, one per line."""

    exit_code = EXIT_USAGE

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = list(problems)
        super().__init__("\n".join(f"{path}: {problem}" for problem in self.problems))


@dataclass(frozen=True)
class Bound:
    """At least one of min/max, finite, min <= max when both are given."""

    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Thresholds:
    """A loaded, validated thresholds file and the sha256 of its raw bytes."""

    sha256: str
    aggregate: Mapping[str, Bound] = field(default_factory=dict)
    case_default: Mapping[str, Bound] = field(default_factory=dict)
    case_overrides: Mapping[str, Mapping[str, Bound]] = field(default_factory=dict)
    allow_unstable_corpus: bool = False

    def case_bounds(self, case_id: str) -> dict[str, Bound]:
        """cases.default with this case's override laid over it, metric by metric."""
        merged = dict(self.case_default)
        merged.update(self.case_overrides.get(case_id, {}))
        return dict(sorted(merged.items()))


# ----------------------------------------------------------------------------- loading


def parse_thresholds(raw: bytes, path: str, case_ids: Collection[str]) -> Thresholds:
    """The thresholds file `raw` (read from `path`), checked against the catalog and
    the eval set's `case_ids`; ThresholdsError listing every problem found."""
    problems: list[str] = []
    document = _decode(raw, problems)
    if problems:
        raise ThresholdsError(path, problems)
    if not isinstance(document, dict):  # `null` included: it decodes, and is no object
        raise ThresholdsError(path, ["the file must hold one JSON object"])

    _check_stamp(document, problems)
    _unknown_keys(document, TOP_KEYS, "the top level", problems)
    allow = document.get("allow_unstable_corpus", False)
    if not isinstance(allow, bool):
        problems.append("allow_unstable_corpus must be true or false")

    aggregate = _bounds(document.get("aggregate", {}), "aggregate", DEFINITIONS, "", problems)
    cases = document.get("cases", {})
    if not isinstance(cases, dict):
        problems.append("cases must be an object with default and overrides")
        cases = {}
    _unknown_keys(cases, CASES_KEYS, "cases", problems)
    default = _bounds(cases.get("default", {}), "cases.default", CASE_METRICS, PER_CASE, problems)
    overrides: dict[str, dict[str, Bound]] = {}
    raw_overrides = cases.get("overrides", {})
    if not isinstance(raw_overrides, dict):
        problems.append("cases.overrides must be an object of case_id → bounds")
        raw_overrides = {}
    for case_id, bounds in raw_overrides.items():
        if case_id not in case_ids:
            problems.append(f"cases.overrides: unknown case_id '{case_id}' (not in eval.jsonl)")
        scope = f"cases.overrides.{case_id}"
        overrides[case_id] = _bounds(bounds, scope, CASE_METRICS, PER_CASE, problems)

    if problems:
        raise ThresholdsError(path, problems)
    return Thresholds(
        sha256=hashlib.sha256(raw).hexdigest(),
        aggregate=aggregate,
        case_default=default,
        case_overrides=overrides,
        allow_unstable_corpus=allow,
    )


def _decode(raw: bytes, problems: list[str]) -> object | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.append(f"not UTF-8 text ({error.reason} at byte {error.start})")
        return None
    try:
        # NaN/Infinity are not JSON; let them through as floats so the bound check
        # names them, as it names 1e400 (read as infinity).
        return json.loads(text)
    except json.JSONDecodeError as error:
        problems.append(f"not valid JSON: {error}")
        return None
    except RecursionError:  # json recurses per level: a deep file is refused, not a crash
        problems.append("not valid JSON: arrays and objects are nested too deeply to read")
        return None


def _check_stamp(document: Mapping[str, Any], problems: list[str]) -> None:
    if STAMP not in document:
        problems.append(f'the stamp is missing: the file must carry "{STAMP}": {VERSION}')
        return
    stamp = document[STAMP]
    if isinstance(stamp, bool) or not isinstance(stamp, int) or stamp != VERSION:
        problems.append(f"{STAMP} must be {VERSION}, got {json.dumps(stamp)}")


def _unknown_keys(
    node: Mapping[str, Any], allowed: Sequence[str], where: str, problems: list[str]
) -> None:
    for key in node:
        if key not in allowed:
            problems.append(f"{where}: unknown key '{key}' (allowed: {', '.join(allowed)})")


def _bounds(
    node: object, scope: str, known: Collection[str], hint: str, problems: list[str]
) -> dict[str, Bound]:
    """One metric → bound map; names outside `known` (`hint` says which are) and bad
    bounds are problems."""
    if not isinstance(node, dict):
        problems.append(f"{scope} must be an object of metric name → {{min, max}}")
        return {}
    bounds: dict[str, Bound] = {}
    for name, entry in node.items():
        if name not in known:
            problems.append(f"{scope}: unknown metric name '{name}'{hint}")
        bound = _bound(entry, f"{scope}: '{name}'", problems)
        if bound is not None:
            bounds[name] = bound
    return bounds


def _bound(entry: object, where: str, problems: list[str]) -> Bound | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: a bound must be an object with min and/or max")
        return None
    _unknown_keys(entry, BOUND_KEYS, where, problems)
    values: dict[str, float | None] = {}
    for key in BOUND_KEYS:
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            problems.append(f"{where}: {key} must be a number, got {json.dumps(value)}")
            return None
        values[key] = None if value is None else float(value)
    low, high = values["min"], values["max"]
    if low is None and high is None:
        problems.append(f"{where}: needs at least one of min/max")
        return None
    finite = True
    for key, value in values.items():
        if value is not None and not math.isfinite(value):
            problems.append(f"{where}: {key} {value} must be finite")
            finite = False
    if not finite:
        return None
    if low is not None and high is not None and low > high:
        problems.append(f"{where}: min {low} must be <= max {high}")
        return None
    return Bound(low, high)


# ----------------------------------------------------------------------------- checking

NO_SAMPLES = "no samples for this metric (n=0)"
UNSTABLE = (
    "the context's revision changed during the run (corpus.revision_before != "
    "corpus.revision_after) and allow_unstable_corpus is false"
)


def check(thresholds: Thresholds, artifact: Mapping[str, Any]) -> dict[str, Any]:
    """The artifact's ``thresholds`` block: aggregate bounds, then each case's, then the
    corpus gate; ``violations`` and ``skipped`` are left out when empty."""
    violations: list[dict[str, Any]] = []
    skipped: list[str] = []
    metrics = artifact.get("metrics") or {}
    definitions = artifact.get("definitions") or {}

    for metric, bound in sorted(thresholds.aggregate.items()):
        violation = _violation(
            "aggregate", None, metric, bound, _aggregate(metric, metrics, definitions)
        )
        if violation:
            violations.append(violation)

    for case in artifact.get("cases") or []:
        case_id = case.get("case_id", "")
        for metric, bound in thresholds.case_bounds(case_id).items():
            actual = case_value(case, metric)
            if actual is None:
                skipped.append(
                    f"case '{case_id}': '{metric}' not applicable — the case declared no "
                    "matching expectation, or its lane did not complete"
                )
                continue
            violation = _violation("case", case_id, metric, bound, actual)
            if violation:
                violations.append(violation)

    stable = (artifact.get("corpus") or {}).get("stable") is True
    if not stable and not thresholds.allow_unstable_corpus:
        violations.append(
            {"scope": "corpus", "metric": "corpus.stable", "actual": None, "reason": UNSTABLE}
        )

    block: dict[str, Any] = {
        "sha256": thresholds.sha256,
        "passed": not violations,
        "allow_unstable_corpus": thresholds.allow_unstable_corpus,
    }
    if violations:
        block["violations"] = violations
    if skipped:
        block["skipped"] = skipped
    return block


def _aggregate(
    metric: str, metrics: Mapping[str, Any], definitions: Mapping[str, Any]
) -> float | None:
    """A run-level value's scalar, its shape chosen by its definition's statistic."""
    if metric not in metrics:
        return None
    written = definitions.get(metric)
    statistic = written.get("statistic") if isinstance(written, Mapping) else None
    return scalar(statistic or DEFINITIONS[metric].statistic, metrics[metric])


def _violation(
    scope: str, case_id: str | None, metric: str, bound: Bound, actual: float | None
) -> dict[str, Any] | None:
    """The violation of `bound` by `actual`, or None; min is tested before max and only
    the first broken side is reported."""
    head: dict[str, Any] = {"scope": scope}
    if case_id is not None:
        head["case_id"] = case_id
    head["metric"] = metric
    if actual is None:
        return {**head, "actual": None, "reason": NO_SAMPLES}
    if bound.min is not None and actual < bound.min:
        side, threshold, reason = "min", bound.min, f"{actual:.6f} < min {bound.min:.6f}"
    elif bound.max is not None and actual > bound.max:
        side, threshold, reason = "max", bound.max, f"{actual:.6f} > max {bound.max:.6f}"
    else:
        return None
    return {**head, "bound": side, "threshold": threshold, "actual": actual, "reason": reason}
