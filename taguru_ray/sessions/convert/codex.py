"""Codex rollout JSONL → unified events (SESSIONS.md §1–§3, allow-list `CODEX`).

Every line is ``{timestamp, type, payload}``; the line's ``timestamp`` is the event's.

- ``session_meta`` (the first) gives the session id, cwd and git branch; a later one
  (a resumed or forked history) is checked and ignored. ``turn_context`` is dropped,
  its ``model`` kept as the session's.
- ``response_item`` is the conversation: ``message`` (one event per text item;
  ``developer``/``system`` roles and injected user items — ``<environment_context>``,
  ``<user_instructions>``, AGENTS.md instructions — are ``system``), ``reasoning``
  (its ``summary`` only, one ``thinking`` event per part), calls and outputs paired by
  ``call_id``. A ``function_call``'s text is its ``arguments`` as canonical JSON (verbatim
  if they are not JSON); a ``custom_tool_call``'s free-form ``input`` is verbatim.
- ``event_msg`` ``user_message`` / ``agent_message`` are copies of response_item
  messages, written first. Each copy is matched to the nearest unmatched message of
  the same role with the same text (stripped, NFC; an item or the message's items
  joined) and dropped; a copy with no original — older rollouts, or a message the
  response_items do not hold — is kept in its place, so no turn is lost or doubled.
- ``compacted`` → ``compaction``. Everything else in ``event_msg`` is telemetry or a
  copy, dropped by name in the allow-list.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.sessions.convert.allowlist import CODEX as ALLOW
from taguru_ray.sessions.convert.allowlist import Walk
from taguru_ray.sessions.convert.draft import Draft, arguments_text, canonical_json, epoch_ms
from taguru_ray.sessions.convert.records import Record
from taguru_ray.sessions.convert.refusal import Refused, type_name
from taguru_ray.sessions.events import Event, Kind, Origin, Tool

AGENT = "codex"
SPEAKER = "agent:codex"
# User-role text items Codex writes itself: the environment, instructions files.
INJECTED_PREFIXES: tuple[str, ...] = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)
_PAYLOAD = "$.payload"


@dataclass
class _Message:
    """A response_item message's text, as an event_msg copy of it would read."""

    kind: Kind
    line: int
    keys: frozenset[str]
    matched: bool = False


@dataclass(frozen=True)
class _Read:
    walk: Walk
    ts_ms: int | None

    def origin(self, block: int | None = None) -> Origin:
        return Origin(self.walk.line, block=block)


def convert(records: Sequence[Record]) -> Draft:
    draft = Draft()
    messages: list[_Message] = []
    copies: list[int] = []  # indexes in draft.events of event_msg copies
    for record in records:
        walk = ALLOW.walk(record.line)
        line = walk.obj(record.value, "line", "$")
        type_, payload = line.get("type"), line.get("payload")
        stamp = walk.maybe_text(line, "timestamp", "$")
        ts_ms = None if stamp is None else epoch_ms(stamp)
        if stamp is not None and ts_ms is None:
            raise walk.refuse("not an ISO-8601 time", "$.timestamp")
        read = _Read(walk, ts_ms)
        if ALLOW.drops("line", type_):
            model = payload.get("model") if isinstance(payload, dict) else None
            draft.model = draft.model or (model if isinstance(model, str) else None)
        elif type_ == "session_meta":
            _meta(read, payload, draft)
        elif type_ == "response_item":
            _response_item(read, payload, draft, messages)
        elif type_ == "event_msg":
            _event(read, payload, draft, copies)
        elif type_ == "compacted":
            compacted = walk.obj(payload, "compacted", _PAYLOAD)
            text = walk.text(compacted, "message", _PAYLOAD)
            draft.add("system", "compaction", text, read.origin(), ts_ms=ts_ms)
        else:
            raise walk.unknown_type(type_, "$.type")
    if draft.session_id is None:
        raise Refused(f"no session_meta with an id — not a Codex rollout ({ALLOW.tag})")
    draft.events = _without_copies(draft.events, copies, messages)
    return draft


def _meta(read: _Read, payload: Any, draft: Draft) -> None:
    walk = read.walk
    meta = walk.obj(payload, "session_meta", _PAYLOAD)
    git = meta.get("git")
    branch = None
    if git is not None:
        branch = walk.maybe_text(
            walk.obj(git, "git", f"{_PAYLOAD}.git"), "branch", f"{_PAYLOAD}.git"
        )
    session_id = walk.text(meta, "id", _PAYLOAD)
    stamp = walk.maybe_text(meta, "timestamp", _PAYLOAD)
    if draft.session_id is not None:
        return
    draft.session_id, draft.branch = session_id, branch
    draft.cwd = walk.maybe_text(meta, "cwd", _PAYLOAD)
    draft.started_ms = (epoch_ms(stamp) if stamp else None) or read.ts_ms


