"""What the session store hands back, as types: a session's row, a search hit, a
parsed handle — and the errors a user can cause reading it.

A handle is how every use of a session points at a turn (seed 004, "04 / Use":
each line starts with it): ``cc:<session_id>#<seq>``, the agent's short prefix
(`HANDLE_PREFIX`) or its full name, ``#<seq>`` left off for a whole session.
The errors carry their exit code (`taguru_ray.errors`) and the fix in their
message, so the CLI decides nothing but where to print them.
"""

from __future__ import annotations

from dataclasses import dataclass

from taguru_ray.errors import TaguruRayError, UsageError
from taguru_ray.sessions.events import HANDLE_PREFIX

_AGENT_BY_PREFIX = {prefix: agent for agent, prefix in HANDLE_PREFIX.items()}


class StoreNotFound(TaguruRayError):
    """No session store in the folder (exit 1); the message names the import that makes one."""


class HandleNotFound(TaguruRayError):
    """The handle's session or turn is not in the store (exit 1)."""


class BadHandle(UsageError):
    """The handle is not ``<agent>:<session_id>[#<seq>]`` (exit 2)."""


class BadQuery(UsageError):
    """An empty search query or a limit below 1 (exit 2)."""


@dataclass(frozen=True)
class Handle:
    agent: str
    session_id: str
    seq: int | None = None  # None: the whole session

    def __str__(self) -> str:
        return turn_handle(self.agent, self.session_id, self.seq)


def turn_handle(agent: str, session_id: str, seq: int | None = None) -> str:
    """``cc:<session_id>#<seq>`` (``cc:<session_id>`` for a whole session)."""
    base = f"{HANDLE_PREFIX.get(agent, agent)}:{session_id}"
    return base if seq is None else f"{base}#{seq}"


def parse_handle(text: str) -> Handle:
    """A handle's parts; BadHandle for anything else (its message shows the form)."""
    prefix, colon, rest = text.strip().partition(":")
    agent = _AGENT_BY_PREFIX.get(prefix, prefix if prefix in HANDLE_PREFIX else None)
    session_id, hash_, seq_text = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if not colon or agent is None or not session_id:
        known = ", ".join(f"{p} ({a})" for a, p in HANDLE_PREFIX.items())
        raise BadHandle(
            f"{text!r} is not a handle — give <agent>:<session_id>[#<seq>], e.g. cc:3f2a…#12, "
            f"agent one of {known}"
        )
    if hash_ and not (seq_text.isascii() and seq_text.isdigit()):
        raise BadHandle(f"{text!r}: the turn after '#' must be a number, e.g. #12")
    return Handle(agent, session_id, int(seq_text) if hash_ else None)


@dataclass(frozen=True)
class SessionRow:
    """One stored session, as `sessions list` shows it."""

    agent: str
    session_id: str
    handle: str
    started_ms: int | None
    turns: int
    file: str
    facts: int | None  # None until extraction has written the session's facts


@dataclass(frozen=True)
class Hit:
    """One turn a search found, ranked; `snippet` is its text around the first match."""

    handle: str
    agent: str
    session_id: str
    seq: int
    ts_ms: int | None
    speaker_id: str
    kind: str
    snippet: str
    score: float | None  # -bm25, higher is better; None for a short query's LIKE scan
