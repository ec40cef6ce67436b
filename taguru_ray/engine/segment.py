"""One segment, end to end: read → plan → steer → pieces → reconcile → merge → render → verify.

This is the interpreter of the pipeline for one segment. It decides nothing
the pipeline steps decide; it runs their laps, climbs the ladder (escalate,
demote, split), holds the checkpoint units, and hands every record to a
`SegmentRecorder` port. Ray-free, network-free and disk-free, so a whole
segment runs in a unit test with canned answers. Chunks run concurrently up
to --parallel, claimed in index order, and merge in chunk order (a split
chunk's sub-pieces in paragraph order): the bytes never depend on which
completion came back first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

from taguru_ray.contract.names import attempts_name, inspect_command, join, output_name
from taguru_ray.contract.records import Record, dumps_lines
from taguru_ray.contract.records.attempts import (
    DemoteMove,
    ReplayRecord,
    ReplaySummary,
    SegmentAttempts,
    SplitMove,
    SystemRecord,
)
from taguru_ray.contract.records.checkpoint import CheckpointUnit
from taguru_ray.contract.records.sidecar import SidecarSegment
from taguru_ray.contract.source_file import SourceFileError
from taguru_ray.engine.chunk_context import (
    OVERVIEW_MODES,
    blocks_for,
    overview_pass,
    plan_segment,
)
from taguru_ray.engine.piece import (
    Accepted,
    Exhausted,
    LoopPolicy,
    PieceFailed,
    PieceSpec,
    Wire,
    ask_overview,
    correct_once,
    glean,
    move_record,
    run_round,
)
from taguru_ray.engine.ports import (
    Model,
    Resume,
    SegmentJob,
    SegmentOutcome,
    SegmentRecorder,
)
from taguru_ray.engine.replay import settings_differences
from taguru_ray.engine.report import (
    FAILURE_PREFIX,
    chunk_prefix,
    counts,
    piece_clause,
    report_line,
    sidecar_attempt,
)
from taguru_ray.engine.steering import steering_for, system_for
from taguru_ray.gateway.pool import Stopped
from taguru_ray.llm.ladder import JSON_OBJECT, JSON_SCHEMA, LadderConfig
from taguru_ray.pipeline.annotate import ContextBlock, haystack_text
from taguru_ray.pipeline.carryover import carried, render_carryover
from taguru_ray.pipeline.coverage import Gap, stderr_line, uncovered, uncovered_records
from taguru_ray.pipeline.leaks import answer_leaks
from taguru_ray.pipeline.mechanical import Offered, Removal
from taguru_ray.pipeline.merge import Extraction, MergeInput, MergeRules, merge
from taguru_ray.pipeline.overview import OVERVIEW_SYSTEM, Overview, overview_user
from taguru_ray.pipeline.plan import Chunk, Piece, piece_from_text, split_cap
from taguru_ray.pipeline.plan import split_piece as split_into
from taguru_ray.pipeline.prompt import Conversation, system_prompt, system_sha256, user_turn
from taguru_ray.pipeline.read import Segment, SegmentRefused, read_segment, redact_segment
from taguru_ray.pipeline.reconcile import (
    PieceState,
    StandingIssue,
    proposal_of,
    prune_claimed,
    prune_dangling,
    prune_standing,
    stage2_issues,
)
from taguru_ray.pipeline.render import HeaderFields, render
from taguru_ray.pipeline.steer import Contribution, Steering
from taguru_ray.pipeline.structure import Unit
from taguru_ray.pipeline.trace import SegmentFacts, chunk_record, trace_records
from taguru_ray.pipeline.validate import PieceOutput, Rules
from taguru_ray.settings import (
    Settings,
    checkpoint_fingerprint,
    compute_inputs,
    settings_record,
)
from taguru_ray.store.outdir import TRACE
from taguru_ray.store.run_inputs import RunInputs
from taguru_ray.text.occurrence import Haystack, fold
from taguru_ray.text.redact import Redaction, stderr_summary

CONSTRAINED = (JSON_SCHEMA, JSON_OBJECT)


@dataclass
class _Run:
    """The mutable state of one segment's extraction."""

    job: SegmentJob
    settings: Settings
    run_id: str
    segment: Segment
    chunks: list[Chunk]
    system: str
    resume: Resume
    recorder: SegmentRecorder
    model: Model
    inputs: RunInputs = field(default_factory=RunInputs)
    units: list[Unit] = field(default_factory=list)  # --chunk-context: the headings' units
    blocks: dict[int, ContextBlock] = field(default_factory=dict)  # chunk -> its block
    overviews: list[Overview | None] = field(default_factory=list)  # chunk -> its overview
    offered: Offered = field(default_factory=Offered)
    redactions: list[Redaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pinned_from: str | None = None
    steering: Steering = field(default_factory=Steering)
    chunk_systems: dict[int, str] = field(default_factory=dict)  # carryover: per-chunk prompts
    carry: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    logged_systems: set[str] = field(default_factory=set)
    gleaning_passes: int = 0
    failed_gleanings: int = 0
    completions: int = 0
    failures: dict[int, tuple[Piece, str]] = field(default_factory=dict)  # chunk -> innermost
    interrupted: bool = False  # the run is stopping: no new completion may start

    @property
    def batch_path(self) -> str:
        return join(self.settings.source.out, output_name(self.job.source))

    @property
    def ladder(self) -> LadderConfig:
        s = self.settings.ladder
        return LadderConfig.of(
            s.structured_output, s.max_output_tokens, s.escalation_factor, s.runaway_ratio
        )

    def policy(self) -> LoopPolicy:
        s = self.settings.ladder
        return LoopPolicy(
            s.max_attempts,
            s.corrective_context_bytes,
            self.settings.prompt.fact_budget,
            self.run_id,
            s.lossy,
            self.ladder,
        )

    def spec(self, piece: Piece) -> PieceSpec:
        return PieceSpec(
            piece=piece,
            source=self.job.source,
            conversation=Conversation(self.system_of(piece), self.user(piece)),
            rules=Rules(len(self.segment.paragraphs), self.settings.prompt.questions),
            haystack=Haystack(haystack_text(self.block_text(piece), piece.text)),
            offered=self.offered,
        )

    def system_of(self, piece: Piece) -> str:
        """This run's system prompt for the piece's chunk, or under replay the one the
        recording sent this piece (or its chunk's unsplit piece)."""
        computed = self.chunk_systems.get(piece.index, self.system)
        if self.model.replay is None or not self.settings.records.pin_system:
            return computed
        book = self.model.replay.book
        found = book.piece_system(piece.sha256)
        if found is None and piece.index < len(self.chunks):
            found = book.piece_system(self.chunks[piece.index].sha256)
        if found is None:
            return computed
        content, recorded_run = found
        if content != computed:
            note = (
                f"{FAILURE_PREFIX}{self.job.source}: the recorded system prompt differs from "
                "this run's — replaying with the recorded one"
            )
            if note not in self.notes:
                self.notes.append(note)
            # The trace names what was sent: the chunk's carryover prompt, else the segment's.
            if piece.index in self.chunk_systems:
                self.chunk_systems[piece.index] = content
            else:
                self.system = content
        self.pinned_from = self.pinned_from or recorded_run
        return content

    def user(self, piece: Piece) -> str:
        return user_turn(
            self.job.source, piece.index, piece.total, piece.text, self.block_text(piece)
        )

    def block_text(self, piece: Piece) -> str | None:
        """--chunk-context: the chunk's block; a split sub-piece keeps its chunk's."""
        block = self.blocks.get(piece.index)
        return block.text if block is not None else None

    def note(self, piece: Piece, text: str) -> None:
        """A stderr line about a piece, said once per segment."""
        where = f"{chunk_prefix(piece)}: " if piece.total > 1 else ""
        line = f"{FAILURE_PREFIX}{self.job.source}: {where}{text}"
        if line not in self.notes:
            self.notes.append(line)

    def wire(self, piece: Piece) -> Wire:
        async def on_attempt(record: Record) -> None:
            self.completions += 1
            await self.recorder.log(record)
            await self.recorder.sidecar(
                [sidecar_attempt(record, self.settings.records.diagnostics_raw_bytes)]
            )

        async def on_move(record: Record) -> None:
            await self.recorder.log(record)
            if record["move"] != "demote":  # the demotion has its own line
                self.note(piece, record["reason"])

        return Wire(
            self.model.complete,
            self.model.next_seq,
            on_attempt,
            on_move,
            lambda text: self.note(piece, text),
        )


async def extract_segment(
    job: SegmentJob,
    settings: Settings,
    run_id: str,
    model: Model,
    recorder: SegmentRecorder,
    run_inputs: RunInputs | None = None,
) -> SegmentOutcome:
    outcome = SegmentOutcome(job.index, job.source, "failed")
    try:
        segment = read_segment(job.source, job.data)
    except SegmentRefused as refusal:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {refusal}")
        return outcome
    run_inputs = run_inputs or RunInputs()
    segment, redactions = redact_segment(segment, run_inputs.redaction, run_inputs.redact_key)
    if redactions:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {stderr_summary(redactions)}")
    inputs = compute_inputs(
        settings, run_inputs.digests, segment.sha256, job.written_id, output_name(job.source)
    )
    fingerprint = checkpoint_fingerprint(settings, run_inputs.digests, segment.sha256)
    # Replay and --resume-from read no checkpoint: a cached unit was validated under
    # whichever rules ran then, which is what a replay after a rule change must not reuse.
    resume, note = recorder.load(
        fingerprint, discard=settings.run.force or settings.records.bypasses_store
    )
    if note:
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    found, chunks = plan_segment(
        settings.prompt.chunk_context, segment.paragraphs, settings.input.chunk_bytes
    )
    steering = steering_for(job, settings, run_inputs, segment.text)
    system, pinned_from, pin_notes = system_for(steering, settings, model)
    outcome.notes.extend(f"{FAILURE_PREFIX}{job.source}: {n}" for n in pin_notes)
    run = _Run(job, settings, run_id, segment, chunks, system, resume, recorder, model, run_inputs)
    run.pinned_from, run.steering, run.redactions = pinned_from, steering, redactions
    run.units = found
    run.offered = Offered(
        run_inputs.allowlist | frozenset(fold(name) for name in steering.candidates)
    )
    head = await _head_records(run)
    await recorder.begin(head, fresh=not resume.units and model.replay is None)
    if model.replay is not None:
        outcome.notes.extend(
            f"{FAILURE_PREFIX}{job.source}: settings differ from the recorded run: {difference}"
            for difference in settings_differences(model.replay.book.settings, head[1])
        )
    await recorder.sidecar([chunk_record(chunk, job.source) for chunk in chunks])
    try:
        await _chunk_context(run)
    except Stopped:
        run.interrupted = True
    pieces = await _run_chunks(run) if not run.interrupted else []
    if not run.failures and not run.interrupted and not settings.ladder.lossy:
        try:
            await _reconcile(run, pieces)
        except Stopped:
            run.interrupted = True
    contribution = Contribution()
    merged: Extraction | None = None
    if not run.failures and not run.interrupted:
        # The commit turn (ADR 0019): judged against every earlier segment, in name order.
        merged = _merge(run, pieces)
        kept = (association for association, _ in merged.associations)
        verdict = await model.commit(proposal_of(pieces, _merge_rules(run), kept))
        if verdict is None:
            run.interrupted = True
        else:
            if verdict.pruned:  # the merge ran before the prune: run it again
                prune_claimed(pieces, verdict.pruned)
                merged = None
            contribution = verdict.contribution
    outcome.completions = run.completions
    outcome.notes.extend(run.notes)
    if run.interrupted and not run.failures:
        outcome.status = "interrupted"
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: stopped — {len(run.resume.units)} extracted "
            "unit(s) are checkpointed; a rerun without --force resumes from them"
        )
        return outcome
    if run.failures:
        outcome.notes.append(_failure_line(run, min(run.failures)))
        return outcome
    try:
        extraction, source_bytes, trace_bytes, gaps = _write(run, pieces, merged)
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
    outcome.notes.extend(_removal_lines(run, pieces))
    outcome.notes.extend(stderr_line(job.source, gap) for gap in gaps)
    for note in await recorder.finish(source_bytes, trace_bytes):
        outcome.notes.append(f"{FAILURE_PREFIX}{job.source}: {note}")
    outcome.counts = counts(extraction, pieces)
    if settings.input.redact:
        outcome.counts["redacted"] = sum(1 for found in redactions if not found.preexisting)
    outcome.counts["uncovered"] = len(gaps)
    if settings.prompt.carryover:
        outcome.counts["carryover_names"] = sum(len(pairs) for pairs in run.carry.values())
    if settings.ladder.gleanings:
        outcome.counts["gleaning_passes"] = run.gleaning_passes
        outcome.counts["failed_gleanings"] = run.failed_gleanings
    await recorder.sidecar(
        [SidecarSegment(source=job.source, **outcome.counts, batch_path=run.batch_path).record()]
    )
    if model.replay is not None:
        replayer = model.replay
        total = replayer.replayed + replayer.went_live
        await recorder.log(
            ReplaySummary(replayed=replayer.replayed, live=replayer.went_live).record()
        )
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: replayed {replayer.replayed}/"
            f"{total} completions ({replayer.went_live} live)"
        )
    outcome.status = "written"
    outcome.inputs = inputs
    outcome.report = report_line(
        job.source,
        run.batch_path,
        outcome.counts,
        passage=not settings.source.no_passage,
        questions=settings.prompt.questions > 0,
        lossy=settings.ladder.lossy,
    )
    outcome.contribution = contribution
    return outcome


