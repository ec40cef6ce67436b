"""A segment's answers into its files: merge → render → verify, and the trace (the last
steps of `segment_program.extract`); nothing is written here, the bytes are returned."""

from __future__ import annotations

import dataclasses

from taguru_ray.contract.records import Record, dumps_lines
from taguru_ray.pipeline import parts
from taguru_ray.pipeline.coverage import Gap, uncovered, uncovered_records
from taguru_ray.pipeline.leaks import answer_leaks
from taguru_ray.pipeline.merge import Extraction, MergeInput, MergeRules, merge
from taguru_ray.pipeline.prompt import system_sha256
from taguru_ray.pipeline.reconcile import PieceState
from taguru_ray.pipeline.render import HeaderFields, render
from taguru_ray.pipeline.report import FAILURE_PREFIX, chunk_prefix
from taguru_ray.pipeline.segment_state import SegmentState
from taguru_ray.pipeline.trace import SegmentFacts, trace_records


def merge_pieces(state: SegmentState, pieces: list[PieceState]) -> Extraction:
    inputs = [MergeInput(piece.piece_id, piece.output) for piece in pieces]
    return merge(inputs, merge_rules(state))


def merge_rules(state: SegmentState) -> MergeRules:
    settings = state.settings
    return MergeRules(
        len(state.segment.paragraphs), settings.prompt.questions, not settings.source.no_passage
    )


def write(
    state: SegmentState, pieces: list[PieceState], merged: Extraction | None = None
) -> tuple[Extraction, list[bytes], bytes, list[Gap]]:
    """merge → render → verify, and the trace that describes them (with --coverage's gaps);
    `merged`: the pieces' merge when the caller has it already. The source files: one, or
    a document's parts when its passage is over the cap (`parts.py`), each rendered and
    re-read by the import parser."""
    settings = state.settings
    extraction = merged if merged is not None else merge_pieces(state, pieces)
    header = HeaderFields(
        state.job.written_id,
        settings.source.context,
        settings.source.name,
        settings.source.description,
    )
    segment = state.segment
    spans = (
        parts.plan(segment.paragraphs)
        if segment.document and not settings.source.no_passage
        and parts.over_budget(segment.bytes)
        else None
    )  # fmt: skip
    first_item = 2 if settings.source.no_passage else 3  # after the header and the passage
    files: list[bytes] = []
    items: list[Record] = []
    findings: list[str] = []
    for span, part, written_id in _parts(state, extraction, header, spans):
        passage = (
            None if settings.source.no_passage
            else segment.text if spans is None  # the segment's text, byte for byte
            else parts.text_of(segment.paragraphs, span)
        )  # fmt: skip
        rendered = render(
            part,
            dataclasses.replace(header, written_id=written_id),
            passage,
            settings.source.date,
            settings.source.tags,
        )
        files.append(rendered.data)
        findings += answer_leaks(rendered.items, state.inputs.redaction, first_item)
        items += [_renumbered(item, span.start) for item in rendered.items]
    if findings:
        raise Leaked(findings)
    facts = SegmentFacts(
        state.run_id,
        state.job.source,
        state.segment.sha256,
        state.batch_path,
        system_sha256(state.system),
        state.steering,
        state.pinned_from,
        state.carry,
        {i: system_sha256(text) for i, text in state.chunk_systems.items()},
        redactions=tuple(state.redactions),
        units=state.units,
        blocks=state.blocks,
        overviews=state.overviews,
        converter=state.job.converter,
        locators=state.segment.locators,
    )
    trace = trace_records(facts, state.chunks, pieces, state.segment.paragraphs, extraction, items)
    gaps: list[Gap] = []
    if settings.records.coverage:
        gaps = uncovered(state.segment.paragraphs, (a for a, _ in extraction.associations))
        trace.extend(uncovered_records(gaps, state.segment.paragraphs, state.chunks))
    return extraction, files, dumps_lines(trace), gaps


def _parts(
    state: SegmentState, extraction: Extraction, header: HeaderFields, spans: list[range] | None
) -> list[tuple[range, Extraction, str]]:
    """(paragraphs, extraction, written id) of each file: the segment's one, or its parts."""
    if spans is None:
        return [(range(len(state.segment.paragraphs)), extraction, header.written_id)]
    split = parts.split(extraction, spans)
    return [
        (span, part, parts.part_id(header.written_id, number))
        for number, (span, part) in enumerate(zip(spans, split, strict=True), start=1)
    ]


def _renumbered(item: Record, start: int) -> Record:
    """A part's item record with the document's paragraph number (the trace's)."""
    if start and isinstance(item.get("paragraph"), int):
        return {**item, "paragraph": item["paragraph"] + start}
    return item


class Leaked(Exception):
    """--redact's answer scan found a rule's shape in a label or question."""

    def __init__(self, findings: list[str]) -> None:
        super().__init__(findings[0])
        self.findings = findings


def removal_lines(state: SegmentState, pieces: list[PieceState]) -> list[str]:
    """One stderr line per removal, path first; the chunk named when there are several."""
    lines = []
    for piece in pieces:
        where = f"{chunk_prefix(piece.piece)} " if len(state.chunks) > 1 else ""
        lines.extend(
            f"{FAILURE_PREFIX}{state.job.source}: removed: {where}{removal.text}"
            for removal in piece.removed
        )
    return lines
