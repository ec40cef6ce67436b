"""``taguru-ray metrics``: --out folders' records folded into the metric values of seed 000 (#784).

One `Fold` per segment, from its trace (quality) and attempts log (cost),
merged into the seed's scopes: per segment, per context (when there are
several), per group (each OUT is a group, or a ``--ledger`` names them), per
run (each extract invocation, by ``run_id``: its completions and moves, and
the quality of the files it wrote) when the records span several, and the
run of everything loaded. The definitions:

- **loss rate** per item kind (association, alias, question) and reason
  (removed, dropped, duplicate): lost ÷ (kept + lost), kept from the trace's
  ``item`` records (concept and label aliases count as alias), lost from its
  ``loss`` records.
- **paragraph coverage**: covered ÷ all ``paragraph`` records, and the same
  weighted by the paragraphs' bytes.
- **correction success**: corrective attempts (carrying ``corrects``) whose
  answer was adopted — a trace ``piece`` record names it — ÷ corrective
  attempts. Adoption is read off the trace, so only written segments count,
  and only the runs that trace was built from (the run that wrote it, and
  those its pieces reuse): an older run a replay superseded adopts nothing.
- **attempt states**: extraction completions by state, and their shares.
  Gleaning passes (seed 002's ``stage: "gleaning"``) are counted apart by
  state: they extend an accepted answer, so they are neither attempts at one
  nor corrections; their time and tokens are in the cost like any call's.
- **ladder moves**: ``move`` records by kind.
- **label concentration**: distinct labels of the kept associations, the top
  label's share of them, distinct labels per association.
- **graph shape**: associations, distinct concepts (subjects and objects).
- **time, tokens, money**: the sum of ``elapsed_seconds``, input and output
  tokens, and tokens × the run's model price (``--prices``).

A completion carrying ``replayed_from`` was no model call: its time and
tokens restate the original's, so it is left out of every sum (counted apart
as replayed), and so is a ladder move that followed one. A segment with an
attempts log and no trace failed: it is counted under failed, its attempts,
moves and cost are in every scope's sums, its quality values stay empty. A
segment whose source file exists but whose trace does not (the advisory
trace write failed) is counted as written, untraced, with no quality values.

Its length (over 400 lines) is one fold's: every scope folds the same records
by the same rules; `metric_tables.py` renders them.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records.attempts import (
    AttemptRecord,
    MoveRecord,
)
from taguru_ray.contract.records.trace import (
    AssociationItem,
    LossTrace,
    ParagraphTrace,
    PieceTrace,
    SegmentTrace,
)
from taguru_ray.errors import UsageError
from taguru_ray.pricing.table import Prices
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.records import Lines, RunModels, SegmentFiles, attempt_key, segment_files

STATES = (
    "stop_valid",
    "stop_malformed",
    "length_limited",
    "empty",
    "refusal",
    "timeout",
    "transport",
)
MOVES = ("escalate", "demote", "split", "runaway")
ITEMS = ("association", "alias", "question")
REASONS = ("removed", "dropped", "duplicate")
UNKNOWN_CONTEXT = "(unknown)"
UNKNOWN_RUN = "(unknown)"
GLEANING = "gleaning"
_ITEM_KIND = {
    "association": "association",
    "question": "question",
    "concept": "alias",
    "label": "alias",
}


@dataclass
class Fold:
    """The countable facts of one scope; rates are derived from these, never summed."""

    written: int = 0
    failed: int = 0
    untraced: int = 0
    traced: int = 0  # segments whose quality values exist
    kept: Counter[str] = field(default_factory=Counter)  # item kind -> kept
    lost: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, reason) -> lost
    paragraphs: int = 0
    covered: int = 0
    paragraph_bytes: int = 0
    covered_bytes: int = 0
    corrective: int = 0
    adopted: int = 0
    states: Counter[str] = field(default_factory=Counter)
    gleanings: Counter[str] = field(default_factory=Counter)  # gleaning passes by state
    replayed: int = 0
    transport_retries: int = 0
    moves: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)  # kept association label -> uses
    concepts: set[str] = field(default_factory=set)
    seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    money: float = 0.0
    unpriced: int = 0  # completions whose model has no price
    unpriced_models: set[str] = field(default_factory=set)
    unreadable_lines: int = 0
    built_by: set[str] = field(default_factory=set)  # run ids the written trace was built from
    # `sessions extract`'s P17 counts, (model stage, count) -> n, from the trace's `stage`
    # lines; a count is asked, answered, stated, kept, flagged or removed:<check>.
    stage_counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def attempts(self) -> int:
        return sum(self.states.values())

    @property
    def associations(self) -> int:
        return self.kept["association"]

    def merge(self, other: Fold) -> None:
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, Counter):
                mine.update(value)
            elif isinstance(value, set):
                mine |= value
            else:
                setattr(self, name, mine + value)


def fold_segment(segment: SegmentFiles, prices: Prices) -> Fold:
    """One segment's fold: quality from its trace (when written), cost from its attempts log."""
    total = Fold()
    for fold in fold_segment_runs(segment, prices).values():
        total.merge(fold)
    return total


