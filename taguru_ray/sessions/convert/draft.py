"""What every converter shares: a draft session, times, canonical JSON, pairing, `seq`.

A converter appends `Event`s with ``seq = -1`` in file order; `finish` then pairs tool
results with their calls, normalises text (NFC; a lone surrogate, which UTF-8 cannot
hold, becomes U+FFFD), drops the events whose text is empty or blank, and numbers the
rest densely from 0 — so `seq` is the append order after every dedupe and drop.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from taguru_ray.sessions.events import Event, Kind, Origin, Tool

UNKNOWN_TOOL = "unknown"  # the name of a result whose call is not in the file
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Draft:
    """A session as a converter reads it, before `finish`."""

    events: list[Event] = field(default_factory=list)
    session_id: str | None = None
    started_ms: int | None = None
    cwd: str | None = None
    branch: str | None = None
    model: str | None = None

    def add(
        self,
        speaker_id: str,
        kind: Kind,
        text: str,
        origin: Origin,
        *,
        ts_ms: int | None,
        tool: Tool | None = None,
        sidechain: bool = False,
    ) -> None:
        exact = ts_ms is not None
        event = Event(-1, speaker_id, ts_ms, exact, kind, text, origin, tool, sidechain=sidechain)
        self.events.append(event)


def epoch_ms(value: str) -> int | None:
    """An ISO-8601 time as epoch milliseconds (no zone: UTC); None when it does not parse."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, non-ASCII as itself: one spelling per input, quotable."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def arguments_text(arguments: str) -> str:
    """A call's JSON-string arguments as canonical JSON; verbatim when they are not JSON."""
    try:
        return canonical_json(json.loads(arguments))
    except ValueError:
        return arguments


def finish(events: Iterable[Event]) -> tuple[Event, ...]:
    """Tool results named by their calls; text NFC; blank events dropped; `seq` 0, 1, …"""
    events = list(events)
    names = {
        event.tool.call_id: event.tool.name
        for event in events
        if event.kind == "tool_call" and event.tool is not None and event.tool.call_id
    }
    finished: list[Event] = []
    for event in events:
        text = unicodedata.normalize("NFC", _LONE_SURROGATE.sub("\ufffd", event.text))
        if text.strip() == "":
            continue
        if event.kind == "tool_result" and event.tool is not None:
            event = _named(event, names)
        finished.append(replace(event, seq=len(finished), text=text))
    return tuple(finished)


def _named(result: Event, names: dict[str, str]) -> Event:
    """A result speaks as ``tool:<name>`` of the call with its id (its own name, or unknown)."""
    assert result.tool is not None
    name = names.get(result.tool.call_id or "") or result.tool.name or UNKNOWN_TOOL
    return replace(result, speaker_id=f"tool:{name}", tool=replace(result.tool, name=name))