async def _head_records(run: _Run) -> list[Record]:
    rung = await run.model.rung.current() if run.ladder.engaged else None
    settings = settings_record(run.settings, run.inputs.digests, rung).record()
    records = [
        SegmentAttempts(
            run_id=run.run_id,
            source=run.job.source,
            segment_sha256=run.segment.sha256,
            resumed=bool(run.resume.units),
        ).record(),
        settings,
    ]
    if run.model.replay is not None:
        replay = ReplayRecord(mode=run.model.replay.mode, replay_from=run.settings.replay_dir())
        records.append(replay.record())
    return records


def _state_from_unit(chunk: Chunk, unit: Record) -> PieceState:
    user = unit.get("user") or ""
    text = user.split("\n\n", 1)[1] if "\n\n" in user else chunk.text
    return PieceState(
        piece=piece_from_text(chunk.index, chunk.total, text),
        output=PieceOutput.from_json(unit["output"]),
        attempt=unit.get("attempt"),
        answer=unit.get("answer") or "",
        user=user,
        removed=[Removal.from_json(r) for r in unit.get("removed") or []],
        dropped=[Removal.from_json(r) for r in unit.get("unparsed") or []],
        reused=True,
    )


def _unit_of(state: PieceState) -> Record:
    return CheckpointUnit(
        chunk_index=state.chunk_index,
        attempt=state.attempt,
        output=state.output.to_json(),
        user=state.user,
        answer=state.answer,
        removed=[r.to_json() for r in state.removed],
        unparsed=[r.to_json() for r in state.dropped],
    ).record()


