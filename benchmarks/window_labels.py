"""What a wider segment window costs the label hand-off, on a real model's answers.

Segment *i* is offered the relation labels folded, in name order, from segments
``0 .. i-W`` (SPEC 4.2; `SegmentWindow`), ranked by use and capped at the prompt's
`VOCABULARY_CAP` (200); W = 1 is the reference's sequential hand-off. A wider window
lets more segments run at once, but a segment then starts before the W-1 segments in
front of it have settled their labels, so it is offered fewer of them and can reuse
fewer. This benchmark measures that on the anchor corpus's recorded completions
(``adr/0001/results/attempts.jsonl``: a 12B model's answers on six short Japanese
documents), with no model and no Ray:

1. Every ``attempt`` record is judged as the engine judges an answer (`judge_answer`:
   parse, then the strict mechanical pass against the text the model was shown),
   then Stage 2 (`stage2_issues`; an issue the engine would spend a corrective turn on
   is taken as left standing, since no second answer was recorded: an alias issue is
   pruned, any other skips the completion) and the dangling-alias prune. A completion
   with no clean answer is skipped, and the output says why.
2. Each accepted completion is one segment, in the file's order. Its contribution is
   what the commit turn settles (`proposal_of` → `claims.judge` against the claims of
   every earlier segment, as `engine/ledger.py` does): merge's kept associations, plus
   one use of a label alias's canonical. The window never changes it (ADR 0019).
3. For each W the engine's own `SegmentWindow` is driven in steady state (segment
   i-W finishes, segment i is dispatched and asks `vocabulary_for(i)`), and per
   segment the offered labels are counted, as is how many of the segment's own
   distinct labels were among them.

Three views of the same answers: ``real`` (every accepted completion, file order);
``distinct`` (the first of each distinct answer text: the file repeats each trial,
and an identical answer trivially reuses its twin's labels); ``cycled`` (the accepted
completions repeated, in order, into a corpus of ``--cycled`` segments, so W = 256 can
be compared with W = 8 on a corpus longer than the window — answers repeat, so its
reuse is an upper bound).

    python -m benchmarks.window_labels [--attempts FILE] [--corpus DIR]
        [--widths 1 8 32 64 256] [--cycled 1000] [--results-dir DIR]

Writes ``results/window-labels-<stamp>.json`` and ``-latest.json``; prints a markdown
table. Reported, never asserted (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result
from taguru_ray.contract.completion import Completion
from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.pipeline.annotate import haystack_text
from taguru_ray.pipeline.claims import ClaimLedger, Proposal, judge
from taguru_ray.pipeline.mechanical import Offered
from taguru_ray.pipeline.merge import MergeRules
from taguru_ray.pipeline.plan import Piece, label_blocks
from taguru_ray.pipeline.prompt import Conversation
from taguru_ray.pipeline.read import read_segment
from taguru_ray.pipeline.reconcile import (
    PieceState,
    StandingIssue,
    proposal_of,
    prune_dangling,
    prune_standing,
    stage2_issues,
)
from taguru_ray.pipeline.round_types import PieceSpec
from taguru_ray.pipeline.steer import VOCABULARY_CAP, Contribution
from taguru_ray.pipeline.validate import Rules
from taguru_ray.pipeline.verdict import judge_answer
from taguru_ray.text.occurrence import Haystack

ANCHOR = Path("/work/shared/data/anchor/adr/0001")
ATTEMPTS = ANCHOR / "results" / "attempts.jsonl"
CORPUS = ANCHOR / "corpus"
WIDTHS = (1, 8, 32, 64, 256)
REFERENCE_WIDTH = 1  # the reference tool's sequential hand-off
CYCLED = 1_000
QUESTIONS = 0  # the anchor prompts asked for no questions; volunteered ones carry no label
# What the recorder kept of an answer's text (the field is `content_truncated`).
RECORDED_TEXT_CAP = 2048


# ------------------------------------------------------------------ the answers


@dataclass(frozen=True)
class Accepted:
    """One recorded completion the engine would have accepted: a segment of the bench."""

    line: int  # 1-based line of its record in the attempts file
    doc: str
    answer: str
    proposal: Proposal  # what it brings to its commit turn
    removed: int  # items the mechanical pass and the Stage 2 prunes took out


@dataclass(frozen=True)
class Skipped:
    line: int
    doc: str
    reason: str


def shown_piece(corpus: Path, doc: str) -> tuple[Piece, int]:
    """What the model was shown for `doc`, as one piece, and its document's paragraph count.

    ``name`` is the document ``name.md``; ``name#pN`` is its paragraph N alone, asked
    about under the document's own numbering (the answers tag it ``N``), so the
    paragraph count stays the document's.
    """
    name, _, part = doc.partition("#p")
    segment = read_segment(f"{name}.md", (corpus / f"{name}.md").read_bytes())
    paragraphs = segment.paragraphs if not part else (segment.paragraphs[int(part)],)
    return Piece(0, 1, tuple(label_blocks(paragraphs, MAX_PASSAGE_BYTES))), len(segment.paragraphs)


def accept(record: dict[str, Any], line: int, corpus: Path) -> Accepted | str:
    """The completion as the engine's strict path reads it, or why it yields no segment."""
    answer = record.get("content_truncated")
    if answer is None:
        return f"no answer recorded ({record.get('failure_class') or 'no content'})"
    doc = str(record["doc"])
    piece, paragraph_count = shown_piece(corpus, doc)
    rules = Rules(paragraph_count, QUESTIONS)
    haystack = Haystack(haystack_text(None, piece.text))  # no chunk-context block
    spec = PieceSpec(piece, doc, Conversation("", ""), rules, haystack, Offered())
    completion = Completion("answer", answer, record.get("finish_reason"))
    verdict = judge_answer(completion, spec, lossy=False)
    if verdict.output is None:
        finish = record.get("finish_reason")
        if verdict.empty:
            return f"empty answer (finish_reason {finish}: the output budget spent before any text)"
        if verdict.cut_off:
            return f"cut off at the output limit (finish_reason {finish})"
        if len(answer) >= RECORDED_TEXT_CAP and record.get("syntax_ok"):
            return (
                f"recorded text cut at {RECORDED_TEXT_CAP} characters "
                "(the recorder's cap; the model's whole answer parsed)"
            )
        also = "; the recorder's parse failed too" if record.get("syntax_ok") is False else ""
        return f"malformed JSON ({verdict.state}{also})"
    if verdict.issues:
        return "issues left for a corrective turn (not recorded)"
    state = PieceState(piece, verdict.output, None, answer, "", list(verdict.removed))
    try:
        prune_standing([state], stage2_issues([state]))
    except StandingIssue:
        return "a Stage 2 issue other than an alias (needs a corrective turn, not recorded)"
    prune_dangling([state])
    proposal = proposal_of([state], MergeRules(paragraph_count, QUESTIONS, True))
    return Accepted(line, doc, answer, proposal, len(state.removed))