def fold_segment_runs(segment: SegmentFiles, prices: Prices) -> dict[str, Fold]:
    """One segment's fold split by run: the trace's quality, and the segment's written or
    failed count, go to the run that wrote it (else the last run of its attempts log);
    each completion and move to the run that made it."""
    runs: dict[str, Fold] = {}

    def at(run_id: Any) -> Fold:
        key = run_id if isinstance(run_id, str) and run_id else UNKNOWN_RUN
        return runs.setdefault(key, Fold())

    if segment.attempts is not None:  # runs in the order they ran
        for record in segment.attempts.of_type("segment"):
            at(record.get("run_id"))
    status = segment.status
    owner = _run_of(segment.attempts, last=True)
    adopted: set[tuple[str, int]] | None = None
    built_by: set[str] = set()
    if segment.trace is not None:
        owner = _run_of(segment.trace, last=False) or owner
        fold = at(owner)
        fold.traced = 1
        adopted = _fold_trace(fold, segment.trace)
        built_by = set(fold.built_by)
        fold.unreadable_lines += segment.trace.unreadable
    fold = at(owner)
    fold.written, fold.failed = int(status != "failed"), int(status == "failed")
    fold.untraced = int(status == "untraced")
    if segment.attempts is not None:
        _fold_attempts(at, segment.attempts, prices, adopted, built_by)
        at(owner).unreadable_lines += segment.attempts.unreadable
    return runs


def _run_of(lines: Lines | None, *, last: bool) -> str | None:
    """The run id of the first (a trace's writer) or last segment record."""
    if lines is None:
        return None
    ids = [r["run_id"] for r in lines.of_type("segment") if isinstance(r.get("run_id"), str)]
    return (ids[-1] if last else ids[0]) if ids else None


def _fold_trace(fold: Fold, trace: Lines) -> set[tuple[str, int]]:
    """Items, losses, paragraphs; returns the attempts the written pieces adopted."""
    adopted = set()
    for record in trace.records:
        if segment := SegmentTrace.view(record):
            if isinstance(segment.run_id, str):
                fold.built_by.add(segment.run_id)
        elif (item := AssociationItem.view(record)) and record.get("item") in _ITEM_KIND:
            fold.kept[_ITEM_KIND[str(record.get("item"))]] += 1
            if item.item == "association":
                fold.labels[str(item.label)] += 1
                fold.concepts.update((str(item.subject), str(item.object)))
        elif record.get("type") == "stage" and isinstance(record.get("stage"), str):
            _fold_stage(fold, record)
        elif loss := LossTrace.view(record):
            fold.lost[(str(loss.item), str(loss.reason))] += 1
        elif paragraph := ParagraphTrace.view(record):
            size = _count(paragraph.bytes)
            fold.paragraphs += 1
            fold.paragraph_bytes += size
            if paragraph.covered is True:
                fold.covered += 1
                fold.covered_bytes += size
        elif (piece := PieceTrace.view(record)) and (key := attempt_key(piece.attempt)):
            adopted.add(key)
            fold.built_by.add(key[0])
    return adopted


