"""Which agent wrote a session file, from its content alone (the name and folder vary).

The first few records decide: a Codex rollout line is ``{timestamp, type, payload}``
with a rollout type; a Claude Code line has a Claude Code ``type`` and a
``sessionId`` or ``uuid`` (a ``summary`` line has neither); an OpenAI chat message has a
``role`` and no ``type``, alone on a line or as the first element of an array.
Anything else is not guessed at: ``--format`` forces a converter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from taguru_ray.sessions.convert.allowlist import CLAUDE_CODE
from taguru_ray.sessions.convert.records import is_array

# How many non-blank lines are looked at before giving up.
DETECT_LINES = 50
# How much of a file `detect` decodes: the first records are what it reads.
DETECT_BYTES = 8 << 20

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CLAUDE_CODE_TYPES = (
    frozenset({"user", "assistant", "system", "summary"}) | CLAUDE_CODE.dropped_types["line"]
)


def detect(data: bytes) -> str | None:
    """The agent format of a file's bytes (``claude-code``, ``codex``, ``openai-chat``), or None."""
    return detect_text(data[:DETECT_BYTES].decode("utf-8", errors="replace").lstrip("\ufeff"))


def detect_text(text: str) -> str | None:
    if is_array(text):
        return _first_element(text)
    for line in _lines(text, DETECT_LINES):
        try:
            agent = _agent(json.loads(line))
        except ValueError:
            continue
        if agent is not None:
            return agent
    return None


def _agent(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    type_ = value.get("type")
    if not isinstance(type_, str | None):  # a list or an object: no format's, and unhashable
        return None
    if "payload" in value and type_ in CODEX_TYPES:
        return "codex"
    if type_ in CLAUDE_CODE_TYPES and (
        "sessionId" in value or "uuid" in value or type_ == "summary"
    ):
        return "claude-code"
    if isinstance(value.get("role"), str) and "type" not in value:
        return "openai-chat"
    return None


def _first_element(text: str) -> str | None:
    start = text.index("[") + 1
    while start < len(text) and text[start] in " \t\r\n":
        start += 1
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return "openai-chat" if _agent(value) == "openai-chat" else None


def _lines(text: str, limit: int) -> Iterator[str]:
    """The first ``limit`` non-blank lines, found without splitting the whole text."""
    start = found = 0
    while start < len(text) and found < limit:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line:
            found += 1
            yield line
        start = end + 1