def read_attempts(path: Path, corpus: Path) -> tuple[list[Accepted], list[Skipped], int]:
    """Every ``attempt`` record, accepted or skipped, in file order; and how many other
    records (``trial`` summaries) the file holds."""
    accepted: list[Accepted] = []
    skipped: list[Skipped] = []
    other = 0
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            record = json.loads(line)
            if record.get("type") != "attempt":
                other += 1
                continue
            outcome = accept(record, number, corpus)
            if isinstance(outcome, str):
                skipped.append(Skipped(number, str(record.get("doc")), outcome))
            else:
                accepted.append(outcome)
    return accepted, skipped, other


def commit_in_order(proposals: Sequence[Proposal]) -> list[Contribution]:
    """Each segment's contribution as its commit turn settles it, in name order: judged
    against the claims of every earlier segment whatever the window (engine/ledger.py)."""
    claims = ClaimLedger()
    contributions = []
    for index, proposal in enumerate(proposals):
        verdict = judge(proposal, claims.lookups(proposal.queries(), index))
        claims.absorb(index, verdict.contribution)
        contributions.append(verdict.contribution)
    return contributions


# ------------------------------------------------------------------ the measurement


@dataclass(frozen=True)
class WindowFigures:
    """Per segment, at one window: labels offered, own distinct labels, and how many of
    those were on offer (the reuse the hand-off made possible)."""

    width: int
    offered: tuple[int, ...]
    used: tuple[int, ...]
    reused: tuple[int, ...]
    distinct_labels: int  # every label the whole corpus used

    @property
    def segments(self) -> int:
        return len(self.offered)

    @property
    def reuse_share(self) -> float | None:
        """Labels used that were on offer ÷ labels used, over every segment."""
        used = sum(self.used)
        return sum(self.reused) / used if used else None

    @property
    def mean_segment_share(self) -> float | None:
        """The mean, over segments using any label, of their own share on offer."""
        shares = [r / u for r, u in zip(self.reused, self.used, strict=True) if u]
        return statistics.fmean(shares) if shares else None

    @property
    def offered_nothing(self) -> float | None:
        """The share of segments whose prompt offered no label."""
        return self.offered.count(0) / self.segments if self.segments else None

    def to_json(self, per_segment: bool) -> dict[str, Any]:
        result: dict[str, Any] = {
            "segment_window": self.width,
            "segments": self.segments,
            "offered_mean": _round(statistics.fmean(self.offered) if self.offered else None, 2),
            "offered_median": statistics.median(self.offered) if self.offered else None,
            "offered_max": max(self.offered, default=0),
            "offered_full_cap_share": _round(
                self.offered.count(VOCABULARY_CAP) / self.segments if self.segments else None
            ),
            "offered_nothing_share": _round(self.offered_nothing),
            "labels_used": sum(self.used),
            "labels_used_on_offer": sum(self.reused),
            "label_reuse_share": _round(self.reuse_share),
            "mean_segment_reuse_share": _round(self.mean_segment_share),
            "distinct_labels": self.distinct_labels,
        }
        if per_segment:
            result["per_segment"] = {
                "offered": list(self.offered),
                "used": list(self.used),
                "on_offer": list(self.reused),
            }
        return result


