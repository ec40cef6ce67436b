"""One segment, end to end: read → plan → steer → pieces → merge → render → verify.

This is the interpreter of the pipeline for one segment. It decides nothing
the pipeline steps decide; it runs their laps, holds the checkpoint units,
and hands every record to a `SegmentRecorder` port. Ray-free, network-free
and disk-free, so a whole segment runs in a unit test with canned answers.
Chunks run concurrently up to --parallel, claimed in index order, and merge
in chunk order: the bytes never depend on which completion came back first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from taguru_ray.contract.names import attempts_name, join, output_name
from taguru_ray.contract.records import Record, dumps_lines
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.engine.piece import (
    Accepted,
    Complete,
    LoopPolicy,
    NextSeq,
    PieceFailed,
    PieceSpec,
    extract_piece,
)
from taguru_ray.pipeline.merge import Extraction, MergeInput, MergeRules, merge
from taguru_ray.pipeline.plan import Chunk, plan_chunks
from taguru_ray.pipeline.prompt import Conversation, system_prompt, system_sha256, user_turn
from taguru_ray.pipeline.read import Segment, SegmentRefused, read_segment
from taguru_ray.pipeline.render import HeaderFields, render
from taguru_ray.pipeline.steer import Contribution, LabelUse
from taguru_ray.pipeline.validate import PieceOutput, Rules
from taguru_ray.pipeline.verify import paragraph_records
from taguru_ray.settings import (
    Settings,
    checkpoint_fingerprint,
    compute_inputs,
    settings_record_fields,
)
from taguru_ray.store.outdir import TRACE

FAILURE_PREFIX = "taguru: extract: "


@dataclass(frozen=True)
class SegmentJob:
    """What the driver hands a worker: one segment and the labels it may see."""

    index: int
    source: str
    data: bytes
    written_id: str
    vocabulary: tuple[LabelUse, ...]


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
    complete: Complete
    next_seq: NextSeq
    system_logged: bool = False
    completions: int = 0
    failures: dict[int, tuple[str, str]] = field(
        default_factory=dict
    )  # chunk -> (piece clause, msg)


async def extract_segment(
    job: SegmentJob,
    settings: Settings,
    run_id: str,
    complete: Complete,
    next_seq: NextSeq,
    recorder: SegmentRecorder,
) -> SegmentOutcome:
    outcome = SegmentOutcome(job.index, job.source, "failed")
    try:
        segment = read_segment(job.source, job.data)
    except SegmentRefused as refusal:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {refusal}")
        return outcome
    name = output_name(job.source)
    inputs = compute_inputs(settings, segment.sha256, job.written_id, name)
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
        complete,
        next_seq,
    )
    await recorder.begin(_head_records(run), fresh=not units)
    await recorder.sidecar([_chunk_record(job.source, chunk) for chunk in chunks])
    accepted = await _run_chunks(run)
    outcome.completions = run.completions
    if run.failures:
        first = min(run.failures)
        outcome.notes.append(_failure_line(run, first))
        return outcome
    try:
        written = _write(run, accepted, inputs)
    except SourceFileError as error:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: the rendered source file failed its own import "
            f"check ({error}) — nothing was written"
        )
        return outcome
    extraction, source_bytes, trace_bytes = written
    for note in await recorder.finish(source_bytes, trace_bytes):
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    await recorder.sidecar([_segment_record(run, extraction)])
    outcome.status = "written"
    outcome.inputs = inputs
    outcome.report = _report_line(run, extraction)
    outcome.counts = _counts(extraction)
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


async def _run_chunks(run: _Run) -> dict[int, tuple[str, PieceOutput, Record | None, bool]]:
    """Every chunk's accepted output by chunk index: (piece_id, output, attempt, reused)."""
    slots = asyncio.Semaphore(run.settings.parallel)
    results: dict[int, tuple[str, PieceOutput, Record | None, bool]] = {}

    async def one(chunk: Chunk) -> None:
        async with slots:
            if run.failures:
                return  # no new claims once a chunk has failed
            piece_id = chunk.sha256
            unit = run.units.get(piece_id)
            if unit is not None:
                results[chunk.index] = (
                    piece_id,
                    PieceOutput.from_json(unit["output"]),
                    unit.get("attempt"),
                    True,
                )
                return
            try:
                accepted = await _extract(run, chunk, piece_id)
            except PieceFailed as failure:
                run.failures[chunk.index] = (_piece_clause(chunk), str(failure))
                return
            unit = {
                "chunk_index": chunk.index,
                "attempt": accepted.attempt,
                "output": accepted.output.to_json(),
                "user": _user(run, chunk),
                "answer": accepted.answer,
                "removed": [],
                "unparsed": [],
            }
            await run.recorder.save_unit(piece_id, unit)
            run.units[piece_id] = unit
            results[chunk.index] = (piece_id, accepted.output, accepted.attempt, False)

    await asyncio.gather(*(one(chunk) for chunk in run.chunks))
    return results


def _user(run: _Run, chunk: Chunk) -> str:
    return user_turn(run.job.source, chunk.index, chunk.total, chunk.text)


