"""The session store's rows as records and back: an `Event` as its row's values, a row
as an `Event`, a `SessionRow` or a `Hit` — one place that knows the column order —
and the fingerprint that tells an unchanged conversion from a changed one."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from taguru_ray.sessions.events import Event, Origin, Session, Tool
from taguru_ray.sessions.index_query import snippet
from taguru_ray.sessions.index_records import Hit, SessionRow, turn_handle

EVENT_COLUMNS = (
    "seq, speaker_id, ts_ms, ts_exact, kind, text, line, uuid, parent, block,"
    " tool_name, tool_call_id, tool_is_error, branch, sidechain"
)
SESSION_COLUMNS = "agent, session_id, started_ms, turns, file, facts"


def event_values(event: Event) -> tuple[Any, ...]:
    tool = event.tool
    return (
        event.seq,
        event.speaker_id,
        event.ts_ms,
        int(event.ts_exact),
        event.kind,
        event.text,
        event.origin.line,
        event.origin.uuid,
        event.origin.parent,
        event.origin.block,
        tool.name if tool else None,
        tool.call_id if tool else None,
        None if tool is None or tool.is_error is None else int(tool.is_error),
        event.branch,
        int(event.sidechain),
    )


def event(row: tuple[Any, ...]) -> Event:
    (
        seq,
        speaker_id,
        ts_ms,
        ts_exact,
        kind,
        text,
        line,
        uuid,
        parent,
        block,
        tool_name,
        call_id,
        is_error,
        branch,
        sidechain,
    ) = row
    tool = None
    if tool_name is not None:
        tool = Tool(tool_name, call_id, None if is_error is None else bool(is_error))
    return Event(
        seq,
        speaker_id,
        ts_ms,
        bool(ts_exact),
        kind,
        text,
        Origin(line, uuid, parent, block),
        tool=tool,
        branch=branch,
        sidechain=bool(sidechain),
    )


def fingerprint(session: Session) -> str:
    """sha256 of everything a conversion made of the file but where it was read from:
    the file's digest, the masks, the allow-list, the session's fields and every turn."""
    made = replace(session, file="")
    return hashlib.sha256(repr(made).encode()).hexdigest()


def hit(row: tuple[Any, ...], words: list[str]) -> Hit:
    agent, session_id, seq, ts_ms, speaker_id, kind, text, bm25 = row
    score = None if bm25 is None else -bm25
    handle = turn_handle(agent, session_id, seq)
    return Hit(handle, agent, session_id, seq, ts_ms, speaker_id, kind, snippet(text, words), score)


def session_row(row: tuple[Any, ...]) -> SessionRow:
    agent, session_id, started_ms, turns, file, facts = row
    return SessionRow(
        agent, session_id, turn_handle(agent, session_id), started_ms, turns, file, facts
    )
