"""A checkpoint file's document and its units (CONTRACT.md section 3)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from taguru_ray.contract.records.trace import AttemptRef
from taguru_ray.contract.records.typed import WHEN_NONEMPTY, Typed


class CheckpointUnit(Typed):
    """A finished piece: what was asked and answered, and what survived validation."""

    chunk_index: int  # the original chunk
    attempt: AttemptRef | None
    output: dict[str, Any]  # associations, aliases, questions (post-validation)
    user: str  # the full user turn sent
    answer: str  # the model's final text
    removed: list[Any]  # [{path, reason, item}] (older files: "<path>: <reason>")
    unparsed: list[Any]  # --lossy's parse-time drops, the same shape


class CheckpointDocument(Typed):
    """The whole file, rewritten atomically each time a unit lands."""

    fingerprint: dict[str, Any]
    units: dict[str, dict[str, Any]]  # piece id -> CheckpointUnit's record
    overview: dict[str, str] = Field(default_factory=dict)  # chunk sha256 -> answer
    overview_digest: str = ""
    # Pieces an earlier run split (piece id -> split cap): an extension the reference's
    # reader ignores, written only when there are some.
    splits: Annotated[dict[str, int], WHEN_NONEMPTY] = Field(default_factory=dict)