STAGE_COUNTS = ("batches", "asked", "answered", "stated", "kept", "flagged")


def _fold_stage(fold: Fold, record: Mapping[str, Any]) -> None:
    """One session's counts for one model stage (a `sessions extract` trace's P17 line)."""
    stage = str(record["stage"])
    for key in STAGE_COUNTS:
        fold.stage_counts[(stage, key)] += _count(record.get(key))
    removed = record.get("removed")
    for check, n in removed.items() if isinstance(removed, dict) else ():
        fold.stage_counts[(stage, f"removed:{check}")] += _count(n)


def _fold_attempts(
    at: Callable[[Any], Fold],
    log: Lines,
    prices: Prices,
    adopted: set[tuple[str, int]] | None,
    built_by: set[str],
) -> None:
    """States, corrections (only when `adopted` is known), moves, time, tokens, money —
    each into the fold of the run that made it (`at`)."""
    models = RunModels()
    replayed_piece: dict[str, bool] = {}  # piece id -> its latest completion was replayed
    for record in log.records:
        if models.see(record):
            continue
        if move := MoveRecord.view(record):
            if not replayed_piece.get(str(move.piece_id)):
                at(record.get("run_id", models.run)).moves[str(move.move)] += 1
        elif attempt := AttemptRecord.view(record):
            fold = at(record.get("run_id", models.run))
            replayed = attempt_key(attempt.replayed_from) is not None
            replayed_piece[str(attempt.piece_id)] = replayed
            if replayed:
                fold.replayed += 1
                continue
            state = str(attempt.state)
            if attempt.stage == GLEANING:
                fold.gleanings[state] += 1
            else:
                fold.states[state] += 1
            _fold_cost(fold, attempt, models.of(attempt.run_id), prices)
            if adopted is None or attempt.run_id not in built_by:
                continue
            if attempt_key(attempt.corrects) and attempt.stage != GLEANING:
                fold.corrective += 1
                fold.adopted += attempt_key(record) in adopted


def _fold_cost(fold: Fold, attempt: AttemptRecord, model: str | None, prices: Prices) -> None:
    fold.transport_retries += _count(attempt.transport_retries)
    seconds = attempt.elapsed_seconds
    if (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
    ):
        fold.seconds += seconds
    tokens_in, tokens_out = _count(attempt.input_tokens), _count(attempt.output_tokens)
    fold.input_tokens += tokens_in
    fold.output_tokens += tokens_out
    if prices.per_model:
        money = prices.cost(model, tokens_in, tokens_out)
        if money is None:
            fold.unpriced += 1
            fold.unpriced_models.add(model or "(none recorded)")
        else:
            fold.money += money


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass
class Scope:
    """One row's worth of records: a segment, a context, a group, a run, or everything."""

    kind: str  # "segment" | "context" | "group" | "run_id" | "run"
    name: str
    fold: Fold
    segment: SegmentFiles | None = None
    context: str | None = None
    out: str = ""  # the OUT a segment was read from
    groups: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return self.segment.status if self.segment is not None else ""


@dataclass
class MetricsReport:
    out: str  # the OUTs read, as given
    segments: list[Scope]
    contexts: list[Scope]  # only when the segments name more than one context
    run: Scope
    groups: list[Scope] = field(default_factory=list)  # several OUTs, or a --ledger
    runs: list[Scope] = field(default_factory=list)  # only when the records span several

    @property
    def scopes(self) -> list[Scope]:
        return [*self.segments, *self.contexts, *self.groups, *self.runs, self.run]


@dataclass(frozen=True)
class Assignment:
    """What a --ledger says of one source: its context and the groups it belongs to."""

    context: str | None
    groups: tuple[str, ...]


class LedgerError(UsageError):
    """A --ledger file that is not ``{"sources": {"<source>": {"context", "groups"}}}``."""


