"""``taguru-ray inspect``: one segment's attempts log as a person reads it (taguru ADR 0037).

The attempts log (CONTRACT.md section 4.2) holds every completion a segment
had with the model — the piece as sent, the answer, the ladder's moves — as
one escaped JSON line per record. This module reads it once into an
`AttemptsReport` and renders that report two ways: text (one line per
completion in issue order, the moves between them, a tally, and the one
command to type next) and JSON (``{target, type: "attempts", segment, runs,
settings, filter, attempts, moves, unreadable_lines, matched}``). Both views
are renderings of the same report, never two readings of the file.

Under a filter (``--piece`` prefix, or ``--paragraph N``: every piece whose
``[i]`` labels span N) only the matching attempts are kept, and each carries
its texts: the first user turn exactly as sent (``piece_text``; the segment
preamble included), the corrective ask of a retry (the last user turn when
there are several) and the answer, printed unescaped between ``---`` fences.
Unfiltered, no texts are rendered, so the view stays one line per completion.

A line that is not a JSON object (a torn last line of a killed run) is
counted and said, never a failure. Record types this view has no row for
(``system``, ``replay_summary``, later additions) are skipped.

`attempts_table` is the same rows as one typed `Table` over many logs (an
--out's every segment): what ``taguru_ray.inspect`` hands a notebook as Arrow.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records.attempts import (
    AttemptRecord,
    MoveRecord,
    ReplayRecord,
    SegmentAttempts,
    SettingsRecord,
)
from taguru_ray.tools.records import Lines, Record, attempt_key
from taguru_ray.tools.tables import Column, Table

GLEANING = "gleaning"  # seed 002's "what did you miss" passes: never a correction
ISSUES_SHOWN = 3
_LABEL = re.compile(r"\[(\d+)\] ")
_PART = re.compile(r", part (\d+) of (\d+):$")


@dataclass(frozen=True)
class Filter:
    """What ``--piece``/``--paragraph`` narrowed the view to (neither: every attempt)."""

    piece: str | None = None
    paragraph: int | None = None

    @property
    def narrows(self) -> bool:
        return self.piece is not None or self.paragraph is not None

    def describe(self) -> str:
        if self.piece is not None:
            return f"piece {self.piece}"
        if self.paragraph is not None:
            return f"paragraph {self.paragraph}"
        return "all"

    def hits(self, row: AttemptRow) -> bool:
        if self.piece is not None:
            return row.piece_id.startswith(self.piece.lower())
        if self.paragraph is not None:
            first, last = row.paragraph_first, row.paragraph_last
            return first is not None and last is not None and first <= self.paragraph <= last
        return True


@dataclass
class AttemptRow:
    """One completion as the report states it; the texts are rendered only under a filter."""

    run_id: str
    attempt_seq: int | None
    chunk_index: int | None
    chunk_total: int | None
    piece_id: str
    paragraph_first: int | None
    paragraph_last: int | None
    piece_bytes: int | None
    stage: str
    attempt: int | None
    max_attempts: int | None
    state: str
    finish_reason: str | None
    length_limited: bool
    rung: str | None
    requested_max_tokens: int | None
    elapsed_seconds: float | None
    input_tokens: int | None
    output_tokens: int | None
    transport_retries: int
    corrects: dict[str, Any] | None
    gleans: dict[str, Any] | None  # a gleaning pass: the attempt whose answer it extends
    replayed_from: dict[str, Any] | None
    parse_error: str | None
    validation_issues: list[str]
    removed_items: list[str]
    piece_text: str | None = None
    corrective_ask: str | None = None
    answer: str | None = None

    def to_json(self, *, texts: bool) -> dict[str, Any]:
        data = dict(vars(self))
        if not texts:
            for key in ("piece_text", "corrective_ask", "answer"):
                del data[key]
        return data


@dataclass
class MoveRow:
    """One ladder move (escalate, demote, split, runaway), after the attempt it followed."""

    after: dict[str, Any] | None  # {run_id, attempt_seq} of the attempt before it
    record: Record

    @property
    def piece_id(self) -> str:
        return _text(self.record.get("piece_id"))

    def to_json(self) -> dict[str, Any]:
        body = {k: v for k, v in self.record.items() if k != "type"}
        return {"after": self.after, **body}


@dataclass
class AttemptsReport:
    """The whole view, built once from the file and rendered as text or JSON."""

    target: str
    filter: Filter
    segment: dict[str, Any] | None = None  # the last segment record: the latest run
    runs: list[str] = field(default_factory=list)
    replays: dict[str, str] = field(default_factory=dict)  # run_id -> replay mode
    settings: dict[str, Any] | None = None
    attempts: list[AttemptRow] = field(default_factory=list)
    moves: list[MoveRow] = field(default_factory=list)
    unreadable_lines: int = 0
    torn_tail: bool = False
    matched: int = 0
    next_piece: AttemptRow | None = None  # the piece worth opening next (unfiltered)
    next_is_unfinished: bool = False
    rows_read: int = 0  # attempt and move records read, before any filter
    # A converted document's paragraph → locator, from its trace (`tools/locators.py`).
    locators: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_attempts_log(self) -> bool:
        """A settings, attempt or move record was read (a trace has none of them)."""
        return self.rows_read > 0 or self.settings is not None

    def to_json(self) -> dict[str, Any]:
        texts = self.filter.narrows
        located = {str(i): v for i, v in sorted(self.locators.items())}
        return {
            "target": self.target,
            "type": "attempts",
            "segment": self.segment,
            "runs": self.runs,
            "settings": self.settings,
            "filter": self.filter.describe(),
            "attempts": [row.to_json(texts=texts) for row in self.attempts],
            "moves": [move.to_json() for move in self.moves],
            "unreadable_lines": self.unreadable_lines,
            "matched": self.matched,
            **({"locators": located} if located else {}),
        }


# The columns of `attempts_table`: where the row is from, then AttemptRow's fields in
# their order (the keys of an ``inspect --json`` attempt), then the texts when asked.
ATTEMPT_COLUMNS = [
    Column("source", "str"),  # the segment's source, as its attempts log names it
    Column("log", "str"),  # the attempts log the row was read from
    Column("run_id", "str"),
    Column("attempt_seq", "int"),
    Column("chunk_index", "int"),
    Column("chunk_total", "int"),
    Column("piece_id", "str"),
    Column("paragraph_first", "int"),
    Column("paragraph_last", "int"),
    Column("piece_bytes", "int"),
    Column("stage", "str"),
    Column("attempt", "int"),
    Column("max_attempts", "int"),
    Column("state", "str"),
    Column("finish_reason", "str"),
    Column("length_limited", "bool"),
    Column("rung", "str"),
    Column("requested_max_tokens", "int"),
    Column("elapsed_seconds", "float"),
    Column("input_tokens", "int"),
    Column("output_tokens", "int"),
    Column("transport_retries", "int"),
    Column("corrects", "ref"),
    Column("gleans", "ref"),
    Column("replayed_from", "ref"),
    Column("parse_error", "str"),
    Column("validation_issues", "strs"),
    Column("removed_items", "strs"),
]
TEXT_COLUMNS = [
    Column("piece_text", "str"),
    Column("corrective_ask", "str"),
    Column("answer", "str"),
]


def attempts_table(reports: list[AttemptsReport], *, texts: bool = False) -> Table:
    """One row per completion of the reports, in report then issue order: each report's
    attempts as `AttemptsReport.to_json` states them, under the source and log they are of."""
    columns = ATTEMPT_COLUMNS + (TEXT_COLUMNS if texts else [])
    rows = []
    for report in reports:
        source = report.segment["source"] if report.segment else ""
        for row in report.attempts:
            rows.append({"source": source, "log": report.target, **row.to_json(texts=texts)})
    title = "attempts — one row per completion of the attempts logs"
    return Table("attempts", title, columns, rows)


def build_report(target: str, lines: Lines, filter_: Filter) -> AttemptsReport:
    """Read the log's records in order into one report narrowed by `filter_`."""
    report = AttemptsReport(target, filter_, unreadable_lines=lines.unreadable)
    report.torn_tail = lines.torn_tail
    last: dict[str, Any] | None = None
    for record in lines.records:
        if segment := SegmentAttempts.view(record):
            run_id = _text(segment.run_id)
            report.runs.append(run_id)
            report.segment = {
                "source": _text(segment.source),
                "run_id": run_id,
                "resumed": bool(segment.resumed),
            }
        elif SettingsRecord.view(record):
            report.settings = {k: v for k, v in record.items() if k != "type"}
        elif (replay := ReplayRecord.view(record)) and report.runs:
            report.replays[report.runs[-1]] = _text(replay.mode)
        elif attempt := AttemptRecord.view(record):
            row = attempt_row(attempt)
            report.attempts.append(row)
            last = {"run_id": row.run_id, "attempt_seq": row.attempt_seq}
        elif MoveRecord.view(record):
            report.moves.append(MoveRow(last, record))
    report.rows_read = len(report.attempts) + len(report.moves)
    report.next_piece, report.next_is_unfinished = _piece_to_open(report)
    if filter_.narrows:
        report.attempts = [row for row in report.attempts if filter_.hits(row)]
        kept = {row.piece_id for row in report.attempts}
        report.moves = [move for move in report.moves if move.piece_id in kept]
    report.matched = len(report.attempts)
    return report


