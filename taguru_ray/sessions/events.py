"""The unified session: one `Event` per turn, whatever agent wrote it (SESSIONS.md §3).

Converters fill these from each agent's own format; everything after — the index,
batches, prompts, checks and the source file — reads only these. `seq` is dense and
0-based in append order after dedupe; `text` is the turn verbatim (NFC), a tool
call's text the canonical JSON of its input, so a quote can cite a command.

Code's own findings ride on each event (P8, P14): ``mentions`` (`mentions.py`),
``sha256`` of the verbatim text and ``source``, the Taguru source id the turn is
written under. A `Session` fills them in when it is made — from a converter, the
store or the staged form alike — so no reader meets an event without them; they
are derived, never stored apart from the text they describe.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Literal

from taguru_ray.sessions import mentions as p8

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
    source: str = ""  # session:{agent}:{id}[/part-NNN], set by its Session
    mentions: tuple[str, ...] = ()  # P8: names the turn mentions (`mentions.py`)
    sha256: str = ""  # of `text`'s UTF-8: a citation checks it quotes this very turn

    def __post_init__(self) -> None:
        if not isinstance(self.mentions, tuple):  # a list, read back from JSON
            object.__setattr__(self, "mentions", tuple(self.mentions))


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
    # How extraction writes it (`parts.py`): None whole, or which part of a session whose
    # passage is over the import cap; the passage profile; kinds offered to the model
    # beyond user and assistant text.
    part: int | None = None
    passage: str = "dialogue"
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("masked", "kinds"):  # lists, when read back from JSON
            if not isinstance(getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "events", annotated(self.events, self.source))

    @property
    def source(self) -> str:
        """The Taguru source id its facts are written under (a part's: ``…/part-001``)."""
        whole = f"session:{self.agent}:{self.session_id}"
        return whole if self.part is None else f"{whole}/part-{self.part:03d}"

    @property
    def handle(self) -> str:
        return f"{HANDLE_PREFIX[self.agent]}:{self.session_id}"


def annotated(events: tuple[Event, ...] | list[Event], source: str) -> tuple[Event, ...]:
    """The events with ``source`` set and, where not yet found, ``sha256`` and mentions.

    Mentions found before are kept (a part's turns keep the names the whole session
    carried into them); carried names run in seq order over the events given.
    """
    out: list[Event] = []
    carried: frozenset[str] = frozenset()
    for event in events:
        if not event.sha256:
            names = p8.mentions(event.text, carried)
            digest = hashlib.sha256(event.text.encode("utf-8", "surrogatepass")).hexdigest()
            event = replace(event, mentions=names, sha256=digest, source=source)
        elif event.source != source:
            event = replace(event, source=source)
        carried = p8.carry(carried, event.kind, event.mentions)
        out.append(event)
    return tuple(out)
