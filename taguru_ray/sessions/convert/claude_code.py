"""Claude Code JSONL → unified events (SESSIONS.md §1–§3, allow-list `CLAUDE_CODE`).

- One assistant response is written one line per content block, the lines sharing
  ``message.id``; each block becomes its own event, in file order (no merging, so a
  block's `Origin` is exact).
- ``tool_use`` → ``tool_call`` (text: canonical JSON of ``input``); ``tool_result`` on
  a user line → ``tool_result`` spoken by ``tool:<name>`` of the call with that id.
- ``thinking`` → ``thinking``; a ``summary`` line or an ``isCompactSummary`` user line →
  ``compaction`` (a summary line has no time); ``system`` lines → ``system``, their
  ``compact_boundary`` → ``compaction``.
- Text Claude Code wrote itself is ``system``: an assistant line of model ``<synthetic>``
  or ``isApiErrorMessage`` (an API error), and user text that is injected, not typed —
  ``isMeta``, or text starting with ``<system-reminder>``, ``<command-name>`` and the
  like. A ``<system-reminder>`` inside user text or a tool result is cut out into a
  ``system`` event of its own after the rest.
- ``isSidechain`` lines are kept with ``sidechain=True``; a sidechain's user text is the
  parent agent's prompt, so it is spoken by ``agent:claude-code``, not ``user``. A file
  whose every message line is a sidechain of one ``agentId`` is a subagent file: its
  session id is ``<sessionId>/agent-<agentId>``.
- A line whose ``uuid`` was already read is a duplicate and skipped; rewound branches
  are marked ``branch="abandoned"`` (`rewind.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from taguru_ray.sessions.convert.allowlist import CLAUDE_CODE as ALLOW
from taguru_ray.sessions.convert.allowlist import Walk
from taguru_ray.sessions.convert.draft import Draft, canonical_json, epoch_ms
from taguru_ray.sessions.convert.records import Record
from taguru_ray.sessions.convert.rewind import Node, abandoned
from taguru_ray.sessions.events import Origin, Tool

AGENT = "claude-code"
SPEAKER = "agent:claude-code"
# User text that Claude Code wrote, not the user: slash commands, their output, reminders.
SYSTEM_PREFIXES: tuple[str, ...] = (
    "<system-reminder>",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
)
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_REMINDER_CUT = re.compile(r"\n?<system-reminder>.*?</system-reminder>", re.DOTALL)
_SYNTHETIC_MODEL = "<synthetic>"


@dataclass(frozen=True)
class _Line:
    """One message line's envelope: what every event from it shares."""

    walk: Walk
    ts_ms: int | None
    uuid: str | None
    parent: str | None
    sidechain: bool
    role: str

    def origin(self, block: int | None) -> Origin:
        return Origin(self.walk.line, self.uuid, self.parent, block)


def convert(records: Sequence[Record]) -> Draft:
    draft = Draft()
    nodes: list[Node] = []
    seen: set[str] = set()
    agent_ids: set[str | None] = set()
    main_lines = 0
    for record in records:
        walk = ALLOW.walk(record.line)
        value = record.value
        if not isinstance(value, dict):
            raise walk.refuse("expected a JSON object", "$")
        type_ = value.get("type")
        if ALLOW.drops("line", type_):
            nodes += _node(value, prompt=False)
        elif type_ == "summary":
            walk.obj(value, "line.summary", "$")
            text = walk.text(value, "summary", "$")
            draft.add("system", "compaction", text, Origin(record.line), ts_ms=None)
        elif type_ in ("user", "assistant", "system"):
            uuid = value.get("uuid")
            if isinstance(uuid, str):
                if uuid in seen:
                    continue
                seen.add(uuid)
            line = _envelope(walk, value, type_, draft)
            if type_ == "system":
                _system(line, value, draft)
                nodes += _node(value, prompt=False)
                continue
            prompt = _message(line, value, draft)
            nodes += _node(value, prompt=prompt)
            agent_ids.add(walk.maybe_text(value, "agentId", "$"))
            main_lines += 0 if line.sidechain else 1
        else:
            raise walk.unknown_type(type_, "$.type")
    if draft.session_id is not None and main_lines == 0 and len(agent_ids) == 1:
        agent_id = next(iter(agent_ids))
        if agent_id:
            draft.session_id = f"{draft.session_id}/agent-{agent_id}"
    lost = abandoned(nodes)
    if lost:
        draft.events = [
            replace(event, branch="abandoned") if event.origin.uuid in lost else event
            for event in draft.events
        ]
    return draft


