"""The text rendering of an `AttemptsReport` (``taguru-ray inspect`` without ``--json``).

Unfiltered: a header (source, runs, the settings worth seeing), one line per
completion in issue order with its detail lines (parse error, the first
issues, removals), the ladder's moves under the attempt they followed, a
tally, the skipped-lines note, and the one command to type next. Under a
filter each matched attempt also prints its texts between ``---`` fences,
verbatim (a piece already shown is referred back to rather than repeated).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from taguru_ray.contract.names import SHORT_ID, inspect_command
from taguru_ray.tools.inspect import (
    GLEANING,
    ISSUES_SHOWN,
    AttemptRow,
    AttemptsReport,
    MoveRow,
)
from taguru_ray.tools.locators import span

SETTINGS_SHOWN = (
    "model",
    "structured_output",
    "rung",
    "max_output_tokens",
    "chunk_bytes",
    "chunk_context",
    "fact_budget",
    "questions_n",
)


def render_text(report: AttemptsReport) -> str:
    out: list[str] = [_header(report)]
    settings = _settings_line(report.settings)
    if settings:
        out.append(settings)
    several_runs = len(report.runs) > 1
    moves = list(report.moves)
    out += [_move_line(m) for m in moves if m.after is None]
    moves = [m for m in moves if m.after is not None]
    shown: dict[str, int | None] = {}
    run = None
    for row in report.attempts:
        if several_runs and row.run_id != run:
            run = row.run_id
            mode = report.replays.get(run)
            out.append(f"  run {run}{f' (replay {mode})' if mode else ''}")
        out += summary_lines(row, report.locators)
        if report.filter.narrows:
            out += _texts(row, shown)
        here = {"run_id": row.run_id, "attempt_seq": row.attempt_seq}
        out += [_move_line(m) for m in moves if m.after == here]
        moves = [m for m in moves if m.after != here]
    out += [_move_line(m) for m in moves]
    out += _footer(report)
    return "\n".join(out) + "\n"


def summary_lines(
    row: AttemptRow, locators: Mapping[int, Mapping[str, Any]] | None = None
) -> list[str]:
    """The row's line — where, which lap, how it ended, cap, time, tokens — and its details."""
    if row.stage == GLEANING:
        lap = f"gleaning pass {_seq(row.attempt)}"
    else:
        stage = {"item": "attempt", "cross_chunk": "cross-chunk correction"}.get(
            row.stage, row.stage
        )
        lap = f"{stage} {_of(row.attempt, row.max_attempts)}"
    line = f"  #{_seq(row.attempt_seq)}  {_where(row)}  {lap}"
    found = span(locators or {}, row.paragraph_first, row.paragraph_last)
    if found:  # a converted document's page, slide or heading path (ADR 0078)
        line = f"  #{_seq(row.attempt_seq)}  {_where(row)} [{found}]  {lap}"
    line += f"  {row.state}"
    if row.finish_reason not in (None, "stop"):
        line += f" (finish {row.finish_reason})"
    if row.requested_max_tokens is not None:
        line += f"  cap {row.requested_max_tokens} tok"
    if row.rung:
        line += f"  {row.rung}"
    if row.elapsed_seconds is not None:
        line += f"  {row.elapsed_seconds:.2f} s"
    if row.input_tokens is not None and row.output_tokens is not None:
        line += f"  {row.input_tokens}→{row.output_tokens} tok"
    if row.transport_retries:
        line += f"  transport retries {row.transport_retries}"
    if row.corrects:
        line += f"  corrects {_ref(row.corrects, row.run_id)}"
    if row.gleans:
        line += f"  gleans {_ref(row.gleans, row.run_id)}"
    if row.replayed_from:
        line += f"  replayed from {_ref(row.replayed_from, row.run_id)}"
    lines = [line]
    if row.parse_error:
        lines.append(f"        {row.parse_error}")
    lines += [f"        {issue}" for issue in row.validation_issues[:ISSUES_SHOWN]]
    if len(row.validation_issues) > ISSUES_SHOWN:
        lines.append(f"        … and {len(row.validation_issues) - ISSUES_SHOWN} more issue(s)")
    if row.removed_items:
        lines.append(f"        {len(row.removed_items)} item(s) removed (mechanical validation)")
    return lines


def _header(report: AttemptsReport) -> str:
    if report.segment is None:
        return f"{report.target}: attempts log (no segment record)"
    latest = report.segment["run_id"]
    runs = (
        f", {len(report.runs)} runs — latest {latest}"
        if len(report.runs) > 1
        else f", run {latest}"
    )
    resumed = " (resumed)" if report.segment.get("resumed") else ""
    return f"{report.target}: attempts log for '{report.segment['source']}'{runs}{resumed}"