async def _run_chunks(run: _Run) -> list[PieceState]:
    """Every accepted piece, in chunk order (incomplete when a chunk failed)."""
    # Carryover makes each chunk's prompt depend on the chunks before it: one at a time.
    width = 1 if run.settings.prompt.carryover else run.settings.scale.parallel
    slots = asyncio.Semaphore(width)
    results: dict[int, list[PieceState]] = {}

    async def one(chunk: Chunk) -> None:
        async with slots:
            if run.failures or run.interrupted:
                return  # no new claims once a chunk has failed, or the run stops
            if run.settings.prompt.carryover:
                earlier = [s.output for i in sorted(results) for s in results[i]]
                pairs = carried(earlier, run.settings.prompt.carryover)
                run.carry[chunk.index] = pairs
                if pairs:
                    blocks = (*run.steering.blocks, render_carryover(pairs))
                    steering = dataclasses.replace(run.steering, blocks=blocks)
                    run.chunk_systems[chunk.index] = system_prompt(steering)
            try:
                results[chunk.index] = await _descend(run, chunk)
            except PieceFailed as failure:
                run.failures[chunk.index] = (failure.piece or chunk, str(failure))
            except Stopped:
                run.interrupted = True

    await asyncio.gather(*(one(chunk) for chunk in run.chunks))
    return [state for index in sorted(results) for state in results[index]]


