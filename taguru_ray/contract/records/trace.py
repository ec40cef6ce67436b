"""The trace's records (CONTRACT.md section 4.1), in the order a trace holds them."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from taguru_ray.contract.records.typed import WHEN_NONEMPTY, WHEN_SET, Typed


class AttemptRef(BaseModel):
    """Which attempt: a run and its run-wide number."""

    model_config = ConfigDict(frozen=True)
    run_id: str
    attempt_seq: int


class SegmentTrace(Typed):
    TYPE: ClassVar[str] = "segment"
    run_id: str
    source: str
    segment_sha256: str
    batch_path: str
    chunk_total: int
    # A document's converter and version (ADR 0078); absent for a text segment.
    converter: Annotated[str | None, WHEN_SET] = None


class RedactionTrace(Typed):
    """By rule and paragraph, never by content: the matched text is nowhere in it."""

    TYPE: ClassVar[str] = "redaction"
    rule: str
    paragraph: int
    placeholder: str
    bytes: int
    preexisting: Annotated[Literal[True] | None, WHEN_SET] = None


class SteeringTrace(Typed):
    """What the segment's prompt offered (one; `chunk_index` null)."""

    TYPE: ClassVar[str] = "steering"
    chunk_index: None = None
    candidates: list[str]
    system_sha256: str
    pinned_from: Annotated[str | None, WHEN_SET] = None
    vocabulary: list[dict[str, Any]]
    context_names: list[str]
    schema_offer: dict[str, Any] | None = Field(alias="schema")


class CarryoverName(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    type: str | None


class CarryoverTrace(Typed):
    """--carryover: the names one chunk's system prompt carried (a `steering` record)."""

    TYPE: ClassVar[str] = "steering"
    chunk_index: int
    system_sha256: str
    carryover: list[CarryoverName]


class StructureTrace(Typed):
    TYPE: ClassVar[str] = "structure"
    unit: int
    level: int
    heading: str
    paragraph_first: int
    paragraph_last: int


class ChunkRecord(Typed):
    """A chunk of the plan; the sidecar's names its source, the trace's does not."""

    TYPE: ClassVar[str] = "chunk"
    source: Annotated[str | None, WHEN_SET] = None
    chunk_index: int
    chunk_total: int
    chunk_sha256: str
    chunk_bytes: int
    paragraph_first: int
    paragraph_last: int


class UnitSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    unit: int
    summary: str


class CastMember(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    gloss: str


class OverviewTrace(Typed):
    TYPE: ClassVar[str] = "overview"
    chunk_index: int
    units: list[UnitSummary]
    cast: list[CastMember]


class ChunkContextTrace(Typed):
    TYPE: ClassVar[str] = "chunk_context"
    chunk_index: int
    sha256: str
    bytes: int
    position: list[int]
    references: list[int]
    cast: Annotated[tuple[str, ...], WHEN_NONEMPTY] = ()
    known: Annotated[tuple[str, ...], WHEN_NONEMPTY] = ()
    synopsis: Annotated[tuple[int, ...], WHEN_NONEMPTY] = ()
    overlap_paragraphs: Annotated[list[int] | None, WHEN_SET] = None


class PieceTrace(Typed):
    TYPE: ClassVar[str] = "piece"
    piece_id: str
    chunk_index: int
    chunk_sha256: str
    piece_bytes: int
    paragraph_first: int | None
    paragraph_last: int | None
    reused: bool
    attempt: AttemptRef | None


class QuestionItem(Typed):
    TYPE: ClassVar[str] = "item"
    item: Literal["question"] = "question"
    paragraph: int
    question: str
    piece_id: str


class AssociationItem(Typed):
    TYPE: ClassVar[str] = "item"
    item: Literal["association"] = "association"
    subject: str
    label: str
    object: str
    piece_id: str


class AliasItem(Typed):
    TYPE: ClassVar[str] = "item"
    item: Literal["concept", "label"]
    alias: str
    canonical: str
    piece_id: str


class LossTrace(Typed):
    """An item that did not reach the file, and the text it was about."""

    TYPE: ClassVar[str] = "loss"
    item: str  # association | alias | question
    reason: Literal["removed", "dropped", "duplicate"]
    rule: str
    path: Annotated[str | None, WHEN_SET] = None
    raw: Any
    piece_id: str
    attempt: AttemptRef | None
    paragraph: Annotated[int | None, WHEN_SET] = None
    text: str
    kept_piece_id: Annotated[str | None, WHEN_SET] = None


class ParagraphTrace(Typed):
    TYPE: ClassVar[str] = "paragraph"
    paragraph: int
    bytes: int
    items: int
    covered: bool
    text: Annotated[str | None, WHEN_SET] = None
    # Where in its document the paragraph came from (ADR 0078): {"page": 2}, {"slide": 3},
    # {"headings": [...]}; absent for a text segment.
    locator: Annotated[dict[str, Any] | None, WHEN_SET] = None


class UncoveredTrace(Typed):
    TYPE: ClassVar[str] = "uncovered"
    paragraph: int
    sentence: str
    text: str
    chunk_index: int | None
    chunk_sha256: str | None


TRACE_TYPES: tuple[type[Typed], ...] = (
    SegmentTrace,
    RedactionTrace,
    SteeringTrace,
    CarryoverTrace,
    StructureTrace,
    ChunkRecord,
    OverviewTrace,
    ChunkContextTrace,
    PieceTrace,
    QuestionItem,
    AssociationItem,
    AliasItem,
    LossTrace,
    ParagraphTrace,
    UncoveredTrace,
)