def _response_item(read: _Read, payload: Any, draft: Draft, messages: list[_Message]) -> None:
    walk, ts = read.walk, read.ts_ms
    type_ = payload.get("type") if isinstance(payload, dict) else None
    if not isinstance(payload, dict):
        raise walk.refuse("expected a JSON object", _PAYLOAD)
    if ALLOW.drops("response_item", type_):
        return
    if type_ == "message":
        _message(read, walk.obj(payload, "message", _PAYLOAD), draft, messages)
    elif type_ == "reasoning":
        item = walk.obj(payload, "reasoning", _PAYLOAD)
        for index, part in enumerate(walk.items(item, "summary", _PAYLOAD)):
            path = f"{_PAYLOAD}.summary[{index}]"
            text = _typed_text(walk, part, ("summary_text",), path)
            draft.add(SPEAKER, "thinking", text, read.origin(index), ts_ms=ts)
    elif type_ in ("function_call", "custom_tool_call"):
        item = walk.obj(payload, type_, _PAYLOAD)
        tool = Tool(walk.text(item, "name", _PAYLOAD), walk.text(item, "call_id", _PAYLOAD))
        text = (
            arguments_text(walk.text(item, "arguments", _PAYLOAD))
            if type_ == "function_call"
            else walk.text(item, "input", _PAYLOAD)
        )
        draft.add(SPEAKER, "tool_call", text, read.origin(), ts_ms=ts, tool=tool)
    elif type_ in ("function_call_output", "custom_tool_call_output"):
        item = walk.obj(payload, type_, _PAYLOAD)
        text, is_error = _output(walk, item.get("output"), f"{_PAYLOAD}.output")
        tool = Tool("", walk.text(item, "call_id", _PAYLOAD), is_error)
        draft.add("tool:", "tool_result", text, read.origin(), ts_ms=ts, tool=tool)
    elif type_ in ("local_shell_call", "web_search_call"):
        item = walk.obj(payload, type_, _PAYLOAD)
        name = "local_shell" if type_ == "local_shell_call" else "web_search"
        tool = Tool(name, walk.maybe_text(item, "call_id", _PAYLOAD))
        action = item.get("action")
        text = "" if action is None else canonical_json(action)
        draft.add(SPEAKER, "tool_call", text, read.origin(), ts_ms=ts, tool=tool)
    else:
        raise walk.unknown_type(type_, f"{_PAYLOAD}.type")


def _message(read: _Read, item: dict[str, Any], draft: Draft, messages: list[_Message]) -> None:
    walk = read.walk
    role = walk.text(item, "role", _PAYLOAD)
    if role not in ("user", "assistant", "developer", "system"):
        raise walk.refuse(f"unknown role{type_name(role)}", f"{_PAYLOAD}.role")
    own: list[str] = []
    for index, part in enumerate(walk.items(item, "content", _PAYLOAD)):
        path = f"{_PAYLOAD}.content[{index}]"
        if ALLOW.drops("content", part.get("type") if isinstance(part, dict) else None):
            continue
        text = _typed_text(walk, part, ("input_text", "output_text"), path)
        origin = read.origin(index)
        if role == "assistant":
            draft.add(SPEAKER, "assistant_text", text, origin, ts_ms=read.ts_ms)
            own.append(text)
        elif role == "user" and not text.lstrip().startswith(INJECTED_PREFIXES):
            draft.add("user", "user_text", text, origin, ts_ms=read.ts_ms)
            own.append(text)
        else:
            draft.add("system", "system", text, origin, ts_ms=read.ts_ms)
    if own:
        kind: Kind = "assistant_text" if role == "assistant" else "user_text"
        keys = {_key(text) for text in own} | {_key("\n".join(own)), _key("".join(own))}
        messages.append(_Message(kind, walk.line, frozenset(keys)))


def _event(read: _Read, payload: Any, draft: Draft, copies: list[int]) -> None:
    walk = read.walk
    type_ = payload.get("type") if isinstance(payload, dict) else None
    if not isinstance(payload, dict):
        raise walk.refuse("expected a JSON object", _PAYLOAD)
    if ALLOW.drops("event_msg", type_):
        return
    if type_ not in ("user_message", "agent_message"):
        raise walk.unknown_type(type_, f"{_PAYLOAD}.type")
    text = walk.text(walk.obj(payload, type_, _PAYLOAD), "message", _PAYLOAD)
    copies.append(len(draft.events))
    if type_ == "user_message":
        draft.add("user", "user_text", text, read.origin(), ts_ms=read.ts_ms)
    else:
        draft.add(SPEAKER, "assistant_text", text, read.origin(), ts_ms=read.ts_ms)


def _typed_text(walk: Walk, part: Any, types: tuple[str, ...], path: str) -> str:
    type_ = part.get("type") if isinstance(part, dict) else None
    if type_ not in types:
        raise walk.unknown_type(type_, f"{path}.type")
    return walk.text(walk.obj(part, type_, path), "text", path)


def _output(walk: Walk, output: Any, path: str) -> tuple[str, bool | None]:
    """An output's text and whether it failed (None: the rollout does not say)."""
    if output is None or isinstance(output, str):
        return output or "", None
    if isinstance(output, list):
        texts = [
            _typed_text(walk, part, ("input_text", "output_text"), f"{path}[{index}]")
            for index, part in enumerate(output)
            if not ALLOW.drops("content", part.get("type") if isinstance(part, dict) else None)
        ]
        return "\n".join(texts), None
    item = walk.obj(output, "output", path)
    success = item.get("success")
    if success is not None and not isinstance(success, bool):
        raise walk.refuse("expected true or false", f"{path}.success")
    return walk.maybe_text(item, "content", path) or "", None if success is None else not success


def _without_copies(
    events: list[Event], copies: list[int], messages: list[_Message]
) -> list[Event]:
    """The events less each event_msg copy that a response_item message holds."""
    dropped: set[int] = set()
    for index in copies:
        copy = events[index]
        key = _key(copy.text)
        same = [m for m in messages if not m.matched and m.kind == copy.kind and key in m.keys]
        if same:
            nearest = min(same, key=lambda message: abs(message.line - copy.origin.line))
            nearest.matched = True
            dropped.add(index)
    return [event for index, event in enumerate(events) if index not in dropped]


def _key(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip()
