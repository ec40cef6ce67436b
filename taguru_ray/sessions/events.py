"""The unified session: one `Event` per turn, whatever agent wrote it (SESSIONS.md §3).

Converters fill these from each agent's own format; everything after — the index,
batches, prompts, checks and the source file — reads only these. `seq` is dense and
0-based in append order after dedupe; `text` is the turn verbatim (NFC), a tool
call's text the canonical JSON of its input, so a quote can cite a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal[
    "user_text", "assistant_text", "tool_call", "tool_result", "thinking", "system", "compaction"
]
KINDS: tuple[str, ...] = (
    "user_text",
    "assistant_text",
    "tool_call",
    "tool_result",
    "thinking",
    "system",
    "compaction",
)
Agent = Literal["claude-code", "codex", "openai-chat"]
AGENTS: tuple[str, ...] = ("claude-code", "codex", "openai-chat")
# Short agent names in handles (`cc:3f2a…#12`).
HANDLE_PREFIX = {"claude-code": "cc", "codex": "cx", "openai-chat": "oc"}


@dataclass(frozen=True)
class Tool:
    name: str
    call_id: str | None = None
    is_error: bool | None = None


@dataclass(frozen=True)
class Origin:
    """Where in the agent's file the turn came from (never read for meaning)."""

    line: int  # 1-based line of the file (the array index + 1 for a JSON array)
    uuid: str | None = None
    parent: str | None = None
    block: int | None = None  # the content block within the line's message


@dataclass(frozen=True)
class Event:
    seq: int
    speaker_id: str  # user | agent:<name> | tool:<name> | system
    ts_ms: int | None
    ts_exact: bool
    kind: Kind
    text: str
    origin: Origin
    tool: Tool | None = None
    branch: str | None = None  # "abandoned" for a rewound DAG branch (Claude Code)
    sidechain: bool = False  # a Claude Code subagent's turn inside the main file


@dataclass(frozen=True)
class Session:
    """One converted session file."""

    agent: str  # one of AGENTS
    session_id: str
    file: str  # the path or URL it was read from
    digest: str  # sha256 of the file's bytes, before any masking
    events: tuple[Event, ...]
    started_ms: int | None = None
    cwd: str | None = None
    branch: str | None = None  # git branch, when the agent recorded it
    model: str | None = None
    masked: tuple[str, ...] = field(default=())  # "line N: rule" per secret masked (--mask)
    allowlist: str | None = None  # the allow-list it was converted under: "codex allow-list v1"

    @property
    def source(self) -> str:
        """The Taguru source id its facts are written under."""
        return f"session:{self.agent}:{self.session_id}"

    @property
    def handle(self) -> str:
        return f"{HANDLE_PREFIX[self.agent]}:{self.session_id}"
