"""The interpreter of one segment's extraction program (`pipeline/segment_program.py`).

The program decides; this carries out what it yields against the segment's
ports — the model (completions, numbered run-wide; the rung; the commit
turn) and the recorder (checkpoint, attempts log, sidecar, files) — and
hands each result back, keeping the program's guarantees: a record or a
checkpoint is durable before the program goes on, and a completion refused
because the run stops is thrown into the program where it was asked for.
Ray-free, network-free and disk-free by itself, so a whole segment runs in a
unit test with canned answers.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from taguru_ray.contract.records.attempts import ReplaySummary
from taguru_ray.engine.documents import Documents
from taguru_ray.engine.ports import Model, SegmentRecorder
from taguru_ray.pipeline.effects import (
    Answered,
    Ask,
    Begin,
    BindOverview,
    Commit,
    Convert,
    CurrentRung,
    Demote,
    Finish,
    LoadResume,
    Log,
    LogAttempt,
    LogMove,
    Parallel,
    Program,
    RecordsKept,
    SaveOverview,
    SaveSplit,
    SaveUnit,
    Sidecar,
    Stopped,
    WhereRecords,
)
from taguru_ray.pipeline.report import FAILURE_PREFIX, sidecar_attempt
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.segment_program import extract
from taguru_ray.pipeline.segment_state import ReplayView, SegmentTask
from taguru_ray.sessions.program import extract_session, is_staged
from taguru_ray.settings import Settings

T = TypeVar("T")


async def extract_segment(
    job: SegmentJob,
    settings: Settings,
    run_id: str,
    model: Model,
    recorder: SegmentRecorder,
    run_inputs: RunInputs | None = None,
    documents: Documents | None = None,
) -> SegmentOutcome:
    """Run one segment's program on its ports; `documents` converts a document (the
    worker's, kept across segments; without one, a converter of this segment's own)."""
    own = documents is None and job.converter is not None
    if own:
        documents = Documents.of(settings, None)
    try:
        return await _extract_segment(job, settings, run_id, model, recorder, run_inputs, documents)
    finally:
        if own and documents is not None:
            documents.close()


async def _extract_segment(
    job: SegmentJob,
    settings: Settings,
    run_id: str,
    model: Model,
    recorder: SegmentRecorder,
    run_inputs: RunInputs | None,
    documents: Documents | None,
) -> SegmentOutcome:
    replay = (
        ReplayView(model.replay.book, model.replay.mode, settings.replay_dir())
        if model.replay is not None
        else None
    )
    task = SegmentTask(job, settings, run_id, run_inputs or RunInputs(), replay)
    interpreter = Interpreter(
        model, recorder, settings.records.diagnostics_raw_bytes, documents
    )
    # A staged agent session (`taguru-ray sessions extract`) runs its own program on the
    # same ports: batches of turns instead of chunks, the v4 contract instead of items.
    program = extract_session(task) if is_staged(job.data) else extract(task)
    outcome = await interpreter.perform(program)
    outcome.completions = interpreter.completions
    if outcome.status == "written" and outcome.inputs is not None:
        await recorder.record(outcome.inputs, job.previous_output)
    if outcome.status == "written" and model.replay is not None:
        replayer = model.replay
        total = replayer.replayed + replayer.went_live
        await recorder.log(
            ReplaySummary(replayed=replayer.replayed, live=replayer.went_live).record()
        )
        outcome.notes.append(
            f"{FAILURE_PREFIX}{job.source}: replayed {replayer.replayed}/"
            f"{total} completions ({replayer.went_live} live)"
        )
    return outcome


class Interpreter:
    """Carries out a program's effects against one segment's ports."""

    def __init__(
        self,
        model: Model,
        recorder: SegmentRecorder,
        raw_bytes: int = 0,
        documents: Documents | None = None,
    ) -> None:
        self._model = model
        self._recorder = recorder
        self._documents = documents
        self._raw_bytes = raw_bytes  # TAGURU_EXTRACT_DIAGNOSTICS_RAW_BYTES, for the sidecar
        self.completions = 0

    async def perform(self, program: Program[T]) -> T:
        """Run `program` to its end; its own exceptions (a failed piece) pass through."""
        sent: Any = None
        thrown: Exception | None = None
        while True:
            try:
                effect = program.throw(thrown) if thrown is not None else program.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            try:
                sent = await self._carry_out(effect)
            except Stopped as stopped:
                thrown = stopped

    async def _carry_out(self, effect: Any) -> Any:
        model, recorder = self._model, self._recorder
        if isinstance(effect, Ask):
            completion = await model.complete(effect.request)
            seq = completion.attempt_seq
            if seq is None:  # a model port without admission control numbers it here
                seq = await model.next_seq()
            return Answered(completion, seq)
        if isinstance(effect, LogAttempt):
            self.completions += 1
            await recorder.log(effect.record)
            await recorder.sidecar([sidecar_attempt(effect.record, self._raw_bytes)])
        elif isinstance(effect, LogMove | Log):
            await recorder.log(effect.record)
        elif isinstance(effect, Sidecar):
            await recorder.sidecar(effect.records)
        elif isinstance(effect, CurrentRung):
            return await model.rung.current()
        elif isinstance(effect, Demote):
            return await model.rung.demote(effect.ran_under)
        elif isinstance(effect, LoadResume):
            return recorder.load(effect.fingerprint, discard=effect.discard)
        elif isinstance(effect, Begin):
            await recorder.begin(effect.records, fresh=effect.fresh)
        elif isinstance(effect, SaveUnit):
            await recorder.save_unit(effect.piece_id, effect.unit)
        elif isinstance(effect, SaveSplit):
            await recorder.save_split(effect.piece_id, effect.cap)
        elif isinstance(effect, SaveOverview):
            await recorder.save_overview(effect.chunk_sha256, effect.answer)
        elif isinstance(effect, BindOverview):
            return await recorder.bind_overview(effect.digest, keep=effect.keep)
        elif isinstance(effect, Parallel):
            return await self._parallel(effect)
        elif isinstance(effect, Commit):
            return await model.commit(effect.proposal)
        elif isinstance(effect, Convert):
            if self._documents is None:
                return "no converter was given this segment's interpreter — this is a bug"
            return await self._documents.convert(effect)
        elif isinstance(effect, Finish):
            if effect.parts is not None:  # a document's: its parts, if any
                return await recorder.finish(effect.source_file, effect.trace, effect.parts)
            return await recorder.finish(effect.source_file, effect.trace)
        elif isinstance(effect, WhereRecords):
            return RecordsKept(recorder.attempts_log_exists(), recorder.sidecar_path)
        else:
            raise TypeError(f"no interpreter for {effect!r}")
        return None

    async def _parallel(self, effect: Parallel) -> list[Any]:
        """Each program started when a slot frees, in order (the semaphore wakes waiters
        first come, first served)."""
        slots = asyncio.Semaphore(effect.width)

        async def one(start: Any) -> Any:
            async with slots:
                return await self.perform(start())

        return list(await asyncio.gather(*(one(start) for start in effect.starts)))