async def _descend(run: _Run, piece: Piece) -> list[PieceState]:
    """A piece through the ladder: reuse, rounds, demotion, and the split rung."""
    unit = run.resume.units.get(piece.sha256)
    if unit is not None:
        return [_state_from_unit(piece, unit)]
    if piece.sha256 in run.resume.splits:  # an earlier run already climbed this far
        return await _descend_split(run, piece, run.resume.splits[piece.sha256])
    while True:
        rung = await run.model.rung.current() if run.ladder.engaged else None
        await _log_system(run, run.system_of(piece))
        try:
            result = await run_round(run.spec(piece), run.policy(), run.wire(piece), rung)
        except PieceFailed as failure:
            raise PieceFailed(str(failure), piece) from None
        if isinstance(result, Accepted):
            if run.settings.ladder.gleanings:
                gleaned = await glean(
                    run.spec(piece),
                    run.policy(),
                    run.wire(piece),
                    rung,
                    result,
                    run.settings.ladder.gleanings,
                )
                run.gleaning_passes += gleaned.passes
                run.failed_gleanings += gleaned.failed
                result = gleaned.accepted
            return [await _keep(run, piece, result)]
        if await _demoted(run, piece, result):
            continue  # the piece restarts at the ladder's top, on the lower rung
        if result.kind == "runaway":
            ratio = run.settings.ladder.runaway_ratio
            raise PieceFailed(
                f"a runaway answer: {result.answer_bytes} B cut off for a {piece.bytes} B "
                f"piece, over {ratio}× its input (TAGURU_EXTRACT_RUNAWAY_RATIO) — the model is "
                "not tracking the text; no escalation or split can converge",
                piece,
            )
        cap = split_cap(piece)
        if len(split_into(piece, cap)) < 2:
            raise PieceFailed(_floor_message(run, piece, result), piece)
        return await _descend_split(run, piece, cap, result)


