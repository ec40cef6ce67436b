"""What of a session its source file holds, and in how many parts (SESSIONS.md §8).

- **Passage profile.** ``dialogue`` (the default) writes what people and agents said —
  user and assistant text, plus any kind offered to the model (`Session.kinds`), so
  every fact's turn is in the passage; tool calls, tool output, thinking, system text
  and compaction summaries stay in the store, where ``sessions show`` reads them.
  ``full`` writes every turn. A coding session is mostly tool output: 1 KB of
  dialogue came with a 335 KB passage before this profile.
- **Parts.** A passage over the import cap (`MAX_PASSAGE_BYTES`, 8 MiB; its JSON line
  under `MAX_LINE_BYTES`) cannot import, so the session is written as parts, each a
  `Session` with ``part`` 1, 2, … (source id ``session:{agent}:{id}/part-001``), cut
  at turn boundaries: each part holds a run of consecutive turns whose passage fits.
  A single turn larger than a part (a ``cat`` of a log under ``full``) is written cut
  at a line boundary, marked with how much was left out and the handle that shows it
  whole — the store keeps every byte.
- **Candidates.** `batches.OPTIONAL_KINDS` (tool calls, tool results, thinking) may be
  offered to the model beyond user and assistant text (``--candidates
  tool_result,thinking``: a session whose decisions live in command output); the
  passage then holds them, so every fact's turn is written. Compaction summaries never
  are: they restate earlier turns, whose facts would count twice.

`plan` turns one stored session into the sessions extraction stages, one per part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from taguru_ray.contract.items import MAX_LINE_BYTES, MAX_PASSAGE_BYTES
from taguru_ray.sessions.batches import DEFAULT_KINDS, OPTIONAL_KINDS
from taguru_ray.sessions.events import Event, Session

PROFILES: tuple[str, ...] = ("dialogue", "full")
# What people and agents said: the model's default candidates (`batches.DEFAULT_KINDS`).
DIALOGUE_KINDS = DEFAULT_KINDS
# Room left under each cap for the passage line's keys, date and tags.
_MARGIN = 64 * 1024
PART_BYTES = MAX_PASSAGE_BYTES - _MARGIN
PART_LINE_BYTES = MAX_LINE_BYTES - _MARGIN
SEPARATOR = "\n\n"  # between two turns' blocks in a passage


def in_passage(session: Session, event: Event) -> bool:
    """Whether the turn is written in the session's passage under its profile."""
    if session.passage == "full":
        return True
    return event.kind in DIALOGUE_KINDS or event.kind in session.kinds


def passage_events(session: Session, events: Sequence[Event]) -> list[Event]:
    return [event for event in events if in_passage(session, event)]


def parse_kinds(text: str) -> tuple[str, ...]:
    """``--candidates`` as kinds (comma-separated); ValueError naming the choices."""
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    wrong = [kind for kind in kinds if kind not in OPTIONAL_KINDS]
    if wrong or not kinds:
        raise ValueError(
            f"--candidates {text!r}: give one or more of {', '.join(sorted(OPTIONAL_KINDS))}, "
            "comma-separated (user and assistant text are always candidates)"
        )
    return kinds


def plan(
    session: Session,
    passage: str = "dialogue",
    kinds: Sequence[str] = (),
    budget: int = PART_BYTES,
    line_budget: int = PART_LINE_BYTES,
) -> list[Session]:
    """The session as extraction writes it: itself (``part`` None) when its passage fits
    the caps, else its parts, each a run of consecutive turns whose passage does."""
    if passage not in PROFILES:
        raise ValueError(f"--passage is one of {', '.join(PROFILES)}, got {passage!r}")
    whole = replace(session, passage=passage, kinds=tuple(kinds), part=None)
    runs: list[list[Event]] = [[]]
    size = line = 0
    for event in whole.events:
        if not in_passage(whole, event):
            runs[-1].append(event)
            continue
        raw, encoded = block_bytes(whole, event)
        if runs[-1] and (size + raw > budget or line + encoded > line_budget) and size:
            runs.append([])
            size = line = 0
        runs[-1].append(event)
        size += raw + len(SEPARATOR)
        line += encoded + 2 * len(SEPARATOR)
    if len(runs) == 1:
        return [whole]
    return [replace(whole, events=tuple(run), part=n) for n, run in enumerate(runs, start=1)]


def block_bytes(session: Session, event: Event) -> tuple[int, int]:
    """The UTF-8 bytes of the turn's passage block, as written and as JSON-escaped."""
    from taguru_ray.sessions.source import block_text

    block = block_text(session, event)
    raw = len(block.encode("utf-8", "surrogatepass"))
    encoded = len(json.dumps(block, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2
    return raw, encoded


def writing_flags(passage: Sequence[str], candidates: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``--passage P`` and ``--candidates K,…`` as given to ``sessions extract`` (each at
    most once) as `plan`'s ``passage`` and ``kinds``; UsageError naming the fix."""
    from taguru_ray.errors import UsageError

    if len(passage) > 1 or len(candidates) > 1:
        raise UsageError("give --passage and --candidates at most once each")
    profile = passage[0] if passage else "dialogue"
    if profile not in PROFILES:
        raise UsageError(f"--passage {profile!r}: give one of {', '.join(PROFILES)}")
    try:
        kinds = parse_kinds(candidates[0]) if candidates else ()
    except ValueError as error:
        raise UsageError(str(error)) from None
    return profile, kinds
