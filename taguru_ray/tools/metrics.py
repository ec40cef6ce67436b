"""``taguru-ray metrics``: an --out's records folded into the metric values of seed 000 (#784).

One `Fold` per segment, from its trace (quality) and attempts log (cost),
merged into a fold per context and one for the run. The definitions:

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
- **attempt states**: completions by state, and their shares.
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
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.errors import UsageError
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.records import Lines, SegmentFiles, attempt_key, segment_files

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
_ITEM_KIND = {
    "association": "association",
    "question": "question",
    "concept": "alias",
    "label": "alias",
}


class PricesError(UsageError):
    """A --prices file that is not ``{"<model>": {"input": $, "output": $}}`` per 1M tokens."""


@dataclass(frozen=True)
class Prices:
    """Dollars per one million input and output tokens, per model name."""

    per_model: dict[str, tuple[float, float]] = field(default_factory=dict)

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float | None:
        price = self.per_model.get(model or "")
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def load_prices(text: str, name: str) -> Prices:
    """Read ``{"<model>": {"input": <$ per 1M>, "output": <$ per 1M>}, ...}``."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise PricesError(f"{name}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise PricesError(f'{name}: expected {{"<model>": {{"input": $, "output": $}}}}')
    prices = {}
    for model, entry in data.items():
        values = [
            entry.get(key) if isinstance(entry, dict) else None for key in ("input", "output")
        ]
        if not all(_price(value) for value in values):
            raise PricesError(
                f'{name}: model {model!r} needs {{"input": $, "output": $}} — dollars per one '
                "million tokens, numbers of 0 or more"
            )
        prices[model] = (float(values[0]), float(values[1]))
    return Prices(prices)


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
    fold = Fold()
    status = segment.status
    fold.written, fold.failed = int(status != "failed"), int(status == "failed")
    fold.untraced = int(status == "untraced")
    adopted: set[tuple[str, int]] | None = None
    if segment.trace is not None:
        fold.traced = 1
        adopted = _fold_trace(fold, segment.trace)
        fold.unreadable_lines += segment.trace.unreadable
    if segment.attempts is not None:
        _fold_attempts(fold, segment.attempts, prices, adopted)
        fold.unreadable_lines += segment.attempts.unreadable
    return fold


def _fold_trace(fold: Fold, trace: Lines) -> set[tuple[str, int]]:
    """Items, losses, paragraphs; returns the attempts the written pieces adopted."""
    adopted = set()
    for record in trace.records:
        kind = record.get("type")
        if kind == "segment" and isinstance(record.get("run_id"), str):
            fold.built_by.add(record["run_id"])
        elif kind == "item" and record.get("item") in _ITEM_KIND:
            fold.kept[_ITEM_KIND[record["item"]]] += 1
            if record["item"] == "association":
                fold.labels[str(record.get("label"))] += 1
                fold.concepts.update((str(record.get("subject")), str(record.get("object"))))
        elif kind == "loss":
            fold.lost[(str(record.get("item")), str(record.get("reason")))] += 1
        elif kind == "paragraph":
            size = _count(record.get("bytes"))
            fold.paragraphs += 1
            fold.paragraph_bytes += size
            if record.get("covered") is True:
                fold.covered += 1
                fold.covered_bytes += size
        elif kind == "piece" and (key := attempt_key(record.get("attempt"))):
            adopted.add(key)
            fold.built_by.add(key[0])
    return adopted


def _fold_attempts(
    fold: Fold, log: Lines, prices: Prices, adopted: set[tuple[str, int]] | None
) -> None:
    """States, corrections (only when `adopted` is known), moves, time, tokens, money."""
    models: dict[str, str] = {}
    run = model = None
    replayed_piece: dict[str, bool] = {}  # piece id -> its latest completion was replayed
    for record in log.records:
        kind = record.get("type")
        if kind == "segment":
            run = record.get("run_id")
        elif kind == "settings" and isinstance(record.get("model"), str):
            model = record["model"]
            if isinstance(run, str):
                models[run] = model
        elif kind == "move":
            if not replayed_piece.get(str(record.get("piece_id"))):
                fold.moves[str(record.get("move"))] += 1
        elif kind == "attempt":
            replayed = attempt_key(record.get("replayed_from")) is not None
            replayed_piece[str(record.get("piece_id"))] = replayed
            if replayed:
                fold.replayed += 1
                continue
            _fold_attempt(fold, record, models.get(str(record.get("run_id")), model), prices)
            if adopted is None or record.get("run_id") not in fold.built_by:
                continue
            if attempt_key(record.get("corrects")):
                fold.corrective += 1
                fold.adopted += attempt_key(record) in adopted


def _fold_attempt(fold: Fold, record: dict[str, Any], model: str | None, prices: Prices) -> None:
    fold.states[str(record.get("state"))] += 1
    fold.transport_retries += _count(record.get("transport_retries"))
    seconds = record.get("elapsed_seconds")
    if (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and math.isfinite(seconds)
    ):
        fold.seconds += seconds
    tokens_in, tokens_out = _count(record.get("input_tokens")), _count(record.get("output_tokens"))
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


def _price(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


@dataclass
class Scope:
    """One row's worth of records: a segment, a context, or the whole run."""

    kind: str  # "segment" | "context" | "run"
    name: str
    fold: Fold
    segment: SegmentFiles | None = None
    context: str | None = None

    @property
    def status(self) -> str:
        return self.segment.status if self.segment is not None else ""


@dataclass
class MetricsReport:
    out: str
    segments: list[Scope]
    contexts: list[Scope]  # only when the segments name more than one context
    run: Scope

    @property
    def scopes(self) -> list[Scope]:
        return [*self.segments, *self.contexts, self.run]


def collect(out: OutDir, prices: Prices) -> MetricsReport:
    """Fold every segment of an --out, then each context (when several) and the run."""
    segments = []
    for files in segment_files(out):
        scope = Scope("segment", files.source, fold_segment(files, prices), files)
        scope.context = _context(files.source_file)
        segments.append(scope)
    known = {scope.context for scope in segments if scope.context is not None}
    for scope in segments:  # a failed segment wrote no header: it shares the run's one context
        if scope.context is None:
            scope.context = next(iter(known)) if len(known) == 1 else UNKNOWN_CONTEXT
    contexts = []
    names = sorted({str(scope.context) for scope in segments})
    if len(names) > 1:
        for name in names:
            fold = Fold()
            for scope in segments:
                if scope.context == name:
                    fold.merge(scope.fold)
            contexts.append(Scope("context", name, fold))
    run = Fold()
    for scope in segments:
        run.merge(scope.fold)
    return MetricsReport(out.url, segments, contexts, Scope("run", "run", run))


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