def _envelope(walk: Walk, value: dict[str, Any], type_: str, draft: Draft) -> _Line:
    walk.obj(value, f"line.{type_}", "$")
    draft.session_id = draft.session_id or walk.maybe_text(value, "sessionId", "$")
    draft.cwd = draft.cwd or walk.maybe_text(value, "cwd", "$")
    draft.branch = draft.branch or walk.maybe_text(value, "gitBranch", "$")
    stamp = walk.maybe_text(value, "timestamp", "$")
    ts_ms = None if stamp is None else epoch_ms(stamp)
    if stamp is not None and ts_ms is None:
        raise walk.refuse("not an ISO-8601 time", "$.timestamp")
    if draft.started_ms is None:
        draft.started_ms = ts_ms
    return _Line(
        walk,
        ts_ms,
        walk.maybe_text(value, "uuid", "$"),
        walk.maybe_text(value, "parentUuid", "$"),
        value.get("isSidechain") is True,
        type_,
    )


def _node(value: dict[str, Any], *, prompt: bool) -> list[Node]:
    """The line as a DAG node (a compaction boundary hangs off its logical parent)."""
    uuid, parent = value.get("uuid"), value.get("parentUuid") or value.get("logicalParentUuid")
    if not isinstance(uuid, str):
        return []
    sidechain = value.get("isSidechain") is True
    return [Node(uuid, parent if isinstance(parent, str) else None, prompt, sidechain)]


def _system(line: _Line, value: dict[str, Any], draft: Draft) -> None:
    subtype = line.walk.maybe_text(value, "subtype", "$")
    content = line.walk.maybe_text(value, "content", "$")
    if content:
        kind = "compaction" if subtype == "compact_boundary" else "system"
        draft.add("system", kind, content, line.origin(None), ts_ms=line.ts_ms)


def _message(line: _Line, value: dict[str, Any], draft: Draft) -> bool:
    """The message's blocks as events; whether it held the user's own text (a prompt)."""
    walk = line.walk
    message = walk.obj(value.get("message"), f"message.{line.role}", "$.message")
    injected = "compaction" if value.get("isCompactSummary") is True else None
    injected = injected or ("system" if value.get("isMeta") is True else None)
    if line.role == "assistant":
        model = walk.maybe_text(message, "model", "$.message")
        if model and model != _SYNTHETIC_MODEL:
            draft.model = draft.model or model
        elif model == _SYNTHETIC_MODEL or value.get("isApiErrorMessage") is True:
            injected = "system"  # Claude Code's own text (an API error), not the model's
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[tuple[int | None, Any]] = [(None, {"type": "text", "text": content})]
    elif isinstance(content, list):
        blocks = list(enumerate(content))
    else:
        raise walk.refuse("expected a string or a list", "$.message.content")
    prompt = False
    for index, block in blocks:
        path = "$.message.content" if index is None else f"$.message.content[{index}]"
        prompt |= _block(line, block, index, path, injected, draft)
    return prompt and not line.sidechain and injected is None


