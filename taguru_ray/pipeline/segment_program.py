"""One segment, end to end, as a program: read → plan → steer → pieces → reconcile →
commit turn → merge → render → verify.

Every decision of the extraction is here and in the modules it calls
(`descent`, `rounds`, `chunk_context`); what it needs done — a completion,
a record, a checkpoint, the commit turn, the files — it yields as an effect
(`effects`), and `engine/segment.py` carries the effects out. Chunks run side
by side up to --parallel (one at a time under carryover), claimed in index
order, and merge in chunk order (a split chunk's sub-pieces in paragraph
order): the bytes never depend on which completion came back first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from taguru_ray.contract.names import TRACE, attempts_name, inspect_command, join, output_name
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.attempts import ReplayRecord, SegmentAttempts
from taguru_ray.contract.records.sidecar import SidecarSegment
from taguru_ray.contract.settings import checkpoint_fingerprint, compute_inputs, settings_record
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.pipeline.carryover import carried, render_carryover
from taguru_ray.pipeline.chunk_context import (
    OVERVIEW_MODES,
    blocks_for,
    overview_pass,
    plan_segment,
)
from taguru_ray.pipeline.coverage import stderr_line
from taguru_ray.pipeline.descent import descend, log_system, reconcile, rung_now
from taguru_ray.pipeline.effects import (
    Begin,
    BindOverview,
    Commit,
    Convert,
    Finish,
    LoadResume,
    Parallel,
    Program,
    RecordsKept,
    Sidecar,
    Stopped,
    WhereRecords,
)
from taguru_ray.pipeline.mechanical import Offered
from taguru_ray.pipeline.merge import Extraction
from taguru_ray.pipeline.overview import OVERVIEW_SYSTEM, overview_user
from taguru_ray.pipeline.parts import oversized, part_id
from taguru_ray.pipeline.plan import Chunk
from taguru_ray.pipeline.prompt import Conversation, system_prompt
from taguru_ray.pipeline.read import (
    Segment,
    SegmentRefused,
    document_sha256,
    read_document,
    read_segment,
    redact_segment,
)
from taguru_ray.pipeline.reconcile import PieceState, proposal_of, prune_claimed
from taguru_ray.pipeline.replay_book import settings_differences
from taguru_ray.pipeline.report import (
    FAILURE_PREFIX,
    counts,
    piece_clause,
    report_line,
)
from taguru_ray.pipeline.rounds import PieceFailed, ask_overview
from taguru_ray.pipeline.segment_job import SegmentOutcome
from taguru_ray.pipeline.segment_state import SegmentState, SegmentTask
from taguru_ray.pipeline.segment_write import (
    Leaked,
    merge_pieces,
    merge_rules,
    removal_lines,
    write,
)
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pipeline.steering import steering_for, system_for
from taguru_ray.pipeline.structure import Unit
from taguru_ray.pipeline.trace import chunk_record
from taguru_ray.text.occurrence import fold
from taguru_ray.text.redact import stderr_summary


def extract(task: SegmentTask) -> Program[SegmentOutcome]:
    """The segment's outcome: written (with its report line and manifest entry), failed
    (its failure line last) or interrupted."""
    job, settings = task.job, task.settings
    outcome = SegmentOutcome(job.index, job.source, "failed")
    inputs = task.inputs
    try:
        segment = yield from _read(task, outcome)
    except SegmentRefused as refusal:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {refusal}")
        return outcome
    segment, redactions = redact_segment(segment, inputs.redaction, inputs.redact_key)
    if redactions:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {stderr_summary(redactions)}")
    entry = compute_inputs(
        settings,
        inputs.digests,
        segment.sha256,
        job.written_id,
        output_name(job.source),
        job.converter,
    )
    fingerprint = checkpoint_fingerprint(settings, inputs.digests, segment.sha256, job.converter)
    # Replay and --resume-from read no checkpoint: a cached unit was validated under
    # whichever rules ran then, which is what a replay after a rule change must not reuse.
    discard = settings.run.force or settings.records.bypasses_store
    resume, note = yield LoadResume(fingerprint, discard)
    if note:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    found, chunks = plan_segment(
        settings.prompt.chunk_context, segment.paragraphs, settings.input.chunk_bytes
    )
    steering = steering_for(job, settings.prompt, inputs, segment.text)
    book = task.replay.book if task.replay is not None else None
    system, pinned_from, pin_notes = system_for(steering, book, settings.records.pin_system)
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {n}" for n in pin_notes)
    state = SegmentState(task, segment, chunks, system, resume)
    state.pinned_from, state.steering, state.redactions = pinned_from, steering, redactions
    state.units = found
    state.offered = Offered(inputs.allowlist | frozenset(fold(n) for n in steering.candidates))
    head = yield from _head_records(state)
    yield Begin(head, not resume.holds and task.replay is None)
    if book is not None:
        outcome.notes.extend(
            f"{FAILURE_PREFIX}{job.source}: settings differ from the recorded run: {difference}"
            for difference in settings_differences(book.settings, head[1])
        )
    yield Sidecar([chunk_record(chunk, job.source) for chunk in chunks])
    try:
        yield from _chunk_context(state)
    except Stopped:
        state.interrupted = True
    pieces = (yield from _run_chunks(state)) if not state.interrupted else []
    if not state.failures and not state.interrupted and not settings.ladder.lossy:
        try:
            yield from reconcile(state, pieces)
        except Stopped:
            state.interrupted = True
    contribution = Contribution()
    merged: Extraction | None = None
    if not state.failures and not state.interrupted:
        # The commit turn (ADR 0019): judged against every earlier segment, in name order.
        merged = merge_pieces(state, pieces)
        kept = (association for association, _ in merged.associations)
        verdict = yield Commit(proposal_of(pieces, merge_rules(state), kept))
        if verdict is None:
            state.interrupted = True
        else:
            if verdict.pruned:  # the merge ran before the prune: run it again
                prune_claimed(pieces, verdict.pruned)
                merged = None
            contribution = verdict.contribution
    outcome.notes.extend(state.notes)
    if state.interrupted and not state.failures:
        outcome.status = "interrupted"
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: stopped — {len(state.resume.units)} extracted "
            "unit(s) are checkpointed; a rerun without --force resumes from them"
        )
        return outcome
    if state.failures:
        where: RecordsKept = yield WhereRecords()
        outcome.notes.append(failure_line(state, min(state.failures), where))
        return outcome
    try:
        extraction, files, trace_bytes, gaps = write(state, pieces, merged)
    except SourceFileError as error:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: the rendered source file failed its own import "
            f"check ({error}) — nothing was written"
        )
        return outcome
    except Leaked as leaked:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: {leaked.findings[0]}"
            + (f" (+{len(leaked.findings) - 1} more)" if len(leaked.findings) > 1 else "")
            + " — the answer holds what the masked segment never showed; nothing was written"
        )
        return outcome
    outcome.notes.extend(removal_lines(state, pieces))
    outcome.notes.extend(stderr_line(job.source, gap) for gap in gaps)
    more = tuple(files[1:]) if job.converter is not None else None
    written: list[str] = yield Finish(files[0], trace_bytes, more)
    if len(files) > 1:
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: its text is {state.segment.bytes} bytes, over the "
            f"8 MiB passage cap: written in {len(files)} parts ({part_id(job.written_id, 1)} "
            f"… {part_id(job.written_id, len(files))}), each a source file that imports whole"
        )
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {note}" for note in written)
    outcome.counts = _counts(state, extraction, pieces, len(gaps))
    yield Sidecar(
        [SidecarSegment(source=job.source, **outcome.counts, batch_path=state.batch_path).record()]
    )
    outcome.status = "written"
    outcome.inputs = entry
    outcome.report = report_line(
        job.source,
        state.batch_path,
        outcome.counts,
        passage=not settings.source.no_passage,
        questions=settings.prompt.questions > 0,
        lossy=settings.ladder.lossy,
    )
    outcome.contribution = contribution
    return outcome


def _read(task: SegmentTask, outcome: SegmentOutcome) -> Program[Segment]:
    """The `read` step: a text segment's bytes decoded; a document's converted where the
    segment runs (ADR 0078), its bytes' digest the manifest's hash. `SegmentRefused`
    when it cannot be read."""
    job = task.job
    if job.converter is None:
        return read_segment(job.source, job.data)
    inputs = task.inputs
    key = inputs.redact_key if inputs.redaction else None
    digest = document_sha256(job.data, key)
    converted = yield Convert(job.converter, job.data, digest, keep=key is None)
    if isinstance(converted, str):
        raise SegmentRefused(converted)
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {note}" for note in converted.notes)
    segment = read_document(job.source, converted, digest)
    if not task.settings.source.no_passage:  # refused now, not after its answers are paid
        oversized(segment.paragraphs)
    return segment


def _counts(
    state: SegmentState, extraction: Extraction, pieces: list[PieceState], gaps: int
) -> dict[str, int]:
    """The segment record's counts; taguru-ray's own only when their feature ran."""
    settings = state.settings
    tally = counts(extraction, pieces)
    if settings.input.redact:
        tally["redacted"] = sum(1 for found in state.redactions if not found.preexisting)
    tally["uncovered"] = gaps
    if settings.prompt.carryover:
        tally["carryover_names"] = sum(len(pairs) for pairs in state.carry.values())
    if settings.ladder.gleanings:
        tally["gleaning_passes"] = state.gleaning_passes
        tally["failed_gleanings"] = state.failed_gleanings
    return tally


def _head_records(state: SegmentState) -> Program[list[Record]]:
    """The attempts log's head: the segment, its settings, and the replay when there is one."""
    rung = yield from rung_now(state)
    settings = settings_record(state.settings, state.inputs.digests, rung).record()
    records = [
        SegmentAttempts(
            run_id=state.run_id,
            source=state.job.source,
            segment_sha256=state.segment.sha256,
            resumed=bool(state.resume.units),
        ).record(),
        settings,
    ]
    replay = state.task.replay
    if replay is not None:
        records.append(ReplayRecord(mode=replay.mode, replay_from=replay.replay_from).record())
    return records


