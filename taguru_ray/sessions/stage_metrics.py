"""P17 metrics: per stage and per session, folded from the units the asks left.

For each stage: ``batches`` asked about, ``asked`` (completions, corrective turns
included), ``answered`` (turns the checked answers covered), ``stated`` (facts the
answers stated before the checks), ``kept`` (drafts the checks left), ``removed`` by
check (``schema``, ``coverage``, ``verbatim``, ``empty``, ``padding``, ``size``,
``redaction``, ``attestation``, ``vocabulary``, ``stage_rule``, ``write``), and
``flagged`` (review flags on its drafts). The review stage counts its asks and the
flags it raised. Read from checkpointed units, so a resumed run reports what the
asks cost when they were made. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from taguru_ray.contract.records import Record

COUNTS = ("batches", "asked", "answered", "stated", "kept", "flagged")


def fold(
    stages: Sequence[str],
    units: Iterable[Record],
    extra_losses: Iterable[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """One ``{"stage", counts…, "removed": {check: n}}`` per stage run, in run order."""
    rows = {name: dict.fromkeys(COUNTS, 0) | {"removed": Counter()} for name in stages}
    for unit in units:
        name = unit.get("stage", "fact")
        if name not in rows:
            continue
        row = rows[name]
        row["asked"] += unit.get("asked", 1)
        if "flags" in unit:  # a review unit
            row["flagged"] += len(unit["flags"])
            for flag in unit["flags"]:
                if flag.get("stage") in rows:
                    rows[flag["stage"]]["flagged"] += 1
            continue
        row["batches"] += 1
        row["answered"] += unit.get("answered", 0)
        row["stated"] += unit.get("stated", 0)
        row["kept"] += len(unit["drafts"])
        row["removed"].update(loss.get("check", "other") for loss in unit["losses"])
    for loss in extra_losses:
        if loss.get("stage") in rows:
            rows[loss["stage"]]["removed"][loss.get("check", "other")] += 1
    return [
        {"stage": name, **{k: v for k, v in row.items() if k != "removed"},
         "removed": dict(sorted(row["removed"].items()))}
        for name, row in rows.items()
    ]  # fmt: skip


def total(per_stage: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The session's sums over its stages (review's own flag count not double-counted)."""
    removed: Counter[str] = Counter()
    out = dict.fromkeys(COUNTS, 0)
    for row in per_stage:
        for key in COUNTS:
            if not (key == "flagged" and row["stage"] == "review"):
                out[key] += row[key]
        removed.update(row["removed"])
    return {**out, "removed": dict(sorted(removed.items()))}