def _block(
    line: _Line, block: Any, index: int | None, path: str, injected: str | None, draft: Draft
) -> bool:
    """One content block as events; whether it was the user's own text."""
    walk, origin, ts = line.walk, line.origin(index), line.ts_ms
    type_ = block.get("type") if isinstance(block, dict) else None
    if not isinstance(block, dict):
        raise walk.refuse("expected a JSON object", path)
    if ALLOW.drops("block", type_):
        return False
    if type_ == "text":
        text = walk.text(walk.obj(block, "block.text", path), "text", path)
        if line.role == "assistant" and injected is None:
            draft.add(SPEAKER, "assistant_text", text, origin, ts_ms=ts, sidechain=line.sidechain)
            return False
        return _user_text(line, text, origin, injected, draft)
    if type_ == "thinking":
        text = walk.text(walk.obj(block, "block.thinking", path), "thinking", path)
        draft.add(SPEAKER, "thinking", text, origin, ts_ms=ts, sidechain=line.sidechain)
    elif type_ == "tool_use":
        walk.obj(block, "block.tool_use", path)
        if "input" not in block:
            raise walk.refuse("missing", f"{path}.input")
        tool = Tool(walk.text(block, "name", path), walk.text(block, "id", path))
        text = canonical_json(block["input"])
        draft.add(SPEAKER, "tool_call", text, origin, ts_ms=ts, tool=tool, sidechain=line.sidechain)
    elif type_ == "tool_result":
        _tool_result(line, walk.obj(block, "block.tool_result", path), origin, path, draft)
    else:
        raise walk.unknown_type(type_, f"{path}.type")
    return False


def _user_text(line: _Line, text: str, origin: Origin, injected: str | None, draft: Draft) -> bool:
    ts, side = line.ts_ms, line.sidechain
    if injected == "compaction":
        draft.add("system", "compaction", text, origin, ts_ms=ts, sidechain=side)
        return False
    if injected == "system" or text.lstrip().startswith(SYSTEM_PREFIXES):
        draft.add("system", "system", text, origin, ts_ms=ts, sidechain=side)
        return False
    own, reminders = split_reminders(text)
    speaker = SPEAKER if side else "user"
    draft.add(speaker, "user_text", own, origin, ts_ms=ts, sidechain=side)
    for reminder in reminders:
        draft.add("system", "system", reminder, origin, ts_ms=ts, sidechain=side)
    return own.strip() != ""


def _tool_result(
    line: _Line, block: dict[str, Any], origin: Origin, path: str, draft: Draft
) -> None:
    walk = line.walk
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise walk.refuse("expected true or false", f"{path}.is_error")
    tool = Tool("", walk.text(block, "tool_use_id", path), is_error)
    text, reminders = split_reminders(_result_text(walk, block.get("content"), f"{path}.content"))
    side = line.sidechain
    draft.add("tool:", "tool_result", text, origin, ts_ms=line.ts_ms, tool=tool, sidechain=side)
    for reminder in reminders:
        draft.add("system", "system", reminder, origin, ts_ms=line.ts_ms, sidechain=side)


def _result_text(walk: Walk, content: Any, path: str) -> str:
    """A tool result's text: a string, or its text blocks joined by newlines."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise walk.refuse("expected a string or a list", path)
    texts = []
    for index, item in enumerate(content):
        item_path = f"{path}[{index}]"
        type_ = item.get("type") if isinstance(item, dict) else None
        if ALLOW.drops("block", type_):
            continue
        if type_ != "text":
            raise walk.unknown_type(type_, f"{item_path}.type")
        texts.append(walk.text(walk.obj(item, "block.text", item_path), "text", item_path))
    return "\n".join(texts)


def split_reminders(text: str) -> tuple[str, list[str]]:
    """The text without its ``<system-reminder>…</system-reminder>`` spans, and the spans.

    Unchanged when it holds none; otherwise each span goes with the newline before it,
    and newlines left at either end are trimmed — never spaces, which may be the
    indentation of a tool result's first line.
    """
    reminders = _REMINDER.findall(text)
    if not reminders:
        return text, []
    return _REMINDER_CUT.sub("", text).strip("\n"), reminders