def _run_chunks(state: SegmentState) -> Program[list[PieceState]]:
    """Every accepted piece, in chunk order (incomplete when a chunk failed)."""
    carryover = state.settings.prompt.carryover
    # Carryover makes each chunk's prompt depend on the chunks before it: one at a time.
    width = 1 if carryover else state.settings.scale.parallel
    results: dict[int, list[PieceState]] = {}

    def one(chunk: Chunk) -> Program[None]:
        if state.failures or state.interrupted:
            return  # no new claims once a chunk has failed, or the run stops
        if carryover:
            earlier = [s.output for i in sorted(results) for s in results[i]]
            pairs = carried(earlier, carryover)
            state.carry[chunk.index] = pairs
            if pairs:
                blocks = (*state.steering.blocks, render_carryover(pairs))
                steering = dataclasses.replace(state.steering, blocks=blocks)
                state.chunk_systems[chunk.index] = system_prompt(steering)
        try:
            results[chunk.index] = yield from descend(state, chunk)
        except PieceFailed as failure:
            state.failures[chunk.index] = (failure.piece or chunk, str(failure))
        except Stopped:
            state.interrupted = True

    yield Parallel(tuple(_started(one, chunk) for chunk in state.chunks), width)
    return [piece for index in sorted(results) for piece in results[index]]