def _settings_line(settings: dict[str, Any] | None) -> str | None:
    if not settings:
        return None
    shown = [
        f"{key} {value}"
        for key in SETTINGS_SHOWN
        if (value := settings.get(key)) not in (None, "", 0, False)
    ]
    return f"  settings: {', '.join(shown)}" if shown else None


def _where(row: AttemptRow) -> str:
    chunk = "chunk ?" if row.chunk_index is None else f"chunk {row.chunk_index + 1}"
    if row.chunk_total is not None:
        chunk += f"/{row.chunk_total}"
    text = f"{chunk}  piece {row.piece_id[:SHORT_ID]}"
    first, last, size = row.paragraph_first, row.paragraph_last, row.piece_bytes
    if first is not None and first == last:
        text += f"  paragraph {first} ({size} B)"
    elif first is not None:
        text += f"  paragraphs {first}–{last} ({size} B)"
    elif size:
        text += f"  ({size} B, unlabeled)"
    return text


def _texts(row: AttemptRow, shown: dict[str, int | None]) -> list[str]:
    """The fenced texts of one attempt; a piece printed before is referred back to."""
    seq = _seq(row.attempt_seq)
    out: list[str] = []
    if row.piece_text is not None:
        if row.piece_id in shown:
            out.append(
                f"        (piece as sent: the same user turn as #{_seq(shown[row.piece_id])})"
            )
        else:
            shown[row.piece_id] = row.attempt_seq
            out += _fence(f"piece as sent, the user turn (#{seq}", row.piece_text)
    if row.corrective_ask is not None:
        ask = "gleaning ask" if row.stage == GLEANING else "corrective ask"
        out += _fence(f"{ask} (#{seq}", row.corrective_ask)
    if row.answer is None:
        out.append(f"--- answer (#{seq}): none arrived ---")
    else:
        out += _fence(f"answer (#{seq}", row.answer)
    out.append("--- end ---")
    return out


def _fence(title: str, text: str) -> list[str]:
    return [f"--- {title}, {len(text.encode('utf-8'))} B) ---", text.rstrip("\n")]


def _move_line(move: MoveRow) -> str:
    record = move.record
    kind = str(record.get("move", "?"))
    what = {
        "escalate": f"max_tokens {record.get('from_max_tokens')} → {record.get('to_max_tokens')}",
        "demote": f"{record.get('from_rung')} → {record.get('to_rung')}",
        "split": (
            f"{record.get('piece_bytes')} B into {record.get('sub_pieces')} sub-piece(s) "
            f"at {record.get('split_cap')} B"
        ),
        "runaway": (
            f"{record.get('answer_bytes')} B answered for a {record.get('piece_bytes')} B piece"
        ),
    }.get(kind, "")
    line = f"      ↳ {kind}  piece {move.piece_id[:SHORT_ID]}"
    if what:
        line += f"  {what}"
    reason = record.get("reason")
    return line + (f" — {reason}" if isinstance(reason, str) and reason else "")


def _footer(report: AttemptsReport) -> list[str]:
    extracting = [row for row in report.attempts if row.stage != GLEANING]
    gleaning = [row for row in report.attempts if row.stage == GLEANING]
    states = Counter(row.state for row in extracting)
    kinds = Counter(str(m.record.get("move", "?")) for m in report.moves)
    tally = f"  {len(extracting)} attempt(s)"
    if report.filter.narrows:
        tally += f" matched {report.filter.describe()}"
    if states:
        tally += ": " + ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    if gleaning:
        landed = Counter(row.state for row in gleaning)
        tally += f" · {len(gleaning)} gleaning pass(es): " + ", ".join(
            f"{n} {state}" for state, n in sorted(landed.items())
        )
    tally += f" · {len(report.moves)} move(s)"
    if kinds:
        tally += ": " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    out = [tally]
    if report.unreadable_lines:
        torn = " — the last line is torn (a killed run, most likely)" if report.torn_tail else ""
        out.append(f"  {report.unreadable_lines} unreadable line(s) skipped{torn}")
    row = report.next_piece
    if not report.filter.narrows and row is not None:
        command = inspect_command(report.target, row.piece_id)
        if report.next_is_unfinished:
            out.append(f"  piece {row.piece_id[:SHORT_ID]} never reached a valid answer: {command}")
        else:
            out.append(f"  every piece reached a valid answer; to read one as sent: {command}")
    return out


def _seq(seq: int | None) -> str:
    return "?" if seq is None else str(seq)


def _of(attempt: int | None, most: int | None) -> str:
    return f"{_seq(attempt)}/{_seq(most)}"


def _ref(ref: dict[str, Any], run_id: str) -> str:
    """``#N`` within the row's own run, ``<run_id> #N`` across runs."""
    seq = f"#{ref.get('attempt_seq')}"
    return seq if ref.get("run_id") == run_id else f"{ref.get('run_id')} {seq}"
