"""OpenAI-style chat logs → unified events (SESSIONS.md §1–§3, allow-list `OPENAI_CHAT`).

A log is Chat Completions messages: one JSON array, or JSON Lines of them. It has no
timestamps (``ts_ms`` None, ``ts_exact`` False) and no session id (the caller's, or
the first 16 hex of the file's sha256). `Origin.line` is the array index + 1 or the
physical line.

- ``system`` / ``developer`` → ``system``; ``user`` → ``user_text``; ``assistant`` →
  ``assistant_text`` (a ``refusal`` too; ``reasoning_content``, where a provider writes
  it, → ``thinking``), then one ``tool_call`` per ``tool_calls`` entry, in order, its
  text the ``arguments`` as canonical JSON; the legacy ``function_call`` likewise.
- ``tool`` → ``tool_result`` paired by ``tool_call_id``; the legacy ``function`` role →
  ``tool_result`` named by its ``name``.
- ``content`` is a string, null, or parts: ``text`` and ``refusal`` parts are events
  (``block`` = the part's index; a tool call's ``block`` is its index in ``tool_calls``);
  image, audio and file parts are dropped by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taguru_ray.sessions.convert.allowlist import OPENAI_CHAT as ALLOW
from taguru_ray.sessions.convert.allowlist import Walk
from taguru_ray.sessions.convert.draft import Draft, arguments_text
from taguru_ray.sessions.convert.records import Record
from taguru_ray.sessions.convert.refusal import type_name
from taguru_ray.sessions.events import Kind, Origin, Tool

AGENT = "openai-chat"
SPEAKER = "agent:openai-chat"
_SPEAKERS: dict[str, tuple[str, Kind]] = {
    "system": ("system", "system"),
    "developer": ("system", "system"),
    "user": ("user", "user_text"),
    "assistant": (SPEAKER, "assistant_text"),
    "tool": ("tool:", "tool_result"),
    "function": ("tool:", "tool_result"),
}


def convert(records: Sequence[Record]) -> Draft:
    draft = Draft()
    for record in records:
        walk = ALLOW.walk(record.line)
        path = "$" if record.index is None else f"$[{record.index}]"
        message = walk.obj(record.value, "message", path)
        role = walk.text(message, "role", path)
        if role not in _SPEAKERS:
            raise walk.refuse(f"unknown role{type_name(role)}", f"{path}.role")
        speaker, kind = _SPEAKERS[role]
        line = record.origin_line
        tool = None
        if kind == "tool_result":
            call_id = walk.maybe_text(message, "tool_call_id", path)
            tool = Tool(walk.maybe_text(message, "name", path) or "", call_id)
        reasoning = walk.maybe_text(message, "reasoning_content", path)
        if reasoning:
            draft.add(SPEAKER, "thinking", reasoning, Origin(line), ts_ms=None)
        for block, text in _content(walk, message.get("content"), f"{path}.content"):
            draft.add(speaker, kind, text, Origin(line, block=block), ts_ms=None, tool=tool)
        refusal = walk.maybe_text(message, "refusal", path)
        if refusal:
            draft.add(speaker, kind, refusal, Origin(line), ts_ms=None)
        _calls(walk, message, path, line, draft)
    return draft


def _content(walk: Walk, content: Any, path: str) -> list[tuple[int | None, str]]:
    """The text of ``content`` by part: ``[(None, text)]`` for a string."""
    if content is None:
        return []
    if isinstance(content, str):
        return [(None, content)]
    if not isinstance(content, list):
        raise walk.refuse("expected a string, null or a list", path)
    texts: list[tuple[int | None, str]] = []
    for index, part in enumerate(content):
        part_path = f"{path}[{index}]"
        type_ = part.get("type") if isinstance(part, dict) else None
        if ALLOW.drops("part", type_):
            continue
        if type_ not in ("text", "refusal"):
            raise walk.unknown_type(type_, f"{part_path}.type")
        texts.append((index, walk.text(walk.obj(part, type_, part_path), type_, part_path)))
    return texts


def _calls(walk: Walk, message: dict[str, Any], path: str, line: int, draft: Draft) -> None:
    for index, call in enumerate(walk.items(message, "tool_calls", path)):
        call_path = f"{path}.tool_calls[{index}]"
        call = walk.obj(call, "tool_call", call_path)
        kind = walk.maybe_text(call, "type", call_path)
        if kind not in (None, "function"):
            raise walk.unknown_type(kind, f"{call_path}.type")
        function_path = f"{call_path}.function"
        function = walk.obj(call.get("function"), "function", function_path)
        tool = Tool(walk.text(function, "name", function_path), walk.text(call, "id", call_path))
        text = arguments_text(walk.text(function, "arguments", function_path))
        draft.add(SPEAKER, "tool_call", text, Origin(line, block=index), ts_ms=None, tool=tool)
    legacy = message.get("function_call")
    if legacy is not None:
        legacy_path = f"{path}.function_call"
        legacy = walk.obj(legacy, "function", legacy_path)
        tool = Tool(walk.text(legacy, "name", legacy_path))
        text = arguments_text(walk.text(legacy, "arguments", legacy_path))
        draft.add(SPEAKER, "tool_call", text, Origin(line), ts_ms=None, tool=tool)
