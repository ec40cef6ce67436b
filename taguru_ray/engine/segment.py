"""One segment, end to end: read → plan → steer → pieces → reconcile → merge → render → verify.

This is the interpreter of the pipeline for one segment. It decides nothing
the pipeline steps decide; it runs their laps, holds the checkpoint units,
and hands every record to a `SegmentRecorder` port. Ray-free, network-free
and disk-free, so a whole segment runs in a unit test with canned answers.
Chunks run concurrently up to --parallel, claimed in index order, and merge
in chunk order: the bytes never depend on which completion came back first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from taguru_ray.contract.names import attempts_name, join, output_name
from taguru_ray.contract.records import Record, dumps_lines
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.engine.piece import (
    Complete,
    LoopPolicy,
    NextSeq,
    PieceFailed,
    PieceSpec,
    correct_once,
    extract_piece,
)
from taguru_ray.pipeline.mechanical import Removal
from taguru_ray.pipeline.merge import Extraction, MergeInput, MergeRules, merge
from taguru_ray.pipeline.plan import Chunk, plan_chunks
from taguru_ray.pipeline.prompt import Conversation, system_prompt, system_sha256, user_turn
from taguru_ray.pipeline.read import Segment, SegmentRefused, read_segment
from taguru_ray.pipeline.reconcile import (
    PieceState,
    StandingIssue,
    claim_queries,
    prune_claimed,
    prune_dangling,
    prune_standing,
    stage2_issues,
)
from taguru_ray.pipeline.render import HeaderFields, render
from taguru_ray.pipeline.steer import Contribution, LabelUse
from taguru_ray.pipeline.trace import SegmentFacts, chunk_record, trace_records
from taguru_ray.pipeline.validate import PieceOutput, Rules
from taguru_ray.settings import (
    Settings,
    checkpoint_fingerprint,
    compute_inputs,
    settings_record_fields,
)
from taguru_ray.store.outdir import TRACE
from taguru_ray.text.occurrence import Haystack

FAILURE_PREFIX = "taguru: extract: "

ClaimsLookup = Callable[[list[tuple[str, str]]], Awaitable[dict[tuple[str, str], str]]]


async def no_claims(queries: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The claims lookup of a segment no earlier segment precedes."""
    return {}


@dataclass(frozen=True)
class SegmentJob:
    """What the driver hands a worker: one segment and what earlier segments settled."""

    index: int
    source: str
    data: bytes
    written_id: str
    vocabulary: tuple[LabelUse, ...]
    claims_upto: int = 0  # segments below this index are visible to the rewire check


@dataclass
class SegmentOutcome:
    index: int
    source: str
    status: str  # written | failed
    report: str | None = None  # the stdout line of a written segment
    notes: list[str] = field(default_factory=list)  # stderr lines, failure line last
    inputs: dict[str, Any] | None = None  # the manifest entry to record
    contribution: Contribution = field(default_factory=Contribution)
    counts: dict[str, int] = field(default_factory=dict)
    completions: int = 0


class SegmentRecorder(Protocol):
    """Where a segment's records and files go (the store, or memory in tests)."""

    sidecar_path: str | None

    def load_units(
        self, fingerprint: dict[str, Any], *, discard: bool
    ) -> tuple[dict[str, Record], str | None]: ...

    async def begin(self, records: list[Record], *, fresh: bool) -> None: ...

    async def log(self, record: Record) -> None: ...

    async def sidecar(self, records: list[Record]) -> None: ...

    async def save_unit(self, piece_id: str, unit: Record) -> None: ...

    async def finish(self, source_file: bytes, trace: bytes) -> list[str]: ...

    def attempts_log_exists(self) -> bool: ...


@dataclass(frozen=True)
class Model:
    """The ports to the model side: completions, the run-wide attempt counter, claims."""

    complete: Complete
    next_seq: NextSeq
    claims: ClaimsLookup = no_claims


