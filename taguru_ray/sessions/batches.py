"""Distillation: a session cut into small batches, one model call per batch per stage.

Code decides which turns a model may judge (the candidate filter) and where a batch
ends; the model never sees a turn cut in two. A batch holds whole turns up to
`BATCH_BYTES` of text; a turn larger than that is a batch of its own. Batches are
numbered in order and identified by their content, so a rerun over the same
session meets the same batches and resumes at the first one not done.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from taguru_ray.sessions.events import Event

BATCH_BYTES = 8 * 1024
# What the model is asked about by default: what people and agents said. Tool output
# and thinking are opt-in; compaction summaries never (they restate earlier turns, and
# their facts would count twice).
DEFAULT_KINDS = frozenset({"user_text", "assistant_text"})
OPTIONAL_KINDS = frozenset({"tool_result", "thinking", "tool_call"})


@dataclass(frozen=True)
class Batch:
    index: int
    events: tuple[Event, ...]

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(event.seq for event in self.events)

    @property
    def sha256(self) -> str:
        """The batch's identity: its turns' seqs, speakers and texts."""
        digest = hashlib.sha256()
        for event in self.events:
            digest.update(f"{event.seq}\0{event.speaker_id}\0".encode())
            digest.update(event.text.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()


def candidates(events: Iterable[Event], kinds: frozenset[str] = DEFAULT_KINDS) -> list[Event]:
    """The turns a model is asked about: their kind chosen, text not blank."""
    return [event for event in events if event.kind in kinds and event.text.strip()]


def cut(events: Sequence[Event], budget: int = BATCH_BYTES) -> list[Batch]:
    """Consecutive batches of whole turns, each at most `budget` bytes of text unless a
    single turn is larger."""
    batches: list[Batch] = []
    current: list[Event] = []
    size = 0
    for event in events:
        length = len(event.text.encode("utf-8"))
        if current and size + length > budget:
            batches.append(Batch(len(batches), tuple(current)))
            current, size = [], 0
        current.append(event)
        size += length
    if current:
        batches.append(Batch(len(batches), tuple(current)))
    return batches