def load_ledger(text: str, name: str) -> dict[str, Assignment]:
    """Read ``{"sources": {"<source>": {"context": "<id>", "groups": ["<group>", ...]}}}``."""
    shape = '{"sources": {"<source>": {"context": "<id>", "groups": ["<group>"]}}}'
    try:
        data = json.loads(text)
    except ValueError as error:
        raise LedgerError(f"{name}: not JSON ({error})") from None
    sources = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(sources, dict):
        raise LedgerError(f"{name}: expected {shape}")
    ledger = {}
    for source, entry in sources.items():
        context = entry.get("context") if isinstance(entry, dict) else None
        groups = entry.get("groups", []) if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or not (context is None or isinstance(context, str))
            or not isinstance(groups, list)
            or not all(isinstance(group, str) and group for group in groups)
        ):
            raise LedgerError(
                f'{name}: source {source!r} needs {{"context": "<id>", "groups": ["<group>"]}}'
            )
        ledger[source] = Assignment(context, tuple(dict.fromkeys(groups)))
    return ledger


def collect(
    outs: OutDir | Sequence[OutDir],
    prices: Prices,
    ledger: Mapping[str, Assignment] | None = None,
) -> MetricsReport:
    """Fold every segment of the OUTs, then the context, group, run and whole scopes.

    A segment's group is its OUT (named as given) unless the ledger names its groups;
    its context is the ledger's, else its source file's header. A source read from
    two OUTs is named ``<source> (<out>)`` so the rows stay apart.
    """
    outs = [outs] if isinstance(outs, OutDir) else list(outs)
    ledger = ledger or {}
    segments: list[Scope] = []
    per_run: dict[str, Fold] = {}
    for out in outs:
        for files in segment_files(out):
            runs = fold_segment_runs(files, prices)
            fold = Fold()
            for run_id, part in runs.items():
                fold.merge(part)
                per_run.setdefault(run_id, Fold()).merge(part)
            scope = Scope("segment", files.source, fold, files, out=out.url)
            assigned = ledger.get(files.source)
            scope.context = (assigned.context if assigned else None) or _context(files.source_file)
            scope.groups = assigned.groups if assigned and assigned.groups else (out.url,)
            segments.append(scope)
    seen: dict[str, int] = {}
    for scope in segments:
        seen[scope.name] = seen.get(scope.name, 0) + 1
    for scope in segments:
        if seen[scope.name] > 1:
            scope.name = f"{scope.name} ({scope.out})"
    known = {scope.context for scope in segments if scope.context is not None}
    for scope in segments:  # a failed segment wrote no header: it shares the run's one context
        if scope.context is None:
            scope.context = next(iter(known)) if len(known) == 1 else UNKNOWN_CONTEXT
    contexts = _rollup(segments, "context", lambda scope: (str(scope.context),))
    groups = _rollup(segments, "group", lambda scope: scope.groups)
    run = Fold()
    for scope in segments:
        run.merge(scope.fold)
    return MetricsReport(
        ", ".join(out.url for out in outs),
        segments,
        contexts if len(contexts) > 1 else [],
        Scope("run", "run", run),
        groups if len(groups) > 1 or ledger else [],
        [Scope("run_id", run_id, fold) for run_id, fold in per_run.items()]
        if len(per_run) > 1
        else [],
    )


def _rollup(
    segments: list[Scope], kind: str, keys: Callable[[Scope], tuple[str, ...]]
) -> list[Scope]:
    folds: dict[str, Fold] = {}
    for scope in segments:
        for key in keys(scope):
            folds.setdefault(key, Fold()).merge(scope.fold)
    return [Scope(kind, name, folds[name]) for name in sorted(folds)]


def _context(source_file: bytes | None) -> str | None:
    """The context a written source file's header names (``context_id``, older ``context``)."""
    if source_file is None:
        return None
    for raw in source_file.split(b"\n"):
        if raw.strip():
            try:
                header = json.loads(raw)
            except ValueError:
                return None
            value = (
                header.get("context_id", header.get("context"))
                if isinstance(header, dict)
                else None
            )
            return value if isinstance(value, str) else None
    return None