@dataclass
class _Run:
    """The mutable state of one segment's extraction."""

    job: SegmentJob
    settings: Settings
    run_id: str
    segment: Segment
    chunks: list[Chunk]
    system: str
    units: dict[str, Record]
    recorder: SegmentRecorder
    model: Model
    system_logged: bool = False
    completions: int = 0
    failures: dict[int, tuple[str, str]] = field(default_factory=dict)  # chunk -> (clause, msg)

    @property
    def batch_path(self) -> str:
        return join(self.settings.out, output_name(self.job.source))

    def policy(self) -> LoopPolicy:
        s = self.settings
        return LoopPolicy(
            s.max_attempts, s.corrective_context_bytes, s.fact_budget, self.run_id, s.lossy
        )

    def spec(self, chunk: Chunk, user: str) -> PieceSpec:
        return PieceSpec(
            piece_id=chunk.sha256,
            chunk_index=chunk.index,
            source=self.job.source,
            conversation=Conversation(self.system, user),
            rules=Rules(len(self.segment.paragraphs), self.settings.questions),
            haystack=Haystack(chunk.text),
        )


async def extract_segment(
    job: SegmentJob, settings: Settings, run_id: str, model: Model, recorder: SegmentRecorder
) -> SegmentOutcome:
    outcome = SegmentOutcome(job.index, job.source, "failed")
    try:
        segment = read_segment(job.source, job.data)
    except SegmentRefused as refusal:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {refusal}")
        return outcome
    inputs = compute_inputs(settings, segment.sha256, job.written_id, output_name(job.source))
    fingerprint = checkpoint_fingerprint(settings, segment.sha256)
    units, note = recorder.load_units(fingerprint, discard=settings.force)
    if note:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    chunks = plan_chunks(segment.paragraphs, settings.chunk_bytes)
    run = _Run(
        job,
        settings,
        run_id,
        segment,
        chunks,
        system_prompt(job.vocabulary),
        units,
        recorder,
        model,
    )
    await recorder.begin(_head_records(run), fresh=not units)
    await recorder.sidecar([chunk_record(chunk, job.source) for chunk in chunks])
    pieces = await _run_chunks(run)
    if not run.failures and not settings.lossy:
        await _reconcile(run, pieces)
    outcome.completions = run.completions
    if run.failures:
        outcome.notes.append(_failure_line(run, min(run.failures)))
        return outcome
    try:
        extraction, source_bytes, trace_bytes = _write(run, pieces)
    except SourceFileError as error:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: the rendered source file failed its own import "
            f"check ({error}) — nothing was written"
        )
        return outcome
    outcome.notes.extend(_removal_lines(run, pieces))
    for note in await recorder.finish(source_bytes, trace_bytes):
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    outcome.counts = _counts(extraction, pieces)
    await recorder.sidecar(
        [{"type": "segment", "source": job.source, **outcome.counts, "batch_path": run.batch_path}]
    )
    outcome.status = "written"
    outcome.inputs = inputs
    outcome.report = _report_line(run, outcome.counts)
    outcome.contribution = Contribution.of(
        (a for a, _ in extraction.associations), (a for a, _ in extraction.aliases)
    )
    return outcome


def _head_records(run: _Run) -> list[Record]:
    return [
        {
            "type": "segment",
            "run_id": run.run_id,
            "source": run.job.source,
            "segment_sha256": run.segment.sha256,
            "resumed": bool(run.units),
        },
        {"type": "settings", **settings_record_fields(run.settings)},
    ]


def _user(run: _Run, chunk: Chunk) -> str:
    return user_turn(run.job.source, chunk.index, chunk.total, chunk.text)


def _state_from_unit(chunk: Chunk, unit: Record) -> PieceState:
    return PieceState(
        piece_id=chunk.sha256,
        chunk_index=chunk.index,
        output=PieceOutput.from_json(unit["output"]),
        attempt=unit.get("attempt"),
        answer=unit.get("answer") or "",
        user=unit.get("user") or "",
        removed=[Removal.from_json(r) for r in unit.get("removed") or []],
        dropped=[Removal.from_json(r) for r in unit.get("unparsed") or []],
        reused=True,
    )


def _unit_of(piece: PieceState) -> Record:
    return {
        "chunk_index": piece.chunk_index,
        "attempt": piece.attempt,
        "output": piece.output.to_json(),
        "user": piece.user,
        "answer": piece.answer,
        "removed": [r.to_json() for r in piece.removed],
        "unparsed": [r.to_json() for r in piece.dropped],
    }


