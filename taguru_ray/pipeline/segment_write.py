"""A segment's answers into its files: merge → render → verify, and the trace (the last
steps of `segment_program.extract`); nothing is written here, the bytes are returned."""

from __future__ import annotations

from taguru_ray.contract.records import dumps_lines
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
) -> tuple[Extraction, bytes, bytes, list[Gap]]:
    """merge → render → verify, and the trace that describes them (with --coverage's gaps);
    `merged`: the pieces' merge when the caller has it already."""
    settings = state.settings
    extraction = merged if merged is not None else merge_pieces(state, pieces)
    rendered = render(
        extraction,
        HeaderFields(
            state.job.written_id,
            settings.source.context,
            settings.source.name,
            settings.source.description,
        ),
        None if settings.source.no_passage else state.segment.text,
        settings.source.date,
        settings.source.tags,
    )
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
    trace = trace_records(
        facts, state.chunks, pieces, state.segment.paragraphs, extraction, rendered.items
    )
    first_item = 2 if settings.source.no_passage else 3  # after the header and the passage
    findings = answer_leaks(rendered.items, state.inputs.redaction, first_item)
    if findings:
        raise Leaked(findings)
    gaps: list[Gap] = []
    if settings.records.coverage:
        gaps = uncovered(state.segment.paragraphs, (a for a, _ in extraction.associations))
        trace.extend(uncovered_records(gaps, state.segment.paragraphs, state.chunks))
    return extraction, rendered.data, dumps_lines(trace), gaps


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
