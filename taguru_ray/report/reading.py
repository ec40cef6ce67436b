"""What a report shows, read from the records: extract --out folders or a benchmark
results directory, folded by the readers `taguru-ray metrics` and `benchmark compare` use.

An extract --out's records carry no clock (an attempt has its duration, not its
start), so its series run over completion order; a benchmark's runs/*.jsonl stamp
every record (``ts``), so its series run over seconds. Nothing here draws.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec

from taguru_ray.benchmark.compare.wide import WideRow, wide_rows
from taguru_ray.contract.records.attempts import AttemptRecord, MoveRecord
from taguru_ray.contract.records.sidecar import GatewayRecord
from taguru_ray.contract.records.trace import LossTrace
from taguru_ray.documents.converted import describe
from taguru_ray.errors import UsageError
from taguru_ray.pricing.table import Prices
from taguru_ray.report.segments import Knowledge, read_knowledge
from taguru_ray.tools.metric_tables import headline, money
from taguru_ray.tools.metrics_read import collect_urls, report_notes
from taguru_ray.tools.records import Lines, RunModels, read_lines


@dataclass(frozen=True)
class Completion:
    """One model call: what it cost and how it ended; ``ts`` its end when the records
    carry a clock (a benchmark's), else None."""

    source: str
    state: str
    seconds: float
    input_tokens: int
    output_tokens: int
    ts: float | None = None


@dataclass(frozen=True)
class SegmentRow:
    name: str
    status: str
    seconds: float
    input_tokens: int
    output_tokens: int
    cost: float | None


@dataclass
class RunView:
    """One run's facts as the page shows them: an extract --out, or a benchmark cell."""

    label: str
    completions: list[Completion] = field(default_factory=list)
    moves: Counter[str] = field(default_factory=Counter)
    move_sources: dict[str, Counter[str]] = field(default_factory=dict)  # move -> sources
    failures: dict[str, Counter[str]] = field(default_factory=dict)  # state -> sources
    removals: dict[str, Counter[str]] = field(default_factory=dict)  # "item reason" -> sources
    segments: list[SegmentRow] = field(default_factory=list)
    gateways: list[dict[str, Any]] = field(default_factory=list)  # sidecar gateway records
    summary: dict[str, Any] = field(default_factory=dict)  # `metrics`' headline values
    bound: str | None = None  # a benchmark cell's bound
    out: str | None = None  # an extract --out, as given
    knowledge: Knowledge | None = None  # its segments and what they hold (extract only)
    # A converted document's facts by where they came from (ADR 0078): (segment, page,
    # slide or heading path, paragraphs there, facts citing them), in trace order.
    located: list[tuple[str, str, int, int]] = field(default_factory=list)

    @property
    def clocked(self) -> bool:
        return bool(self.completions) and all(c.ts is not None for c in self.completions)


@dataclass
class ReportData:
    title: str
    runs: list[RunView]
    wide: list[WideRow] = field(default_factory=list)  # a benchmark's cells
    notes: list[str] = field(default_factory=list)


def is_benchmark(url: str) -> bool:
    """A `benchmark extract` results directory: a manifest.json and a runs/ folder."""
    fs, root = fsspec.core.url_to_fs(url)
    return bool(fs.isfile(posixpath.join(root, "manifest.json"))) and bool(
        fs.isdir(posixpath.join(root, "runs"))
    )


def read_outs(urls: Sequence[str], prices: Prices, diagnostics: Sequence[str]) -> ReportData:
    """Extract --out folders, one run each; gateway records from the sidecars given."""
    gateways = [record for path in diagnostics for record in _gateways(path)]
    runs = []
    notes: list[str] = []
    for url in urls:
        report = collect_urls([url], prices)
        notes += report_notes(report)
        view = RunView(url, summary=headline(report.run.fold, bool(prices.per_model)), out=url)
        run_ids: set[str] = set()
        for scope in report.segments:
            fold = scope.fold
            view.segments.append(
                SegmentRow(
                    scope.name,
                    scope.status,
                    fold.seconds,
                    fold.input_tokens,
                    fold.output_tokens,
                    money(fold, bool(prices.per_model)),
                )
            )
            files = scope.segment
            if files is None:
                continue
            if files.attempts is not None:
                run_ids |= _fold_attempts(view, scope.name, files.attempts)
            if files.trace is not None:
                _fold_losses(view, scope.name, files.trace)
            if files.status == "failed":
                view.failures.setdefault("segment failed", Counter())[scope.name] += 1
        view.gateways = [g for g in gateways if g.get("run_id") in run_ids]
        view.knowledge = read_knowledge(
            url, [(s.name, s.segment) for s in report.segments if s.segment is not None]
        )
        runs.append(view)
    title = urls[0] if len(urls) == 1 else f"{len(urls)} runs"
    return ReportData(title, runs, notes=notes)


def _fold_attempts(view: RunView, name: str, log: Lines) -> set[str]:
    """Completions, failures and moves of one segment's attempts log; its run ids."""
    models = RunModels()
    run_ids = set()
    for record in log.records:
        if models.see(record):
            if isinstance(models.run, str):
                run_ids.add(models.run)
            continue
        if move := MoveRecord.view(record):
            view.moves[str(move.move)] += 1
            view.move_sources.setdefault(str(move.move), Counter())[name] += 1
        elif (attempt := AttemptRecord.view(record)) and attempt.replayed_from is None:
            state = str(attempt.state)
            view.completions.append(
                Completion(
                    name,
                    state,
                    _number(attempt.elapsed_seconds),
                    int(_number(attempt.input_tokens)),
                    int(_number(attempt.output_tokens)),
                )
            )
            if state != "stop_valid":
                view.failures.setdefault(state, Counter())[name] += 1
    return run_ids


def _fold_losses(view: RunView, name: str, trace: Lines) -> None:
    places: dict[str, list[int]] = {}  # where -> [paragraphs, facts]
    for record in trace.records:
        if loss := LossTrace.view(record):
            view.removals.setdefault(f"{loss.item} {loss.reason}", Counter())[name] += 1
        elif record.get("type") == "paragraph" and isinstance(record.get("locator"), dict):
            held = places.setdefault(describe(record["locator"]), [0, 0])
            held[0] += 1
            items = record.get("items")
            held[1] += items if isinstance(items, int) and not isinstance(items, bool) else 0
    view.located += [(name, where, held[0], held[1]) for where, held in places.items()]


def _gateways(path: str) -> list[dict[str, Any]]:
    """The gateway records of a diagnostics sidecar (CONTRACT.md section 4.3)."""
    try:
        with fsspec.open(path, "rb") as handle:
            lines = read_lines(handle.read())
    except OSError as error:
        raise UsageError(f"--diagnostics {path}: {error.strerror or error}") from None
    return [r for r in lines.of_type(GatewayRecord.TYPE) if GatewayRecord.view(r) is not None]


def read_benchmark(url: str) -> ReportData:
    """A `benchmark extract` results directory: a run per cell from runs/*.jsonl, and
    the wide table of measurements.json (computed by `benchmark compare` when absent)."""
    fs, root = fsspec.core.url_to_fs(url)
    root = root.rstrip("/") or root
    manifest = json.loads(fs.cat_file(posixpath.join(root, "manifest.json")))
    measured = posixpath.join(root, "measurements.json")
    if fs.isfile(measured):
        measurements = json.loads(fs.cat_file(measured))
    else:
        from taguru_ray.benchmark.compare import compute

        measurements = compute(url).measurements.to_json()
    gpu_of = {
        str(m.get("model_id")): m.get("gpu")
        for m in manifest.get("models", [])
        if isinstance(m, dict)
    }
    wide = wide_rows(measurements, gpu_of)
    bounds = {row.cell_id: row.bound for row in wide}
    runs = []
    runs_dir = posixpath.join(root, "runs")
    listed = fs.ls(runs_dir, detail=False) if fs.isdir(runs_dir) else []
    for path in sorted(p for p in listed if p.endswith(".jsonl")):  # one level, no walk
        cell = posixpath.basename(path).removesuffix(".jsonl")
        view = _cell_view(cell, read_lines(fs.cat_file(path)))
        view.bound = bounds.get(cell)
        runs.append(view)
    return ReportData(f"benchmark {manifest.get('run_id', url)}", runs, wide)


def _cell_view(cell: str, lines: Lines) -> RunView:
    view = RunView(cell)
    per_segment: dict[str, list[Completion]] = {}
    for record in lines.records:
        kind = record.get("kind")
        source = str(record.get("segment_id") or record.get("source") or "?")
        if kind == "attempt":
            meta = record.get("provider_metadata")
            meta = meta if isinstance(meta, dict) else {}
            ts = record.get("ts")
            completion = Completion(
                source,
                str(record.get("state")),
                _number(record.get("elapsed_seconds")),
                int(_number(meta.get("input_tokens"))),
                int(_number(meta.get("output_tokens"))),
                float(ts) if isinstance(ts, int | float) else None,
            )
            view.completions.append(completion)
            per_segment.setdefault(source, []).append(completion)
            if completion.state != "stop_valid":
                view.failures.setdefault(completion.state, Counter())[source] += 1
        elif kind == "move":
            move = str(record.get("move"))
            view.moves[move] += 1
            view.move_sources.setdefault(move, Counter())[source] += 1
    for source, calls in per_segment.items():
        view.segments.append(
            SegmentRow(
                source,
                "written",
                sum(c.seconds for c in calls),
                sum(c.input_tokens for c in calls),
                sum(c.output_tokens for c in calls),
                None,
            )
        )
    view.summary = {
        "attempts": len(view.completions),
        "seconds": round(sum(c.seconds for c in view.completions), 3),
        "input_tokens": sum(c.input_tokens for c in view.completions),
        "output_tokens": sum(c.output_tokens for c in view.completions),
    }
    return view


def _number(value: Any) -> float:
    """A figure of a record as a finite float, 0 for anything else (a non-finite number
    cannot reach here from `read_lines`; a benchmark cell's file is read the same way)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return max(number, 0.0)
    return 0.0