async def _run_chunks(run: _Run) -> list[PieceState]:
    """Every chunk's accepted piece, in chunk order (empty when a chunk failed)."""
    slots = asyncio.Semaphore(run.settings.parallel)
    results: dict[int, PieceState] = {}

    async def one(chunk: Chunk) -> None:
        async with slots:
            if run.failures:
                return  # no new claims once a chunk has failed
            unit = run.units.get(chunk.sha256)
            if unit is not None:
                results[chunk.index] = _state_from_unit(chunk, unit)
                return
            user = _user(run, chunk)
            try:
                await _log_system_once(run)
                accepted = await extract_piece(
                    run.spec(chunk, user),
                    run.policy(),
                    run.model.complete,
                    run.model.next_seq,
                    _on_attempt(run),
                )
            except PieceFailed as failure:
                run.failures[chunk.index] = (_piece_clause(chunk), str(failure))
                return
            piece = PieceState(
                chunk.sha256,
                chunk.index,
                accepted.output,
                accepted.attempt,
                accepted.answer,
                user,
                accepted.removed,
                accepted.dropped,
            )
            unit = _unit_of(piece)
            await run.recorder.save_unit(piece.piece_id, unit)
            run.units[piece.piece_id] = unit
            results[chunk.index] = piece

    await asyncio.gather(*(one(chunk) for chunk in run.chunks))
    return [results[index] for index in sorted(results)]


async def _reconcile(run: _Run, pieces: list[PieceState]) -> None:
    """Stage 2: one corrective turn per clashing output, then what stands is removed."""
    by_index = {chunk.index: chunk for chunk in run.chunks}
    for piece_index, issues in stage2_issues(pieces):
        piece = pieces[piece_index]
        chunk = by_index[piece.chunk_index]
        try:
            await _log_system_once(run)
            corrected = await correct_once(
                run.spec(chunk, piece.user or _user(run, chunk)),
                run.policy(),
                piece.answer,
                issues,
                piece.attempt,
                run.model.complete,
                run.model.next_seq,
                _on_attempt(run),
            )
        except PieceFailed as failure:
            run.failures[piece.chunk_index] = (_piece_clause(chunk), str(failure))
            return
        if corrected is not None:
            piece.output, piece.answer, piece.attempt = (
                corrected.output,
                corrected.answer,
                corrected.attempt,
            )
            piece.removed, piece.reused = list(corrected.removed), False
            unit = _unit_of(piece)
            await run.recorder.save_unit(piece.piece_id, unit)
            run.units[piece.piece_id] = unit
    try:
        prune_standing(pieces, stage2_issues(pieces))
    except StandingIssue as standing:
        chunk = by_index[standing.piece.chunk_index]
        run.failures[chunk.index] = (
            _piece_clause(chunk),
            f"the answer left {len(standing.issues)} invalid item(s) uncorrected: {standing}",
        )
        return
    prune_dangling(pieces)
    prune_claimed(pieces, await run.model.claims(claim_queries(pieces)))


async def _log_system_once(run: _Run) -> None:
    if not run.system_logged:
        run.system_logged = True
        await run.recorder.log(
            {
                "type": "system",
                "sha256": system_sha256(run.system),
                "bytes": len(run.system.encode("utf-8")),
                "content": run.system,
            }
        )


def _on_attempt(run: _Run) -> Callable[[Record], Awaitable[None]]:
    async def on_attempt(record: Record) -> None:
        run.completions += 1
        await run.recorder.log(record)
        await run.recorder.sidecar([_sidecar_attempt(record, run.settings.diagnostics_raw_bytes)])

    return on_attempt


def _write(run: _Run, pieces: list[PieceState]) -> tuple[Extraction, bytes, bytes]:
    """merge → render → verify, and the trace that describes them."""
    settings = run.settings
    rules = MergeRules(len(run.segment.paragraphs), settings.questions, not settings.no_passage)
    extraction = merge([MergeInput(piece.piece_id, piece.output) for piece in pieces], rules)
    rendered = render(
        extraction,
        HeaderFields(run.job.written_id, settings.context, settings.name, settings.description),
        None if settings.no_passage else run.segment.text,
        settings.date,
        settings.tags,
    )
    facts = SegmentFacts(
        run.run_id,
        run.job.source,
        run.segment.sha256,
        run.batch_path,
        system_sha256(run.system),
        run.job.vocabulary,
    )
    trace = trace_records(
        facts, run.chunks, pieces, run.segment.paragraphs, extraction, rendered.items
    )
    return extraction, rendered.data, dumps_lines(trace)