async def _extract(run: _Run, chunk: Chunk, piece_id: str) -> Accepted:
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
    spec = PieceSpec(
        piece_id=piece_id,
        chunk_index=chunk.index,
        source=run.job.source,
        conversation=Conversation(run.system, _user(run, chunk)),
        rules=Rules(
            paragraph_count=len(run.segment.paragraphs), questions_cap=run.settings.questions
        ),
    )
    policy = LoopPolicy(
        run.settings.max_attempts,
        run.settings.corrective_context_bytes,
        run.settings.fact_budget,
        run.run_id,
    )

    async def on_attempt(record: Record) -> None:
        run.completions += 1
        await run.recorder.log(record)
        await run.recorder.sidecar([_sidecar_attempt(record, run.settings.diagnostics_raw_bytes)])

    return await extract_piece(spec, policy, run.complete, run.next_seq, on_attempt)


def _write(
    run: _Run,
    accepted: dict[int, tuple[str, PieceOutput, Record | None, bool]],
    inputs: dict[str, Any],
) -> tuple[Extraction, bytes, bytes]:
    """merge → render → verify, and the trace that describes them."""
    settings = run.settings
    pieces = [MergeInput(accepted[i][0], accepted[i][1]) for i in sorted(accepted)]
    rules = MergeRules(len(run.segment.paragraphs), settings.questions, not settings.no_passage)
    extraction = merge(pieces, rules)
    rendered = render(
        extraction,
        HeaderFields(run.job.written_id, settings.context, settings.name, settings.description),
        None if settings.no_passage else run.segment.text,
        settings.date,
        settings.tags,
    )
    trace = _trace_records(run, accepted, extraction, rendered.items)
    return extraction, rendered.data, dumps_lines(trace)


def _trace_records(
    run: _Run,
    accepted: dict[int, tuple[str, PieceOutput, Record | None, bool]],
    extraction: Extraction,
    items: list[Record],
) -> list[Record]:
    batch_path = join(run.settings.out, output_name(run.job.source))
    records: list[Record] = [
        {
            "type": "segment",
            "run_id": run.run_id,
            "source": run.job.source,
            "segment_sha256": run.segment.sha256,
            "batch_path": batch_path,
            "chunk_total": len(run.chunks),
        },
        {
            "type": "steering",
            "chunk_index": None,
            "candidates": [],
            "system_sha256": system_sha256(run.system),
            "vocabulary": [use.to_json() for use in run.job.vocabulary],
            "context_names": [],
            "schema": None,
        },
    ]
    records.extend(_chunk_record(run.job.source, chunk, trace=True) for chunk in run.chunks)
    by_index = {chunk.index: chunk for chunk in run.chunks}
    attempt_of: dict[str, Record | None] = {}
    for index in sorted(accepted):
        piece_id, _, attempt, _ = accepted[index]
        chunk = by_index[index]
        attempt_of[piece_id] = attempt
        records.append(
            {
                "type": "piece",
                "piece_id": piece_id,
                "chunk_index": index,
                "chunk_sha256": chunk.sha256,
                "piece_bytes": chunk.bytes,
                "paragraph_first": chunk.paragraph_first,
                "paragraph_last": chunk.paragraph_last,
                "reused": attempt is None or attempt.get("run_id") != run.run_id,
                "attempt": attempt,
            }
        )
    records.extend(items)
    piece_text = {chunk.sha256: chunk.text for chunk in run.chunks}
    paragraphs = run.segment.paragraphs
    for loss in extraction.losses:
        record: Record = {
            "type": "loss",
            "item": loss.item,
            "reason": loss.reason,
            "rule": loss.rule,
            "raw": loss.raw,
            "piece_id": loss.piece_id,
            "attempt": attempt_of.get(loss.piece_id),
        }
        if loss.paragraph is not None:
            record["paragraph"] = loss.paragraph
            record["text"] = paragraphs[loss.paragraph].text
        else:
            record["text"] = piece_text.get(loss.piece_id, "")
        if loss.kept_piece_id is not None:
            record["kept_piece_id"] = loss.kept_piece_id
        records.append(record)
    records.extend(
        paragraph_records(
            paragraphs,
            (a for a, _ in extraction.associations),
            (q for q, _ in extraction.questions),
        )
    )
    return records


def _chunk_record(source: str, chunk: Chunk, *, trace: bool = False) -> Record:
    record: Record = {"type": "chunk"}
    if not trace:
        record["source"] = source
    record.update(
        chunk_index=chunk.index,
        chunk_total=chunk.total,
        chunk_sha256=chunk.sha256,
        chunk_bytes=chunk.bytes,
        paragraph_first=chunk.paragraph_first,
        paragraph_last=chunk.paragraph_last,
    )
    return record


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


def _counts(extraction: Extraction) -> dict[str, int]:
    return {
        "associations": len(extraction.associations),
        "concepts": sum(1 for a, _ in extraction.aliases if a.kind == "concept"),
        "labels": sum(1 for a, _ in extraction.aliases if a.kind == "label"),
        "questions": len(extraction.questions),
        "duplicates": extraction.count("duplicate"),
        "dropped": extraction.count("dropped"),
        "removed": extraction.count("removed"),
        "uncovered": 0,
    }


def _segment_record(run: _Run, extraction: Extraction) -> Record:
    return {
        "type": "segment",
        "source": run.job.source,
        **_counts(extraction),
        "batch_path": join(run.settings.out, output_name(run.job.source)),
    }


def _report_line(run: _Run, extraction: Extraction) -> str:
    counts = _counts(extraction)
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
    batch_path = join(run.settings.out, output_name(run.job.source))
    return f"{run.job.source}: {', '.join(parts)} → {batch_path}"


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