def _started(one: Callable[[Chunk], Program[None]], chunk: Chunk) -> Callable[[], Program[None]]:
    return lambda: one(chunk)


def _chunk_context(state: SegmentState) -> Program[None]:
    """--chunk-context: the overview pass (overview, ingested), then every chunk's block."""
    settings = state.settings
    mode = settings.prompt.chunk_context
    if mode == "off":
        return
    merged = None
    if mode in OVERVIEW_MODES:
        width = 1 if settings.prompt.carryover else settings.scale.parallel
        done = yield from overview_pass(
            state.chunks,
            state.units,
            state.resume.overview,
            lambda chunk, opening: _ask_overview(state, chunk, opening),
            width,
        )
        for chunk, note in done.notes:
            state.note(chunk, note)
        state.overviews = done.overviews
        merged = done.merged()
        stale = yield BindOverview(merged.digest, bool(state.resume.units))
        if stale:
            state.notes.append(
                f"{FAILURE_PREFIX}{state.job.source}: the overview changed since the checkpoint "
                f"— {len(state.resume.units)} unit(s) extracted against the old block re-extract"
            )
            state.resume.units.clear()
    known = state.inputs.vocabulary if mode == "ingested" else None
    state.blocks = blocks_for(
        state.chunks,
        state.units,
        state.segment.paragraphs,
        settings.input.chunk_bytes,
        merged,
        known,
        state.steering.candidates,
    )


def _ask_overview(
    state: SegmentState, chunk: Chunk, opening: list[Unit]
) -> Program[tuple[str | None, str | None]]:
    if state.interrupted:
        raise Stopped()
    conversation = Conversation(OVERVIEW_SYSTEM, overview_user(state.job.source, chunk, opening))
    spec = dataclasses.replace(state.spec(chunk), conversation=conversation)
    rung = yield from rung_now(state)
    yield from log_system(state, OVERVIEW_SYSTEM)
    answer: tuple[str | None, str | None] = yield from state.about(
        chunk, ask_overview(spec, state.policy(), rung)
    )
    return answer


def failure_line(state: SegmentState, chunk_index: int, kept: RecordsKept) -> str:
    """The failed segment's line: the innermost piece, why, and where its records are."""
    piece, message = state.failures[chunk_index]
    line = (
        f"{FAILURE_PREFIX}{state.job.source}: chunk {chunk_index + 1}/{len(state.chunks)}: "
        f"{piece_clause(piece)}{message}"
    )
    if state.resume.units:
        line += (
            f" ({len(state.resume.units)} extracted unit(s) are checkpointed — a rerun "
            "without --force resumes from them)"
        )
    pointers = []
    if kept.attempts_log:
        log = join(state.settings.source.out, f"{TRACE}/{attempts_name(state.job.source)}")
        pointers.append(f" — records: {log} ({inspect_command(log, piece.sha256)})")
    if kept.sidecar:
        pointers.append(f"{',' if pointers else ' —'} diagnostics: {kept.sidecar}")
    return line + "".join(pointers)