def attempt_row(record: AttemptRecord) -> AttemptRow:
    """One attempt record (a lenient view: a field the line lacks reads None) as a row;
    the piece's place is read off its first user turn."""
    users = [
        turn["content"]
        for turn in (record.messages if isinstance(record.messages, list) else [])
        if isinstance(turn, dict) and turn.get("role") == "user"
        if isinstance(turn.get("content"), str)
    ]
    first = users[0] if users else None
    preamble, body = split_turn(first) if first is not None else ("", None)
    span = paragraph_range(body) if body is not None else None
    return AttemptRow(
        run_id=_text(record.run_id),
        attempt_seq=_int(record.attempt_seq),
        chunk_index=_int(record.chunk_index),
        chunk_total=chunk_total(preamble) if first is not None else None,
        piece_id=_text(record.piece_id),
        paragraph_first=span[0] if span else None,
        paragraph_last=span[1] if span else None,
        piece_bytes=len(body.encode("utf-8")) if body is not None else None,
        stage=_text(record.stage),
        attempt=_int(record.attempt),
        max_attempts=_int(record.max_attempts),
        state=_text(record.state),
        finish_reason=_optional_text(record.finish_reason),
        length_limited=bool(record.length_limited),
        rung=_optional_text(record.rung),
        requested_max_tokens=_int(record.requested_max_tokens),
        elapsed_seconds=_number(record.elapsed_seconds),
        input_tokens=_int(record.input_tokens),
        output_tokens=_int(record.output_tokens),
        transport_retries=_int(record.transport_retries) or 0,
        corrects=_ref(record.corrects),
        gleans=_ref(record.gleans),
        replayed_from=_ref(record.replayed_from),
        parse_error=_optional_text(record.parse_error),
        validation_issues=_texts(record.validation_issues),
        removed_items=_texts(record.removed_items),
        piece_text=first,
        corrective_ask=users[-1] if len(users) > 1 else None,
        answer=_optional_text(record.answer),
    )


