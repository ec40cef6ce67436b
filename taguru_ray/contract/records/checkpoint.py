"""A checkpoint file's document and its units (CONTRACT.md section 3), and the
`checkpoint` record that carries the same state in a segment's attempts log (ADR 0049)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from taguru_ray.contract.records.trace import AttemptRef
from taguru_ray.contract.records.typed import WHEN_NONEMPTY, WHEN_SET, Typed


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


class CheckpointRecord(Typed):
    """One change of a segment's checkpoint, appended to its attempts log (ADR 0049; a
    taguru-ray addition, which readers of the log skip as an unknown type).

    Exactly one change per record: a unit landed (`piece_id` and `unit`), a piece was
    split (`piece_id` and `split_cap`), a chunk's overview answered (`chunk_sha256` and
    `overview`), the units bound to an overview (`overview_digest`, `cleared` when the
    units bound to another were dropped), or the segment written (`settled`: what came
    before is spent). `fingerprint` is the sha256 of the compute inputs the state is
    bound to (CONTRACT section 3): a record under another fingerprint is not reused.
    """

    TYPE: ClassVar[str] = "checkpoint"
    fingerprint: str
    piece_id: Annotated[str | None, WHEN_SET] = None
    unit: Annotated[dict[str, Any] | None, WHEN_SET] = None
    split_cap: Annotated[int | None, WHEN_SET] = None
    chunk_sha256: Annotated[str | None, WHEN_SET] = None
    overview: Annotated[str | None, WHEN_SET] = None
    overview_digest: Annotated[str | None, WHEN_SET] = None
    cleared: Annotated[bool | None, WHEN_SET] = None
    settled: Annotated[bool | None, WHEN_SET] = None