def _sidecar_attempt(record: Record, raw_bytes: int) -> Record:
    """The diagnostics sidecar's view of an attempt: metadata, raw text only when opted in."""
    answered = record["state"] not in ("timeout", "transport")
    sidecar: Record = {
        "type": "attempt",
        **{
            key: record[key]
            for key in (
                "run_id",
                "attempt_seq",
                "piece_id",
                "source",
                "stage",
                "chunk_index",
                "attempt",
                "max_attempts",
                "state",
                "length_limited",
                "elapsed_seconds",
            )
        },
        "provider_metadata": {
            "finish_reason": record["finish_reason"],
            "input_tokens": record["input_tokens"],
            "output_tokens": record["output_tokens"],
            "total_tokens": record["total_tokens"],
        }
        if answered
        else None,
        "parse_error": record["parse_error"],
        "validation_issues": record["validation_issues"],
    }
    if record.get("removed_items"):
        sidecar["removed_items"] = record["removed_items"]
    if raw_bytes > 0 and record.get("answer") is not None:
        sidecar["response_text"] = _capped(record["answer"], raw_bytes)
    return sidecar


def _capped(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    prefix = encoded[:limit].decode("utf-8", errors="ignore")
    return f"{prefix}… [truncated to {limit} bytes]"


def _counts(extraction: Extraction, pieces: list[PieceState]) -> dict[str, int]:
    return {
        "associations": len(extraction.associations),
        "concepts": sum(1 for a, _ in extraction.aliases if a.kind == "concept"),
        "labels": sum(1 for a, _ in extraction.aliases if a.kind == "label"),
        "questions": len(extraction.questions),
        "duplicates": extraction.count("duplicate"),
        "dropped": extraction.count("dropped") + sum(len(p.dropped) for p in pieces),
        "removed": sum(len(p.removed) for p in pieces),
        "uncovered": 0,
    }


def _report_line(run: _Run, counts: dict[str, int]) -> str:
    parts = [
        f"{counts['associations']} association(s)",
        f"{counts['concepts'] + counts['labels']} alias(es)",
    ]
    if not run.settings.no_passage:
        parts.append("passage")
    if run.settings.questions:
        parts.append(f"{counts['questions']} question(s)")
    if counts["duplicates"]:
        parts.append(f"{counts['duplicates']} duplicate(s) folded")
    if counts["removed"]:
        parts.append(f"{counts['removed']} item(s) removed (mechanical validation)")
    if counts["dropped"]:
        lossy = " (--lossy)" if run.settings.lossy else ""
        parts.append(f"{counts['dropped']} item(s) dropped{lossy}")
    return f"{run.job.source}: {', '.join(parts)} → {run.batch_path}"


def _removal_lines(run: _Run, pieces: list[PieceState]) -> list[str]:
    """One stderr line per removal, path first; the chunk named when there are several."""
    lines = []
    for piece in pieces:
        where = f"chunk {piece.chunk_index + 1}/{len(run.chunks)} " if len(run.chunks) > 1 else ""
        lines.extend(
            f"{FAILURE_PREFIX}{run.job.source}: removed: {where}{removal.text}"
            for removal in piece.removed
        )
    return lines


def _piece_clause(chunk: Chunk) -> str:
    if chunk.paragraph_first == chunk.paragraph_last:
        span = f"paragraph {chunk.paragraph_first}"
    else:
        span = f"paragraphs {chunk.paragraph_first}–{chunk.paragraph_last}"
    return f"piece {chunk.sha256[:12]} ({span}, {chunk.bytes} B): "


def _failure_line(run: _Run, chunk_index: int) -> str:
    clause, message = run.failures[chunk_index]
    line = (
        f"{FAILURE_PREFIX}{run.job.source}: chunk {chunk_index + 1}/{len(run.chunks)}: "
        f"{clause}{message}"
    )
    if run.units:
        line += (
            f" ({len(run.units)} extracted unit(s) are checkpointed — a rerun without "
            "--force resumes from them)"
        )
    pointers = []
    if run.recorder.attempts_log_exists():
        log = join(run.settings.out, f"{TRACE}/{attempts_name(run.job.source)}")
        pointers.append(f" — records: {log}")
    if run.recorder.sidecar_path:
        pointers.append(f"{',' if pointers else ' —'} diagnostics: {run.recorder.sidecar_path}")
    return line + "".join(pointers)
