"""The metric tables of ``taguru-ray metrics``, and the run-to-run comparison.

Every table has one row per segment, per context (only when the OUTs hold
more than one), per group (several OUTs, or a --ledger), per run (each
extract invocation, by run id, when the records span several) and for the
whole run, keyed by ``scope`` (segment/context/group/run_id/run) and
``name``. Quality tables (loss, coverage, corrections, labels, graph) list
the written, traced segments only; the cost-side tables (attempts, moves,
cost) list every segment, a failed one marked so; the ``failed`` table
counts the failed segments apart, each with the command that opens the piece
that never reached a valid answer. Rates are None ("-") when their
denominator is zero. It runs over 400 lines since the sessions' stage table joined
(issue 38): every table is one short builder, and they share the scopes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taguru_ray.contract.names import inspect_command
from taguru_ray.tools.inspect import Filter, build_report
from taguru_ray.tools.metrics import (
    ITEMS,
    MOVES,
    REASONS,
    STAGE_COUNTS,
    STATES,
    Fold,
    MetricsReport,
    Scope,
)
from taguru_ray.tools.records import attempts_log_path
from taguru_ray.tools.tables import Column, Table

KEYS = [Column("scope", "str", hidden=True), Column("name", "str")]
# The headline values --compare puts side by side; True when higher is better.
HEADLINE: dict[str, bool | None] = {
    "written": True,
    "failed": False,
    "assoc_loss": False,
    "coverage": True,
    "coverage_bytes": True,
    "correction_success": True,
    "stop_valid_share": True,
    "attempts": False,
    "moves": False,
    "labels_per_association": False,
    "concepts": None,
    "seconds": False,
    "input_tokens": False,
    "output_tokens": False,
    "cost_usd": False,
}


def ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def loss_rate(fold: Fold, kind: str, reason: str | None = None) -> float | None:
    lost = sum(n for (k, _), n in fold.lost.items() if k == kind)
    part = lost if reason is None else fold.lost[(kind, reason)]
    return ratio(part, fold.kept[kind] + lost)


def money(fold: Fold, priced: bool) -> float | None:
    """Dollars, or None without --prices or when some completion's model has no price."""
    return fold.money if priced and not fold.unpriced else None


def headline(fold: Fold, priced: bool) -> dict[str, Any]:
    """The summary values of one scope; quality ones stay None without a trace."""
    quality = fold.traced > 0
    return {
        "written": fold.written,
        "failed": fold.failed,
        "assoc_loss": loss_rate(fold, "association") if quality else None,
        "coverage": ratio(fold.covered, fold.paragraphs),
        "coverage_bytes": ratio(fold.covered_bytes, fold.paragraph_bytes),
        "correction_success": ratio(fold.adopted, fold.corrective),
        "stop_valid_share": ratio(fold.states["stop_valid"], fold.attempts),
        "attempts": fold.attempts,
        "moves": sum(fold.moves.values()),
        "labels_per_association": ratio(len(fold.labels), fold.associations),
        "concepts": len(fold.concepts) if quality else None,
        "seconds": round(fold.seconds, 6),
        "input_tokens": fold.input_tokens,
        "output_tokens": fold.output_tokens,
        "cost_usd": money(fold, priced),
    }


def tables(report: MetricsReport, priced: bool) -> list[Table]:
    quality = [s for s in report.scopes if s.kind != "segment" or s.fold.traced]
    stages = _stages(quality)  # only when the OUTs hold sessions extract's traces
    return [
        _summary(report.scopes, priced),
        _loss(quality),
        *([stages] if stages.rows else []),
        _table("coverage", "paragraph coverage — paragraphs a kept item cites", quality, _coverage),
        _table("corrections", "correction success — corrective answers adopted", quality, _corr),
        _attempts(report.scopes),
        _moves(report.scopes),
        _table("labels", "label concentration — kept associations", quality, _labels),
        _table("graph", "graph shape — kept associations", quality, _graph),
        _cost(report.scopes, priced),
        _failed(report, priced),
    ]


def name_of(scope: Scope) -> str:
    if scope.kind in ("context", "group"):
        return f"{scope.kind} {scope.name}"
    if scope.kind == "run_id":
        return f"run {scope.name}"
    suffix = {"failed": " (failed)", "untraced": " (untraced)"}.get(scope.status, "")
    return scope.name + suffix


def _row(scope: Scope, **values: Any) -> dict[str, Any]:
    return {"scope": scope.kind, "name": name_of(scope)} | values


Builder = Callable[[Fold], dict[str, Any]]
_COLUMNS: dict[str, list[Column]] = {
    "coverage": [
        Column("paragraphs", "int"),
        Column("covered", "int"),
        Column("rate", "float"),
        Column("bytes", "int"),
        Column("covered_bytes", "int"),
        Column("byte_rate", "float"),
    ],
    "corrections": [
        Column("corrective", "int"),
        Column("adopted", "int"),
        Column("success", "float"),
    ],
    "labels": [
        Column("associations", "int"),
        Column("labels", "int"),
        Column("top_label", "str"),
        Column("top_share", "float"),
        Column("labels_per_association", "float"),
    ],
    "graph": [
        Column("associations", "int"),
        Column("concepts", "int"),
        Column("concepts_per_association", "float"),
    ],
}