async def _descend_split(
    run: _Run, piece: Piece, cap: int, why: Exhausted | None = None
) -> list[PieceState]:
    subs = split_into(piece, cap)
    if why is not None:
        reason = (
            "timed out"
            if why.kind == "timeout"
            else f"still cut off at max_tokens {why.budget}"
            if why.budget
            else "cut off at the output limit"
        )
        spec = run.spec(piece)
        await run.wire(piece).on_move(
            move_record(
                SplitMove,
                run.run_id,
                spec,
                f"{reason}; splitting the {piece.bytes} B piece at {cap} B into {len(subs)} pieces",
                piece_bytes=piece.bytes,
                split_cap=cap,
                sub_pieces=len(subs),
            )
        )
        await run.recorder.save_split(piece.sha256, cap)
    states: list[PieceState] = []
    for sub in subs:  # in paragraph order, one at a time: halves of one chunk
        states.extend(await _descend(run, sub))
    return states


async def _demoted(run: _Run, piece: Piece, result: Exhausted) -> bool:
    """ADR 0021: an auto-resolved constrained rung drops one rung, run-wide; True restarts."""
    if not run.ladder.demotable or result.rung not in CONSTRAINED:
        return False
    assert result.rung is not None
    demoted, now = await run.model.rung.demote(result.rung)
    if demoted:
        why = {
            "timeout": "a completion timed out",
            "runaway": "a runaway answer",
            "length": "the answer was still cut off at the escalated budget",
        }[result.kind]
        reason = (
            f"structured output: {result.rung} demoted to {now} — {why} under the "
            f"{result.rung} rung; the piece restarts at the ladder's top"
        )
        await run.recorder.log(
            move_record(
                DemoteMove, run.run_id, run.spec(piece), reason, from_rung=result.rung, to_rung=now
            )
        )
        run.note(piece, reason)
    return now != result.rung


