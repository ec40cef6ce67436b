"""One segment's extraction as values: the job a worker is handed, what a checkpoint hands
back, and the outcome the driver gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records import Record
from taguru_ray.pipeline.steer import Contribution, LabelUse


@dataclass(frozen=True)
class SegmentJob:
    """What the driver hands a worker: one segment and what earlier segments settled."""

    index: int
    source: str
    data: bytes
    written_id: str
    vocabulary: tuple[LabelUse, ...]
    # The output the manifest names for this segment before this run, when it has one:
    # the worker deletes it once the new entry is recorded, if the new one is elsewhere.
    previous_output: str | None = None
    # A document's converter (its manifest `converter`, ADR 0078): `data` is the document,
    # converted to text where the segment runs. None: `data` is the segment's text.
    converter: str | None = None


@dataclass
class Resume:
    """What a checkpoint hands back: finished units, and the pieces already split."""

    units: dict[str, Record] = field(default_factory=dict)
    splits: dict[str, int] = field(default_factory=dict)  # piece id -> split cap
    overview: dict[str, str] = field(default_factory=dict)  # chunk sha256 -> overview answer

    @property
    def holds(self) -> bool:
        """Something to resume from: the attempts log carrying it is continued, not
        emptied (ADR 0049)."""
        return bool(self.units or self.splits or self.overview)


@dataclass
class SegmentOutcome:
    index: int
    source: str
    status: str  # written | failed | interrupted
    report: str | None = None  # the stdout line of a written segment
    notes: list[str] = field(default_factory=list)  # stderr lines, failure line last
    inputs: dict[str, Any] | None = None  # the manifest entry to record
    contribution: Contribution = field(default_factory=Contribution)
    counts: dict[str, int] = field(default_factory=dict)
    completions: int = 0
    fenced: bool = False  # interrupted by the store's write fence (the lease lapsed)
