"""Segments run in the driver, their completions through a provider's batch API
(`--batch-api`, ADR 0068): what `workers.Workers` is to a live run.

A batch run has no HTTP work to spread: a round's requests go out as one file
and come back as one. So the segment programs run here, in the driver's event
loop, each through the same interpreter, recorder and claims ledger a worker
uses — the source file, trace, attempts log, checkpoint and manifest entry are
written as a live run writes them — with `BatchRounds.complete` as the model.
Each answer is then numbered and counted at the gateway, as a live request's is
(one permit taken and given back with its tokens), so the run's totals and a
budget count it at the run's tariff — the batch price (`engine/batch_price.py`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import Record
from taguru_ray.engine.batch_rounds import BatchRounds
from taguru_ray.engine.batches import failed_outcome
from taguru_ray.engine.commits import CommitBatches
from taguru_ray.engine.head_actors import HeadActors
from taguru_ray.engine.ports import Model
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.engine.replay import Replayer
from taguru_ray.engine.segment import FAILURE_PREFIX, extract_segment
from taguru_ray.gateway.kept import GatewayAdmission, GatewayRung
from taguru_ray.llm.batch_wire import wire_for
from taguru_ray.llm.client import Usage, open_session
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.settings import Settings
from taguru_ray.store.batch_journal import BatchJournal
from taguru_ray.store.journal import Journal
from taguru_ray.store.outdir import OutDir

DRIVER_INDEX = 0  # the gateway's worker slot the driver takes: a batch run starts no worker


class BatchSegments:
    def __init__(
        self,
        settings: Settings,
        run_id: str,
        out: OutDir,
        actors: HeadActors,
        inputs: RunInputs,
        say: Callable[[str], None],
    ) -> None:
        self._settings = settings
        self._run_id = run_id
        self._out = out  # the run's own: fenced by the lock's lease like every driver write
        self._actors = actors
        self._inputs = inputs
        self._say = say
        self._journal = Journal(out)
        self._batches = BatchJournal(out)
        self._http: aiohttp.ClientSession | None = None
        self._ready: asyncio.Future[None] | None = None
        self.rounds: BatchRounds | None = None
        self._admission: GatewayAdmission | None = None
        self._commits: CommitBatches | None = None
        self.handles: list[Any] = []  # no worker actors: nothing for the pacing part to ask
        self.head_lost = False

    def start(self) -> None:
        """Once the first segment needs the model (the head actors are up by then)."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._open())

    async def _open(self) -> None:
        self._http = open_session()
        self.rounds = BatchRounds(
            wire_for(self._http, self._settings.transport),
            self._batches,
            self._run_id,
            self._settings.transport.batch_poll_secs,
            lambda line: self._say(f"{FAILURE_PREFIX}{line}"),
        )
        for note in await asyncio.to_thread(self.rounds.load):
            self._say(f"{FAILURE_PREFIX}{note}")
        if self.rounds.recorded:
            self._say(
                f"{FAILURE_PREFIX}{self.rounds.recorded} batch(es) recorded in --out by an "
                "earlier run: their answers are collected, nothing in them is handed over again"
            )
        self._admission = GatewayAdmission(self._actors.gateway, DRIVER_INDEX)
        await self._admission.register()
        self._commits = CommitBatches(self._actors.ledger)

    async def run_segment(self, job: SegmentJob) -> SegmentOutcome:
        self.start()
        assert self._ready is not None
        try:
            await asyncio.shield(self._ready)
            return await self._run(job)
        except Exception as error:
            return failed_outcome(job, error)

    async def _run(self, job: SegmentJob) -> SegmentOutcome:
        rounds, admission, commits = self.rounds, self._admission, self._commits
        assert rounds is not None and admission is not None and commits is not None
        settings = self._settings
        diagnostics = self._actors.diagnostics
        pending: list[Any] = []

        def emit(records: list[Record]) -> None:
            pending.append(diagnostics.write.remote(records))

        recorder = StoreRecorder(
            self._out,
            job.source,
            journal=self._journal,
            trace_attempts=settings.records.trace_attempts,
            sidecar=emit if diagnostics is not None else None,
            sidecar_path=settings.records.diagnostics_out,
        )
        live = counted(
            lambda request: rounds.complete(job.source, request),
            admission,
            job.index,
            lambda cid: rounds.delivered(job.source, cid),
        )
        model = Model(
            live,
            admission.next_attempt_seq,
            lambda proposal: commits.commit(job.index, proposal),
            GatewayRung(self._actors.gateway, admission),
        )
        if settings.records.replay_mode != "off":
            from taguru_ray.engine.worker import _read_book  # the worker's reader, once

            book = await asyncio.to_thread(_read_book, settings.replay_dir(), job.source)
            replayer = Replayer(book, settings.records.replay_mode, live)
            model = dataclasses.replace(model, complete=replayer.complete, replay=replayer)
        rounds.touch()
        try:
            outcome = await extract_segment(
                job, settings, self._run_id, model, recorder, self._inputs
            )
            if outcome.status != "interrupted":
                rounds.settle(job.source)
            return outcome
        finally:
            rounds.touch()  # a segment ended: its successor in the window may start
            recorder.close()
            if pending:
                await asyncio.gather(*pending)

    def flushes(self) -> list[Awaitable[None]]:
        """The run's end: the gateway hears the last answers; the records of batches
        whose every answer was used are dropped, the others rewritten with the answers
        used so far; the HTTP session closes."""
        return [self._finish()]

    async def _finish(self) -> None:
        if self._admission is not None:
            await self._admission.flush()
        if self.rounds is not None:
            done = self.rounds.finished()
            if done:
                await asyncio.to_thread(self._batches.drop, done)
            for record in self.rounds.ledger.kept():
                await asyncio.to_thread(self._batches.write, record)
        if self._http is not None:
            await self._http.close()

    def halt(self) -> None:
        if self.rounds is not None:
            self.rounds.halt()
        if self._admission is not None:
            self._admission.halt()

    def set_deadline(self, deadline: float) -> None:
        """The driver's writes are fenced by the lease itself (`OutDir.fence`)."""

    def stop_watchdog(self) -> None:
        """No worker to watch."""

    def end(self) -> None:
        if self.rounds is not None:
            self.rounds.halt()


Complete = Callable[[CompletionRequest], Awaitable[Completion]]


def counted(
    complete: Complete,
    admission: GatewayAdmission,
    priority: int,
    delivered: Callable[[str], None],
) -> Complete:
    """`complete`, each answer then numbered and counted at the gateway: a permit taken
    and given back at once with the answer's tokens, as a live request's is — so the
    run's totals, its tariff and a budget see it (a budget crossed stops the run, and
    the answer is not delivered: its batch record keeps it for the rerun)."""

    async def complete_counted(request: CompletionRequest) -> Completion:
        completion = await complete(request)
        tokens = (completion.input_tokens or 0) + (completion.output_tokens or 0)
        lease, _, seq = await admission.acquire(tokens, True, priority)
        outcome = "ok" if completion.outcome == "answer" else completion.outcome
        usage = Usage(outcome, 0.0, completion.input_tokens or 0, completion.output_tokens or 0)
        await admission.release(lease, usage)
        if seq is not None and not isinstance(seq, int):
            seq = await seq
        if "custom_id" in completion.extra:
            delivered(completion.extra["custom_id"])
        return dataclasses.replace(completion, attempt_seq=seq)

    return complete_counted