def _floor_message(run: _Run, piece: Piece, result: Exhausted) -> str:
    if result.kind == "timeout":
        return (
            f"timed out after {run.settings.transport.timeout_secs:g} s and the {piece.bytes} B "
            "piece is "
            "too small to split — raise TAGURU_EXTRACT_TIMEOUT_SECS or lower --chunk-bytes"
        )
    return (
        f"the answer was still cut off at max_tokens {result.budget} and the {piece.bytes} B "
        "piece is too small to split — raise --max-output-tokens or "
        "TAGURU_EXTRACT_ESCALATION_FACTOR"
    )


async def _keep(run: _Run, piece: Piece, accepted: Accepted) -> PieceState:
    state = PieceState(
        piece,
        accepted.output,
        accepted.attempt,
        accepted.answer,
        run.user(piece),
        accepted.removed,
        accepted.dropped,
    )
    unit = _unit_of(state)
    await run.recorder.save_unit(piece.sha256, unit)
    run.resume.units[piece.sha256] = unit
    return state


async def _reconcile(run: _Run, pieces: list[PieceState]) -> None:
    """Stage 2: one corrective turn per clashing output, then what stands is removed."""
    schema = run.inputs.schema
    for piece_index, issues in stage2_issues(pieces, schema):
        state = pieces[piece_index]
        rung = await run.model.rung.current() if run.ladder.engaged else None
        try:
            await _log_system(run, run.system_of(state.piece))
            corrected = await correct_once(
                run.spec(state.piece),
                run.policy(),
                run.wire(state.piece),
                rung,
                state.answer,
                issues,
                state.attempt,
            )
        except PieceFailed as failure:
            run.failures[state.chunk_index] = (state.piece, str(failure))
            return
        if corrected is not None:
            state.output, state.answer, state.attempt = (
                corrected.output,
                corrected.answer,
                corrected.attempt,
            )
            state.removed, state.reused = list(corrected.removed), False
            unit = _unit_of(state)
            await run.recorder.save_unit(state.piece_id, unit)
            run.resume.units[state.piece_id] = unit
    try:
        prune_standing(pieces, stage2_issues(pieces, schema))
    except StandingIssue as standing:
        run.failures[standing.piece.chunk_index] = (
            standing.piece.piece,
            f"the answer left {len(standing.issues)} invalid item(s) uncorrected: {standing}",
        )
        return
    prune_dangling(pieces)


async def _chunk_context(run: _Run) -> None:
    """--chunk-context: the overview pass (overview, ingested), then every chunk's block."""
    mode = run.settings.prompt.chunk_context
    if mode == "off":
        return
    merged = None
    if mode in OVERVIEW_MODES:
        done = await overview_pass(
            run.chunks,
            run.units,
            run.resume.overview,
            lambda chunk, opening: _ask_overview(run, chunk, opening),
            run.recorder.save_overview,
            1 if run.settings.prompt.carryover else run.settings.scale.parallel,
        )
        for chunk, note in done.notes:
            run.note(chunk, note)
        run.overviews = done.overviews
        merged = done.merged()
        stale = await run.recorder.bind_overview(merged.digest, keep=bool(run.resume.units))
        if stale:
            run.notes.append(
                f"{FAILURE_PREFIX}{run.job.source}: the overview changed since the checkpoint — "
                f"{len(run.resume.units)} unit(s) extracted against the old block re-extract"
            )
            run.resume.units.clear()
    known = run.inputs.vocabulary if mode == "ingested" else None
    run.blocks = blocks_for(
        run.chunks,
        run.units,
        run.segment.paragraphs,
        run.settings.input.chunk_bytes,
        merged,
        known,
        run.steering.candidates,
    )


async def _ask_overview(
    run: _Run, chunk: Chunk, opening: list[Unit]
) -> tuple[str | None, str | None]:
    if run.interrupted:
        raise Stopped()
    conversation = Conversation(OVERVIEW_SYSTEM, overview_user(run.job.source, chunk, opening))
    spec = dataclasses.replace(run.spec(chunk), conversation=conversation)
    rung = await run.model.rung.current() if run.ladder.engaged else None
    await _log_system(run, OVERVIEW_SYSTEM)
    return await ask_overview(spec, run.policy(), run.wire(chunk), rung)


