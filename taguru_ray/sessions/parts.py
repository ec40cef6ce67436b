"""What of a session its source file holds, and in how many parts (SESSIONS.md §8).

- **Passage profile.** ``dialogue`` (the default) writes what people and agents said —
  user and assistant text, plus any kind offered to the model (`Session.kinds`), so
  every fact's turn is in the passage; tool calls, tool output, thinking, system text
  and compaction summaries stay in the store, where ``sessions show`` reads them.
  ``full`` writes every turn. A coding session is mostly tool output: 1 KB of
  dialogue came with a 335 KB passage before this profile.
- **Parts.** Extraction stages only the turns the passage writes. A session whose
  staged turns are over the cap (`MAX_PASSAGE_BYTES`, 8 MiB: extract's segment cap,
  import's passage cap) could neither be extracted nor imported, so it is written as
  parts, each a `Session` with ``part`` 1, 2, … (source id
  ``session:{agent}:{id}/part-001``), cut at turn boundaries: each part a run of
  consecutive turns that fits. A single turn larger than a part (a ``cat`` of a log
  under ``full``) is staged cut at a line boundary, marked with how much was left out
  and the handle that shows it whole — the store keeps every byte.
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
from dataclasses import asdict, replace

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.sessions.batches import DEFAULT_KINDS, OPTIONAL_KINDS
from taguru_ray.sessions.events import Event, Session

PROFILES: tuple[str, ...] = ("dialogue", "full")
# What people and agents said: the model's default candidates (`batches.DEFAULT_KINDS`).
DIALOGUE_KINDS = DEFAULT_KINDS
# A part's staged turns, leaving room under the 8 MiB segment cap for the session's
# own fields (file, masked lines, stages).
PART_BYTES = MAX_PASSAGE_BYTES - 512 * 1024


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
) -> list[Session]:
    """The session as extraction stages it: the turns its passage writes, whole (``part``
    None) when they fit a segment, else in parts of consecutive turns that each do.

    A segment is what extract's engine reads, capped at import's 8 MiB; a staged turn's
    JSON is its text escaped plus its fields, never less than its passage block, so a
    part within `budget` staged also writes a passage and a passage line under the caps.
    """
    if passage not in PROFILES:
        raise ValueError(f"--passage is one of {', '.join(PROFILES)}, got {passage!r}")
    whole = replace(session, passage=passage, kinds=tuple(kinds), part=None)
    runs: list[list[Event]] = [[]]
    size = 0
    for event in passage_events(whole, whole.events):
        event, length = fitted(whole, event, budget)
        if runs[-1] and size + length > budget:
            runs.append([])
            size = 0
        runs[-1].append(event)
        size += length
    if len(runs) == 1:
        return [replace(whole, events=tuple(runs[0]))]
    return [replace(whole, events=tuple(run), part=n) for n, run in enumerate(runs, start=1)]


def staged_bytes(event: Event) -> int:
    """The turn's bytes in the staged form (`program.stage`): its fields as JSON."""
    return len(json.dumps(asdict(event), ensure_ascii=False).encode("utf-8", "surrogatepass")) + 1


def fitted(session: Session, event: Event, budget: int) -> tuple[Event, int]:
    """The turn, and its staged bytes; a turn over `budget` alone is cut at a line
    boundary and marked with the handle that shows it whole (the store keeps it all;
    its ``sha256`` and mentions stay those of the whole turn)."""
    length = staged_bytes(event)
    if length <= budget:
        return event, length
    mark = f"\n⟦… {{}} bytes cut here — 'sessions show {session.handle}#{event.seq}' has them⟧"
    room = budget - (length - len(event.text.encode("utf-8", "surrogatepass"))) - 1024
    low, high = 0, len(event.text)  # the longest prefix whose escaped bytes fit the room
    while low < high:
        middle = (low + high + 1) // 2
        if len(json.dumps(event.text[:middle], ensure_ascii=False).encode()) <= room:
            low = middle
        else:
            high = middle - 1
    kept = event.text[:low]
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    left = len(event.text.encode("utf-8", "surrogatepass")) - len(
        kept.encode("utf-8", "surrogatepass")
    )
    cut = replace(event, text=kept.rstrip() + mark.format(left))
    return cut, staged_bytes(cut)


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
