"""What a round of one piece is given and what it ends in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from taguru_ray.contract.records import Record
from taguru_ray.pipeline.ladder import LadderConfig
from taguru_ray.pipeline.mechanical import Offered, Removal
from taguru_ray.pipeline.plan import Piece
from taguru_ray.pipeline.prompt import Conversation
from taguru_ray.pipeline.validate import PieceOutput, Rules
from taguru_ray.text.occurrence import Haystack


class PieceFailed(Exception):
    """The piece could not be extracted; the message is the failure line's tail."""

    def __init__(self, message: str, piece: Piece | None = None) -> None:
        super().__init__(message)
        self.piece = piece  # the innermost piece the ladder was working on


@dataclass(frozen=True)
class PieceSpec:
    """Everything a round needs to know about one piece."""

    piece: Piece
    source: str
    conversation: Conversation
    rules: Rules
    haystack: Haystack  # the text the model was shown, for the occurrence check
    offered: Offered = field(default_factory=Offered)

    @property
    def piece_id(self) -> str:
        return self.piece.sha256


@dataclass(frozen=True)
class LoopPolicy:
    max_attempts: int
    replay_cap: int | None  # TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES
    fact_budget: int
    run_id: str
    lossy: bool = False
    ladder: LadderConfig = field(default_factory=lambda: LadderConfig.of("off", 0, 2, 8))


@dataclass(frozen=True)
class Accepted:
    output: PieceOutput
    answer: str
    attempt: Record  # {run_id, attempt_seq}
    removed: list[Removal]  # mechanical removals (strict)
    dropped: list[Removal]  # parse-time drops (--lossy)


@dataclass(frozen=True)
class Exhausted:
    """A ladder round that ended without an answer: the caller demotes or splits."""

    kind: Literal["length", "timeout", "runaway"]
    rung: str | None
    budget: int | None = None  # the last max_tokens sent
    answer_bytes: int = 0