async def _log_system(run: _Run, system: str) -> None:
    """A `system` record the first time each distinct system prompt is sent."""
    digest = system_sha256(system)
    if digest not in run.logged_systems:
        run.logged_systems.add(digest)
        size = len(system.encode("utf-8"))
        await run.recorder.log(SystemRecord(sha256=digest, bytes=size, content=system).record())


def _merge(run: _Run, pieces: list[PieceState]) -> Extraction:
    return merge([MergeInput(state.piece_id, state.output) for state in pieces], _merge_rules(run))


def _write(
    run: _Run, pieces: list[PieceState], merged: Extraction | None = None
) -> tuple[Extraction, bytes, bytes, list[Gap]]:
    """merge → render → verify, and the trace that describes them (with --coverage's gaps);
    `merged`: the pieces' merge when the caller has it already."""
    settings = run.settings
    extraction = merged if merged is not None else _merge(run, pieces)
    rendered = render(
        extraction,
        HeaderFields(
            run.job.written_id,
            settings.source.context,
            settings.source.name,
            settings.source.description,
        ),
        None if settings.source.no_passage else run.segment.text,
        settings.source.date,
        settings.source.tags,
    )
    facts = SegmentFacts(
        run.run_id,
        run.job.source,
        run.segment.sha256,
        run.batch_path,
        system_sha256(run.system),
        run.steering,
        run.pinned_from,
        run.carry,
        {i: system_sha256(text) for i, text in run.chunk_systems.items()},
        redactions=tuple(run.redactions),
        units=run.units,
        blocks=run.blocks,
        overviews=run.overviews,
    )
    trace = trace_records(
        facts, run.chunks, pieces, run.segment.paragraphs, extraction, rendered.items
    )
    first_item = 2 if settings.source.no_passage else 3  # after the header and the passage
    findings = answer_leaks(rendered.items, run.inputs.redaction, first_item)
    if findings:
        raise Leaked(findings)
    gaps: list[Gap] = []
    if settings.records.coverage:
        gaps = uncovered(run.segment.paragraphs, (a for a, _ in extraction.associations))
        trace.extend(uncovered_records(gaps, run.segment.paragraphs, run.chunks))
    return extraction, rendered.data, dumps_lines(trace), gaps


def _merge_rules(run: _Run) -> MergeRules:
    settings = run.settings
    return MergeRules(
        len(run.segment.paragraphs), settings.prompt.questions, not settings.source.no_passage
    )


class Leaked(Exception):
    """--redact's answer scan found a rule's shape in a label or question."""

    def __init__(self, findings: list[str]) -> None:
        super().__init__(findings[0])
        self.findings = findings


def _removal_lines(run: _Run, pieces: list[PieceState]) -> list[str]:
    """One stderr line per removal, path first; the chunk named when there are several."""
    lines = []
    for state in pieces:
        where = f"{chunk_prefix(state.piece)} " if len(run.chunks) > 1 else ""
        lines.extend(
            f"{FAILURE_PREFIX}{run.job.source}: removed: {where}{removal.text}"
            for removal in state.removed
        )
    return lines


def _failure_line(run: _Run, chunk_index: int) -> str:
    piece, message = run.failures[chunk_index]
    line = (
        f"{FAILURE_PREFIX}{run.job.source}: chunk {chunk_index + 1}/{len(run.chunks)}: "
        f"{piece_clause(piece)}{message}"
    )
    if run.resume.units:
        line += (
            f" ({len(run.resume.units)} extracted unit(s) are checkpointed — a rerun "
            "without --force resumes from them)"
        )
    pointers = []
    if run.recorder.attempts_log_exists():
        log = join(run.settings.source.out, f"{TRACE}/{attempts_name(run.job.source)}")
        pointers.append(f" — records: {log} ({inspect_command(log, piece.sha256)})")
    if run.recorder.sidecar_path:
        pointers.append(f"{',' if pointers else ' —'} diagnostics: {run.recorder.sidecar_path}")
    return line + "".join(pointers)