def _ref(value: Any) -> dict[str, Any] | None:
    """An attempt reference as the line wrote it, when it names one."""
    return value if attempt_key(value) and isinstance(value, dict) else None


def split_turn(user: str) -> tuple[str, str]:
    """A user turn's preamble and its piece: the text before and after the first blank line.

    Under --chunk-context the preamble holds the context block too: it follows
    the ``Segment …:`` line directly, and holds no blank line itself.
    """
    preamble, blank, body = user.partition("\n\n")
    return (preamble, body) if blank else ("", user)


def paragraph_range(body: str) -> tuple[int, int] | None:
    """The first and last ``[i]`` label opening a block of the piece (None: unlabeled)."""
    labels = [int(m.group(1)) for block in body.split("\n\n") if (m := _LABEL.match(block))]
    return (labels[0], labels[-1]) if labels else None


def chunk_total(preamble: str) -> int:
    """N of the first line's ``part K of N``; a preamble without one names a 1-chunk segment."""
    match = _PART.search(preamble.split("\n", 1)[0])
    return int(match.group(2)) if match else 1


def _piece_to_open(report: AttemptsReport) -> tuple[AttemptRow | None, bool]:
    """The piece the footer names, and whether it never reached a valid answer.

    That is the last piece in issue order with no accepted answer (an attempt
    ending ``stop_valid`` with no validation issue) that the ladder did not
    split into sub-pieces (a failed segment's culprit, or the
    piece in flight when a run was killed). When every piece got there: the
    last piece that needed more than one completion, else the last one asked.
    """
    valid = {
        row.piece_id
        for row in report.attempts
        if row.state == "stop_valid" and not row.validation_issues
    }
    split = {m.piece_id for m in report.moves if m.record.get("move") == "split"}
    for row in reversed(report.attempts):
        if row.piece_id not in valid | split:
            return row, True
    laps = Counter(row.piece_id for row in report.attempts if row.stage != GLEANING)
    for row in reversed(report.attempts):
        if laps[row.piece_id] > 1:
            return row, False
    return (report.attempts[-1] if report.attempts else None), False


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _texts(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
