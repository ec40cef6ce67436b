"""The ports one segment's extraction talks through: the job, its outcome, the model side
and the recorder. The engine (Ray) and the tests plug into these; `segment` uses them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import Record
from taguru_ray.engine.replay import Replayer
from taguru_ray.pipeline.claims import Proposal, Verdict, judge_alone
from taguru_ray.pipeline.segment_job import Resume

Complete = Callable[[CompletionRequest], Awaitable[Completion]]
NextSeq = Callable[[], Awaitable[int]]
# The commit turn (`engine.ledger`): the verdict once every earlier segment settled,
# None when the run stopped before this segment's turn came.
CommitTurn = Callable[[Proposal], Awaitable[Verdict | None]]


async def commit_alone(proposal: Proposal) -> Verdict | None:
    """The commit turn of a segment no earlier segment precedes."""
    return judge_alone(proposal)


@dataclass
class FixedRung:
    """The rung port of a run whose rung never moves (pinned, or off the ladder)."""

    rung: str | None

    async def current(self) -> str | None:
        return self.rung

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        return False, ran_under


class RungPort(Protocol):
    async def current(self) -> str | None: ...

    async def demote(self, ran_under: str) -> tuple[bool, str]: ...


class SegmentRecorder(Protocol):
    """Where a segment's records and files go (the store, or memory in tests)."""

    sidecar_path: str | None

    def load(self, fingerprint: dict[str, Any], *, discard: bool) -> tuple[Resume, str | None]: ...

    async def begin(self, records: list[Record], *, fresh: bool) -> None: ...

    async def log(self, record: Record) -> None: ...

    async def sidecar(self, records: list[Record]) -> None: ...

    async def save_unit(self, piece_id: str, unit: Record) -> None: ...

    async def save_split(self, piece_id: str, cap: int) -> None: ...

    async def save_overview(self, chunk_sha256: str, answer: str) -> None: ...

    async def bind_overview(self, digest: str, *, keep: bool) -> bool:
        """Bind the units to the merged overview; True when `keep`-ing ones bound to another
        (the caller then discards them)."""
        ...

    async def finish(
        self, source_file: bytes, trace: bytes, parts: tuple[bytes, ...] | None = None
    ) -> list[str]: ...

    async def record(self, inputs: dict[str, Any], previous_output: str | None) -> None:
        """The written segment's manifest journal entry, durable; then the output it
        replaces (`previous_output`, when elsewhere) and its checkpoint are dropped."""
        ...

    def attempts_log_exists(self) -> bool: ...


@dataclass(frozen=True)
class Model:
    """The ports to the model side: completions, the attempt counter, the commit turn, the
    rung."""

    complete: Complete
    next_seq: NextSeq
    commit: CommitTurn = commit_alone
    rung: RungPort = field(default_factory=lambda: FixedRung(None))
    replay: Replayer | None = None  # --replay / --resume-from: recorded answers first
