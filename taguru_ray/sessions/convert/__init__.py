"""One converter per agent format into the unified `Session` (SESSIONS.md §1–§3).

The contract every caller codes against:

- `convert(data, *, file, format=None, mask=False, rules=None, session_id=None, key=b"")
  -> Session`
  — the secrets scan runs first, on the raw lines, before the format is detected
  (`secrets.py`: extract's ``--redact`` secrets rules, then ``rules``, a user's
  ``--redact-rules`` as `parse_rules_file` returns them); a hit refuses the session
  (rule and line, never the value) or, with ``mask``, is replaced by extract's
  placeholder ``«redacted <rule> <hex>»`` (its hex an HMAC under ``key``, extract's
  ``--redact`` key, when one is given) and recorded in `Session.masked` as
  ``"line N: rule"``. Then the format — detected from content unless ``format``
  forces one of `FORMATS` — converts under its versioned allow-list
  (`allowlist.py`, named in `Session.allowlist`): an unknown field refuses the
  session with its line and JSON path. A session of 0 events is refused.
  ``session_id`` names an OpenAI chat log (``--id``); without it, and for the formats
  that carry their own id, it is unused (an OpenAI chat log then takes the first 16
  hex of its sha256). ``started_ms`` is an OpenAI chat log's start (``--started-at``),
  which it does not record: the session's start (its source file's ``date``) and every
  turn's ``ts_ms``, with ``ts_exact`` false; the other formats keep their own times.
- `SessionRefused` — the one-line reason, naming the file (`NotASession` when the file
  holds no session at all: no agent's format, or no turn — a folder walk skips those):
  ``FILE: line 57: $.message.content[2].citations: unknown field (claude-code allow-list v1)``.
  JSON nested deeper than Python's reader follows is refused so too, never a RecursionError.
  A ``format`` outside `FORMATS` is the caller's error, a `ValueError`, not a refusal.
- `detect(data) -> str | None` — the agent format of a file's content.

One module per format (`claude_code`, `codex`, `openai_chat`) maps records to events
under its rules; `draft.finish` gives every format the same `seq`, NFC and pairing.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from taguru_ray.sessions.convert import claude_code, codex, openai_chat, secrets
from taguru_ray.sessions.convert.allowlist import ALLOWLISTS
from taguru_ray.sessions.convert.detect import detect, detect_text
from taguru_ray.sessions.convert.draft import Draft, finish
from taguru_ray.sessions.convert.records import Record, is_array, read, split_lines
from taguru_ray.sessions.convert.refusal import NotASession, Refused, SessionRefused
from taguru_ray.sessions.events import AGENTS, Session
from taguru_ray.text.redact import Rule

__all__ = ["ALLOWLISTS", "FORMATS", "NotASession", "SessionRefused", "convert", "detect"]

FORMATS: tuple[str, ...] = AGENTS
_CONVERTERS: dict[str, Callable[[Sequence[Record]], Draft]] = {
    claude_code.AGENT: claude_code.convert,
    codex.AGENT: codex.convert,
    openai_chat.AGENT: openai_chat.convert,
}


def convert(
    data: bytes,
    *,
    file: str,
    format: str | None = None,
    mask: bool = False,
    rules: Sequence[Rule] | None = None,
    session_id: str | None = None,
    key: bytes = b"",
    started_ms: int | None = None,
) -> Session:
    """One session file's bytes as a `Session`, or `SessionRefused` naming ``file``."""
    if format is not None and format not in _CONVERTERS:
        raise ValueError(f"format is one of {', '.join(FORMATS)}, got {format!r}")
    try:
        return _convert(data, file, format, mask, rules, session_id, key, started_ms)
    except Refused as refused:
        failure = refused.for_file(file)
    except RecursionError:  # the JSON reader (and every walk after it) recurses per level
        failure = Refused(
            f"JSON nested deeper than the reader follows (about {sys.getrecursionlimit()} "
            "levels) — no agent writes such a session"
        ).for_file(file)
    # Raised outside the handler: no exception chain, where a parser's error holds the line.
    raise failure


def _convert(
    data: bytes,
    file: str,
    format: str | None,
    mask: bool,
    rules: Sequence[Rule] | None,
    session_id: str | None,
    key: bytes = b"",
    started_ms: int | None = None,
) -> Session:
    digest = hashlib.sha256(data).hexdigest()
    text = _decoded(data)
    lines = split_lines(text)
    all_rules = secrets.secret_rules(rules)
    masked: list[secrets.Hit] = []
    if mask:
        lines, masked = secrets.mask(lines, all_rules, digest, key)
        text = "\n".join(lines)
    else:
        hit = secrets.first_secret(lines, all_rules)
        if hit is not None:
            raise secrets.refusal(hit)
    agent = format or detect_text(text)
    if agent is None:
        raise Refused(
            f"not a session this reads ({', '.join(FORMATS)}) — pass --format to force one",
            empty=True,
        )
    if agent != openai_chat.AGENT and is_array(text):
        raise Refused(f"one JSON array, not {agent} JSON Lines")
    draft = _CONVERTERS[agent](read(text))
    events = finish(draft.events)
    if not events:
        raise Refused("0 events — a session with no turns is refused", empty=True)
    if agent == openai_chat.AGENT:
        draft.session_id = session_id or digest[:16]
        if started_ms is not None:  # the caller's --started-at: every turn, not exact
            draft.started_ms = started_ms
            events = tuple(replace(e, ts_ms=started_ms, ts_exact=False) for e in events)
    if not draft.session_id:
        raise Refused(f"no session id in the file ({ALLOWLISTS[agent].tag})")
    return Session(
        agent,
        draft.session_id,
        file,
        digest,
        events,
        started_ms=draft.started_ms,
        cwd=draft.cwd,
        branch=draft.branch,
        model=draft.model,
        masked=tuple(str(hit) for hit in masked),
        allowlist=ALLOWLISTS[agent].tag,
    )


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise Refused(f"not UTF-8 text (byte {error.start})") from None