def _table(name: str, title: str, scopes: list[Scope], build: Builder) -> Table:
    rows = [_row(scope, **build(scope.fold)) for scope in scopes]
    return Table(name, title, [*KEYS, *_COLUMNS[name]], rows)


def _coverage(fold: Fold) -> dict[str, Any]:
    return {
        "paragraphs": fold.paragraphs,
        "covered": fold.covered,
        "rate": ratio(fold.covered, fold.paragraphs),
        "bytes": fold.paragraph_bytes,
        "covered_bytes": fold.covered_bytes,
        "byte_rate": ratio(fold.covered_bytes, fold.paragraph_bytes),
    }


def _corr(fold: Fold) -> dict[str, Any]:
    success = ratio(fold.adopted, fold.corrective)
    return {"corrective": fold.corrective, "adopted": fold.adopted, "success": success}


def _labels(fold: Fold) -> dict[str, Any]:
    top = fold.labels.most_common(1)
    return {
        "associations": fold.associations,
        "labels": len(fold.labels),
        "top_label": top[0][0] if top else None,
        "top_share": ratio(top[0][1], fold.associations) if top else None,
        "labels_per_association": ratio(len(fold.labels), fold.associations),
    }


def _graph(fold: Fold) -> dict[str, Any]:
    return {
        "associations": fold.associations,
        "concepts": len(fold.concepts),
        "concepts_per_association": ratio(len(fold.concepts), fold.associations),
    }


def _summary(scopes: list[Scope], priced: bool) -> Table:
    columns = [
        *KEYS,
        Column("written", "int"),
        Column("failed", "int"),
        Column("untraced", "int", optional=True),
        Column("assoc_loss", "float"),
        Column("coverage_bytes", "float"),
        Column("correction_success", "float"),
        Column("stop_valid_share", "float"),
        Column("attempts", "int"),
        Column("moves", "int"),
        Column("seconds", "float", digits=2),
        Column("input_tokens", "int"),
        Column("output_tokens", "int"),
        Column("cost_usd", "float", optional=True, digits=4),
    ]
    rows = []
    for scope in scopes:
        values = headline(scope.fold, priced)
        rows.append(_row(scope, untraced=scope.fold.untraced, **values))
    title = "summary — per segment, context, group and run"
    return Table("summary", title, columns, rows)


def _loss(scopes: list[Scope]) -> Table:
    columns = [*KEYS, Column("item", "str"), Column("kept", "int"), Column("lost", "int")]
    columns += [Column(reason, "int") for reason in REASONS]
    columns += [Column("rate", "float")] + [Column(f"{r}_rate", "float") for r in REASONS]
    rows = []
    for scope in scopes:
        fold = scope.fold
        for kind in ITEMS:
            lost = sum(n for (k, _), n in fold.lost.items() if k == kind)
            if not fold.kept[kind] + lost:
                continue
            row = _row(scope, item=kind, kept=fold.kept[kind], lost=lost)
            row.update({reason: fold.lost[(kind, reason)] for reason in REASONS})
            row["rate"] = loss_rate(fold, kind)
            row.update({f"{r}_rate": loss_rate(fold, kind, r) for r in REASONS})
            rows.append(row)
    return Table("loss", "loss — lost ÷ (kept + lost), by item and reason", columns, rows)


def _stages(scopes: list[Scope]) -> Table:
    """`sessions extract`'s model stages (P17): one row per scope and stage it ran."""
    columns = [*KEYS, Column("stage", "str")]
    columns += [Column(key, "int") for key in STAGE_COUNTS]
    columns += [Column("removed", "int"), Column("removed_by", "str"),
                Column("loss_rate", "float")]  # fmt: skip
    rows = []
    for scope in scopes:
        counts = scope.fold.stage_counts
        for stage in dict.fromkeys(name for name, _ in counts):
            row = _row(scope, stage=stage, **{key: counts[(stage, key)] for key in STAGE_COUNTS})
            by = {k[len("removed:") :]: n for (s, k), n in counts.items()
                  if s == stage and k.startswith("removed:") and n}  # fmt: skip
            row["removed"] = sum(by.values())
            row["removed_by"] = " ".join(f"{k}={n}" for k, n in sorted(by.items()))
            row["loss_rate"] = ratio(row["stated"] - row["kept"], row["stated"])
            rows.append(row)
    title = (
        "stages — sessions extract's model stages: asks, turns answered, facts stated, kept "
        "by the checks, removed by check, flagged by review; loss = (stated − kept) ÷ stated"
    )
    return Table("stages", title, columns, rows)


