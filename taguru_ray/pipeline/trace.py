"""The trace of one written segment, in the order CONTRACT.md section 4.1 gives.

segment, steering, chunk ×N, piece ×output, item ×line, loss ×lost item,
paragraph ×canonical paragraph. Pure: built from values the steps produced,
so the loss rate (lost ÷ (kept + lost)) and paragraph coverage fold from the
records alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import (
    CarryoverName,
    CarryoverTrace,
    ChunkRecord,
    LossTrace,
    PieceTrace,
    RedactionTrace,
    SegmentTrace,
    SteeringTrace,
)
from taguru_ray.pipeline.annotate import ContextBlock
from taguru_ray.pipeline.mechanical import Removal
from taguru_ray.pipeline.merge import Extraction, Loss
from taguru_ray.pipeline.overview import Overview
from taguru_ray.pipeline.plan import Chunk
from taguru_ray.pipeline.reconcile import PieceState
from taguru_ray.pipeline.steer import Steering
from taguru_ray.pipeline.structure import Unit
from taguru_ray.pipeline.verify import paragraph_records
from taguru_ray.text.paragraphs import Paragraph
from taguru_ray.text.redact import Redaction


@dataclass(frozen=True)
class SegmentFacts:
    run_id: str
    source: str
    segment_sha256: str
    batch_path: str
    system_sha256: str
    steering: Steering
    pinned_from: str | None = None  # the run a replay pinned the system prompt from
    # --carryover: per chunk, the (name, type) pairs its system prompt carried
    carryover: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    chunk_systems: dict[int, str] = field(default_factory=dict)  # chunk -> system sha256
    redactions: tuple[Redaction, ...] = ()  # --redact: one per match, in text order
    # --chunk-context: the headings' units, each chunk's block and (overview) answer
    units: Sequence[Unit] = ()
    blocks: Mapping[int, ContextBlock] = field(default_factory=dict)
    overviews: Sequence[Overview | None] = ()
    converter: str | None = None  # a document's converter and version (ADR 0078)
    locators: Sequence[dict[str, Any]] = ()  # a document's paragraphs' locators


def redaction_record(found: Redaction) -> Record:
    """By rule and paragraph, never by content: the matched text is nowhere in it."""
    return RedactionTrace(
        rule=found.rule,
        paragraph=found.paragraph,
        placeholder=found.placeholder,
        bytes=found.bytes,
        preexisting=True if found.preexisting else None,
    ).record()


def chunk_record(chunk: Chunk, source: str | None = None) -> Record:
    """The `chunk` record; the sidecar's carries the source, the trace's does not."""
    return ChunkRecord(
        source=source,
        chunk_index=chunk.index,
        chunk_total=chunk.total,
        chunk_sha256=chunk.sha256,
        chunk_bytes=chunk.bytes,
        paragraph_first=chunk.paragraph_first,
        paragraph_last=chunk.paragraph_last,
    ).record()


def trace_records(
    facts: SegmentFacts,
    chunks: Sequence[Chunk],
    pieces: Sequence[PieceState],
    paragraphs: Sequence[Paragraph],
    extraction: Extraction,
    items: list[Record],
) -> list[Record]:
    records: list[Record] = [
        SegmentTrace(
            run_id=facts.run_id,
            source=facts.source,
            segment_sha256=facts.segment_sha256,
            batch_path=facts.batch_path,
            chunk_total=len(chunks),
            converter=facts.converter,
        ).record(),
        *(redaction_record(found) for found in facts.redactions),
        SteeringTrace(
            candidates=list(facts.steering.candidates),
            system_sha256=facts.system_sha256,
            pinned_from=facts.pinned_from or None,
            vocabulary=[use.to_json() for use in facts.steering.vocabulary],
            context_names=list(facts.steering.context_names),
            schema=facts.steering.schema,
        ).record(),
    ]
    for index in sorted(facts.carryover):
        records.append(
            CarryoverTrace(
                chunk_index=index,
                system_sha256=facts.chunk_systems.get(index, facts.system_sha256),
                carryover=[
                    CarryoverName(name=name, type=kind or None)
                    for name, kind in facts.carryover[index]
                ],
            ).record()
        )
    records.extend(unit.record() for unit in facts.units)
    for chunk in chunks:
        records.append(chunk_record(chunk))
        overview = facts.overviews[chunk.index] if chunk.index < len(facts.overviews) else None
        if overview is not None:
            records.append(overview.record(chunk.index))
        block = facts.blocks.get(chunk.index)
        if block is not None:
            records.append(block.record(chunk.index))
    by_index = {chunk.index: chunk for chunk in chunks}
    for state in pieces:
        piece = state.piece
        records.append(
            PieceTrace(
                piece_id=piece.sha256,
                chunk_index=piece.index,
                chunk_sha256=by_index[piece.index].sha256,
                piece_bytes=piece.bytes,
                paragraph_first=piece.paragraph_first,
                paragraph_last=piece.paragraph_last,
                reused=state.attempt is None or state.attempt.get("run_id") != facts.run_id,
                attempt=state.attempt,
            ).record()
        )
    records.extend(items)
    texts = _Texts(paragraphs, {state.piece.sha256: state.piece.text for state in pieces})
    for piece in pieces:
        for removal in piece.removed:
            records.append(_removal_loss("removed", removal, piece, texts))
        for drop in piece.dropped:
            records.append(_removal_loss("dropped", drop, piece, texts))
    attempts = {piece.piece_id: piece.attempt for piece in pieces}
    records.extend(
        _merge_loss(loss, attempts.get(loss.piece_id), texts) for loss in extraction.losses
    )
    records.extend(
        paragraph_records(
            paragraphs,
            (a for a, _ in extraction.associations),
            (q for q, _ in extraction.questions),
            facts.locators,
        )
    )
    return records


@dataclass(frozen=True)
class _Texts:
    paragraphs: Sequence[Paragraph]
    pieces: dict[str, str]

    def cited(self, value: Any) -> int | None:
        valid = isinstance(value, int) and not isinstance(value, bool)
        return value if valid and 0 <= value < len(self.paragraphs) else None

    def text(self, paragraph: int | None, piece_id: str) -> str:
        """The original text an item was about: its cited paragraph, else the whole piece."""
        if paragraph is not None:
            return self.paragraphs[paragraph].text
        return self.pieces.get(piece_id, "")


def _removal_loss(reason: str, removal: Removal, piece: PieceState, texts: _Texts) -> Record:
    raw = removal.item
    cited = texts.cited(raw.get("paragraph")) if isinstance(raw, dict) else None
    return LossTrace(
        item=removal.kind,
        reason=reason,
        rule=removal.reason,
        path=removal.path,
        raw=raw,
        piece_id=piece.piece_id,
        attempt=piece.attempt,
        paragraph=cited,
        text=texts.text(cited, piece.piece_id),
    ).record()


def _merge_loss(loss: Loss, attempt: Record | None, texts: _Texts) -> Record:
    return LossTrace(
        item=loss.item,
        reason=loss.reason,
        rule=loss.rule,
        raw=loss.raw,
        piece_id=loss.piece_id,
        attempt=attempt,
        paragraph=loss.paragraph,
        text=texts.text(loss.paragraph, loss.piece_id),
        kept_piece_id=loss.kept_piece_id,
    ).record()