def measure(contributions: Sequence[Contribution], width: int) -> WindowFigures:
    """Drive `SegmentWindow(width)` over `contributions` (segment i's is index i).

    Steady state, in name order: before segment i is dispatched, segment i-W finishes
    with its contribution; segment i is then offered `vocabulary_for(i)` — the fold of
    segments 0 .. i-W, ranked, capped at VOCABULARY_CAP, exactly what the driver puts
    in its job. A segment's labels are its contribution's distinct labels.
    """
    if width < 1:
        raise ValueError(f"a segment window is at least 1, not {width}")
    window = SegmentWindow(width)
    offered: list[int] = []
    used: list[int] = []
    reused: list[int] = []
    for index, contribution in enumerate(contributions):
        if index >= width:
            window.finish(index - width, contributions[index - width])
        window.dispatched(index)
        on_offer = {use.label for use in window.vocabulary_for(index)}
        own = {use.label for use in contribution.labels}
        offered.append(len(on_offer))
        used.append(len(own))
        reused.append(len(own & on_offer))
    labels = {use.label for contribution in contributions for use in contribution.labels}
    return WindowFigures(width, tuple(offered), tuple(used), tuple(reused), len(labels))


# ------------------------------------------------------------------ the report


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def table(views: dict[str, list[WindowFigures]]) -> str:
    """The markdown table printed to stdout: one row per view and window."""
    rows = [
        "| view | W | segments | offered mean | offered median | offered nothing "
        "| label reuse | mean segment reuse |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for view, figures in views.items():
        for f in figures:
            width = f"{f.width} (reference)" if f.width == REFERENCE_WIDTH else str(f.width)
            mean = statistics.fmean(f.offered) if f.offered else 0.0
            median = statistics.median(f.offered) if f.offered else 0
            rows.append(
                f"| {view} | {width} | {f.segments} | {mean:.1f} | {median:g} "
                f"| {_percent(f.offered_nothing)} | {_percent(f.reuse_share)} "
                f"| {_percent(f.mean_segment_share)} |"
            )
    return "\n".join(rows)


def _widths(values: Sequence[int]) -> list[int]:
    """The windows asked for, ascending, always with the reference's W = 1."""
    return sorted({REFERENCE_WIDTH, *values})


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.window_labels",
        description=(
            "Labels a segment's prompt is offered, and how many of its own labels were on "
            "offer, at each --segment-window, on the anchor corpus's recorded answers."
        ),
    )
    parser.add_argument("--attempts", type=Path, default=ATTEMPTS, help="the attempts.jsonl")
    parser.add_argument(
        "--corpus", type=Path, default=CORPUS, help="the documents the attempts answered"
    )
    parser.add_argument(
        "--widths",
        type=_positive,
        nargs="+",
        default=list(WIDTHS),
        help="segment windows W to measure (W = 1, the reference, is always added)",
    )
    parser.add_argument(
        "--cycled",
        type=int,
        default=CYCLED,
        help="segments of the cycled view (0: leave it out)",
    )
    parser.add_argument("--results-dir", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    widths = _widths(args.widths)

    accepted, skipped, other = read_attempts(args.attempts, args.corpus)
    first_of_each: dict[str, Accepted] = {}
    for segment in accepted:
        first_of_each.setdefault(segment.answer, segment)
    orders: dict[str, list[Accepted]] = {
        "real": accepted,
        "distinct": list(first_of_each.values()),
    }
    if args.cycled > 0 and accepted:
        orders["cycled"] = [accepted[k % len(accepted)] for k in range(args.cycled)]
    views = {}
    for view, segments in orders.items():
        contributions = commit_in_order([segment.proposal for segment in segments])
        views[view] = [measure(contributions, width) for width in widths]

    reasons = Counter(skip.reason for skip in skipped)
    result: dict[str, Any] = {
        "name": "window-labels",
        "data": {
            "attempts": str(args.attempts),
            "attempts_sha256": _sha256(args.attempts),
            "corpus": str(args.corpus),
            "attempt_records": len(accepted) + len(skipped),
            "other_records": other,
            "used": len(accepted),
            "distinct_answers": len(first_of_each),
            "skipped": len(skipped),
            "skipped_by_reason": dict(reasons.most_common()),
            "skipped_records": [
                {"line": s.line, "doc": s.doc, "reason": s.reason} for s in skipped
            ],
            "used_by_doc": dict(Counter(segment.doc for segment in accepted).most_common()),
            "items_removed_by_the_strict_pass": sum(segment.removed for segment in accepted),
        },
        "parameters": {
            "segment_windows": widths,
            "reference_window": REFERENCE_WIDTH,
            "vocabulary_cap": VOCABULARY_CAP,
            "cycled_segments": args.cycled,
        },
        "views": {
            view: {
                "segments": len(orders[view]),
                "windows": [f.to_json(per_segment=view != "cycled") for f in figures],
            }
            for view, figures in views.items()
        },
        "notes": [
            "segment i is offered the labels of segments 0 .. i-W (SegmentWindow), ranked by "
            "use, capped at vocabulary_cap",
            "label reuse = a segment's own distinct labels that were on offer ÷ its distinct "
            "labels, summed over segments; W = 1 is the reference's figure",
            "distinct: the first of each distinct answer text (the file repeats each trial)",
            "cycled: the accepted answers repeated into a longer corpus; answers repeat, so "
            "its reuse is an upper bound",
        ],
    }
    write_result(args.results_dir, "window-labels", result)
    print(
        f"{len(accepted)} completions used as segments, {len(skipped)} skipped "
        f"({len(first_of_each)} distinct answer texts among those used):"
    )
    for reason, count in reasons.most_common():
        print(f"- {count} {reason}")
    print()
    print(table(views))
    print()
    print(f"written: {args.results_dir / 'window-labels-latest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