def _attempts(scopes: list[Scope]) -> Table:
    columns = [*KEYS, Column("attempts", "int"), Column("replayed", "int", optional=True)]
    for state in STATES:
        columns += [
            Column(state, "int", optional=True),
            Column(f"{state}_share", "float", optional=True),
        ]
    columns.append(Column("transport_retries", "int", optional=True))
    columns += [Column("gleaning", "int", optional=True), Column("gleaned", "int", optional=True)]
    rows = []
    for scope in scopes:
        fold = scope.fold
        row = _row(scope, attempts=fold.attempts, replayed=fold.replayed)
        for state in STATES:
            row[state] = fold.states[state]
            row[f"{state}_share"] = ratio(fold.states[state], fold.attempts)
        row["transport_retries"] = fold.transport_retries
        row["gleaning"] = sum(fold.gleanings.values())
        row["gleaned"] = fold.gleanings["stop_valid"]
        rows.append(row)
    title = (
        "attempts — extraction completions by state (replayed ones apart, never in a sum; "
        "gleaning passes apart, gleaned = those that answered)"
    )
    return Table("attempts", title, columns, rows)


def _moves(scopes: list[Scope]) -> Table:
    columns = [*KEYS, Column("moves", "int")]
    columns += [Column(kind, "int", optional=True) for kind in MOVES]
    rows = [
        _row(scope, moves=sum(scope.fold.moves.values()), **{k: scope.fold.moves[k] for k in MOVES})
        for scope in scopes
    ]
    return Table("moves", "ladder moves", columns, rows)


def _cost(scopes: list[Scope], priced: bool) -> Table:
    columns = [
        *KEYS,
        Column("completions", "int"),
        Column("gleaning", "int", optional=True),
        Column("seconds", "float", digits=2),
        Column("input_tokens", "int"),
        Column("output_tokens", "int"),
        Column("cost_usd", "float", optional=True, digits=4),
    ]
    rows = [
        _row(
            scope,
            completions=scope.fold.attempts + sum(scope.fold.gleanings.values()),
            gleaning=sum(scope.fold.gleanings.values()),
            seconds=round(scope.fold.seconds, 6),
            input_tokens=scope.fold.input_tokens,
            output_tokens=scope.fold.output_tokens,
            cost_usd=money(scope.fold, priced),
        )
        for scope in scopes
    ]
    return Table("cost", "cost — time, tokens and money of live completions", columns, rows)


def _failed(report: MetricsReport, priced: bool) -> Table:
    columns = [
        *KEYS,
        Column("attempts", "int"),
        Column("moves", "int"),
        Column("seconds", "float", digits=2),
        Column("input_tokens", "int"),
        Column("output_tokens", "int"),
        Column("cost_usd", "float", optional=True, digits=4),
        Column("next", "str"),
    ]
    rows = []
    for scope in report.segments:
        if scope.status != "failed" or scope.segment is None or scope.segment.attempts is None:
            continue
        fold = scope.fold
        log = attempts_log_path(scope.out or report.out, scope.segment.stem)
        opened = build_report(log, scope.segment.attempts, Filter()).next_piece
        rows.append(
            _row(
                scope,
                name=scope.name,
                attempts=fold.attempts,
                moves=sum(fold.moves.values()),
                seconds=round(fold.seconds, 6),
                input_tokens=fold.input_tokens,
                output_tokens=fold.output_tokens,
                cost_usd=money(fold, priced),
                next=inspect_command(log, opened.piece_id) if opened else None,
            )
        )
    title = "failed — segments with an attempts log and no source file, counted apart"
    return Table("failed", title, columns, rows)


def compare(this: MetricsReport, other: MetricsReport, priced: bool) -> tuple[Table, list[str]]:
    """This --out minus the other: every headline value of the run, and each shared
    segment's values that changed. Returns the table and a note on unshared segments."""
    columns = [
        *KEYS,
        Column("metric", "str"),
        Column("other", "num", digits=4),
        Column("this", "num", digits=4),
        Column("delta", "num", digits=4),
        Column("change", "str"),
    ]
    rows = _compared(this.run, other.run, priced, changed_only=False)
    mine = {scope.name: scope for scope in this.segments}
    theirs = {scope.name: scope for scope in other.segments}
    for name in sorted(mine.keys() & theirs.keys()):
        rows += _compared(mine[name], theirs[name], priced, changed_only=True)
    notes = []
    for label, names in (
        ("only in this --out", sorted(mine.keys() - theirs.keys())),
        ("only in the other", sorted(theirs.keys() - mine.keys())),
    ):
        if names:
            notes.append(f"{label}: {', '.join(names)}")
    title = f"compare — this --out ({this.out}) minus the other ({other.out})"
    return Table("compare", title, columns, rows), notes


def _compared(
    this: Scope, other: Scope, priced: bool, *, changed_only: bool
) -> list[dict[str, Any]]:
    now, was = headline(this.fold, priced), headline(other.fold, priced)
    rows = []
    for metric, higher_is_better in HEADLINE.items():
        a, b = now[metric], was[metric]
        if a is None and b is None:
            continue
        delta = None if a is None or b is None else round(a - b, 9)
        if changed_only and delta == 0:
            continue
        if delta is None or higher_is_better is None:
            change = None
        elif delta == 0:
            change = "same"
        else:
            change = "better" if (delta > 0) == higher_is_better else "worse"
        rows.append(_row(this, metric=metric, other=b, this=a, delta=delta, change=change))
    return rows
