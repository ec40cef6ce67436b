"""The attempts log's records (CONTRACT.md section 4.2)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from taguru_ray.contract.records.trace import AttemptRef
from taguru_ray.contract.records.typed import WHEN_SET, Move, Rung, Stage, State, Typed


class SegmentAttempts(Typed):
    """Once per run over the segment."""

    TYPE: ClassVar[str] = "segment"
    run_id: str
    source: str
    segment_sha256: str
    resumed: bool


class SettingsRecord(Typed):
    """The compute inputs the segment ran under: a diagnostic snapshot, never a gate."""

    TYPE: ClassVar[str] = "settings"
    prompt_version: int
    model: str
    questions_n: int
    fact_budget: int
    structured_output: str
    max_output_tokens: int
    chunk_bytes: str
    chunk_context: str
    lossy: bool
    schema_digest: str
    candidates: str
    redaction: str
    vocabulary_digest: str
    rung: Annotated[Rung | None, WHEN_SET] = None  # absent off the ladder


class ReplayRecord(Typed):
    TYPE: ClassVar[str] = "replay"
    mode: Literal["auto", "strict"]
    replay_from: str


class SystemRecord(Typed):
    """A system prompt, the first time it is sent; messages name it by digest."""

    TYPE: ClassVar[str] = "system"
    sha256: str
    bytes: int
    content: str


class AttemptRecord(Typed):
    """One completion: what was asked, what came back, how it was judged."""

    TYPE: ClassVar[str] = "attempt"
    run_id: str
    attempt_seq: int
    corrects: Annotated[AttemptRef | None, WHEN_SET] = None
    gleans: Annotated[AttemptRef | None, WHEN_SET] = None
    replayed_from: Annotated[AttemptRef | None, WHEN_SET] = None
    piece_id: str
    source: str
    chunk_index: int
    stage: Stage
    attempt: int
    max_attempts: int
    state: State
    length_limited: bool
    transport_retries: int
    elapsed_seconds: float
    requested_max_tokens: int | None
    rung: Annotated[Rung | None, WHEN_SET] = None  # on the ladder only
    piece_bytes: Annotated[int | None, WHEN_SET] = None  # on the ladder only
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None = None  # taguru-ray's; the reference's log lacks it
    messages: list[dict[str, Any]]
    answer: str | None
    parse_error: str | None
    validation_issues: list[Any] | None
    removed_items: list[Any] | None
    # taguru-ray's, under --batch-api (ADR 0068): the provider batch that answered it, and
    # the request's id in that batch; absent for a live completion.
    batch_id: Annotated[str | None, WHEN_SET] = None
    custom_id: Annotated[str | None, WHEN_SET] = None


class MoveRecord(Typed):
    """What the ladder did to a piece, in the stderr's words (taguru ADR 0029)."""

    TYPE: ClassVar[str] = "move"
    move: Move
    run_id: str
    piece_id: str
    chunk_index: int
    reason: str


class EscalateMove(MoveRecord):
    move: Move = Move.ESCALATE
    from_max_tokens: int
    to_max_tokens: int | None  # null: the resend sends no cap


class DemoteMove(MoveRecord):
    move: Move = Move.DEMOTE
    from_rung: Rung
    to_rung: Rung


class SplitMove(MoveRecord):
    move: Move = Move.SPLIT
    piece_bytes: int
    split_cap: int
    sub_pieces: int


class RunawayMove(MoveRecord):
    move: Move = Move.RUNAWAY
    piece_bytes: int
    answer_bytes: int


class ReplaySummary(Typed):
    """Last, under replay: how many completions came from the log, how many went live."""

    TYPE: ClassVar[str] = "replay_summary"
    replayed: int
    live: int


ATTEMPTS_TYPES: tuple[type[Typed], ...] = (
    SegmentAttempts,
    SettingsRecord,
    ReplayRecord,
    SystemRecord,
    AttemptRecord,
    EscalateMove,
    DemoteMove,
    SplitMove,
    RunawayMove,
    ReplaySummary,
)
