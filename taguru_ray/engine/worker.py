"""Segment workers: async Ray actors that each run whole segments.

A worker owns an HTTP session (request and answer bodies travel worker ↔
endpoint, never through another actor), runs a segment's pure steps and its
chunk completions, and writes that segment's checkpoint, attempts log, trace
and source file — one writer per segment. Many segments share one worker
concurrently; the gateway's permits, not the workers, bound the load on the
endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fsspec
import ray

from taguru_ray import heap
from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.names import attempts_name
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.sidecar import RunRecord
from taguru_ray.cpu import CpuReading, own_cpu
from taguru_ray.engine.batches import Outbox, failed_outcome
from taguru_ray.engine.commits import CommitBatches
from taguru_ray.engine.documents import Documents
from taguru_ray.engine.ports import Complete, Model
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.engine.replay import Replayer
from taguru_ray.engine.segment import extract_segment
from taguru_ray.gateway.kept import GatewayAdmission, GatewayRung
from taguru_ray.llm import metrics
from taguru_ray.llm.client import ChatClient, open_session
from taguru_ray.pipeline.claims import Proposal, Verdict
from taguru_ray.pipeline.replay_book import ReplayBook
from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.settings import Settings
from taguru_ray.store.journal import Journal
from taguru_ray.store.lease import fence_grace, wait_for_deadline
from taguru_ray.store.logs import Sidecar
from taguru_ray.store.outdir import Fenced, OutDir

WRITER_THREADS = 32


def run_actor_name(run_id: str, role: str) -> str:
    """The name a run's coordinating actor (gateway, ledger, diagnostics) is found by."""
    return f"taguru-ray-{run_id}-{role}"


# A worker process that dies (a preempted node) is restarted by Ray; the driver
# resubmits the segments it was running, and their checkpoints make the redo cheap.
# Its constructor takes no actor handle or object reference: Ray warns, on every
# run, that such arguments could be lost to a restart. It finds the run's actors by
# name instead; the run's inputs come from the ledger (`ledger.Ledger.inputs`).
@ray.remote(num_cpus=0, max_concurrency=10_000, max_restarts=-1)
class SegmentWorker:
    def __init__(self, index: int, settings: Settings, run_id: str) -> None:
        # The driver's storage credentials and endpoint: fsspec reads them from here.
        os.environ.update(dict(settings.storage_env))
        self._settings = settings
        self._inputs: asyncio.Future[RunInputs] | None = None  # fetched once: `_run_inputs`
        gateway = ray.get_actor(run_actor_name(run_id, "gateway"))
        self._ledger = ray.get_actor(run_actor_name(run_id, "ledger"))
        self._commits = CommitBatches(self._ledger, lambda: self._outbox.count)
        self._run_id = run_id
        metrics.label(run_id, settings.transport.model)
        self._gateway = gateway
        self._admission = GatewayAdmission(gateway, index)
        self._registered = False
        self._diagnostics = (
            ray.get_actor(run_actor_name(run_id, "diagnostics"))
            if settings.records.diagnostics_out
            else None
        )
        self._out = OutDir(settings.source.out)
        self._converting: Documents | None = None  # documents' converter, at the first one
        self._journal = Journal(self._out)  # where this process records what it wrote
        # The run's write deadline (store/lease.py): the driver pushes each renewal's;
        # a local folder needs none.
        self._deadline = math.inf
        if not self._out.local:
            self._out.fence = self._check_deadline
        self._client: ChatClient | None = None
        self._outbox = Outbox()  # the segments of every `submit`, until streamed back
        self._events = metrics.EventTally()  # attempts, moves, retries for Prometheus

    def _check_deadline(self) -> None:
        """Called on a writer thread before each write: past the deadline, wait a while
        (`fence_grace`) for the driver's next renewal to arrive — it can run late on a
        busy machine — before refusing, and refuse at once when the lease is lost."""
        grace = fence_grace(self._settings.scale.lease_seconds)
        if not wait_for_deadline(lambda: self._deadline, time.time, grace):
            raise Fenced(self._out.url)

    async def set_deadline(self, deadline: float) -> None:
        """The driver renewed its lease (or lost it: -inf)."""
        self._deadline = deadline

    def _chat(self) -> ChatClient:
        # Created on first use, inside the actor's event loop that will drive it.
        if self._client is None:
            self._client = ChatClient.of(
                open_session(), self._settings.transport, self._admission, self._learn
            )
            self._client.on_retry = self._events.transport_retry
        return self._client

    async def _learn(self) -> list[str]:
        """Every endpoint's URL, from the gateway: the run's own replicas come and go."""
        return list(await self._gateway.urls.remote())

    async def abandon_endpoint(self, endpoint: int) -> int:
        """Endpoint `endpoint`'s replica is lost: this worker's requests on the wire to it
        are asked again elsewhere now (`ChatClient.abandon`). How many there were."""
        return self._chat().abandon(endpoint)

    async def pid(self) -> int:
        return os.getpid()

    async def pace(self) -> dict[str, Any]:
        """This process's CPU (`cpu.own_cpu`) and its requests on the wire, integrated,
        with their peak since the last ask: what the driver samples (ADR 0048)."""
        wire = self._admission.wire.take(time.monotonic())
        return {"cpu": tuple(own_cpu()), "wire_s": wire["wire_s"], "peak": wire["peak"]}

    async def halt(self) -> None:
        """The run stops: no request of this worker starts on a kept permit any more."""
        self._admission.halt()

    async def flush(self) -> None:
        """Report what the gateway has not heard yet (the run's totals read it next), and
        hand Prometheus the counts gathered since the last second."""
        self._events.flush()
        await self._admission.flush()

    async def alive(self) -> bool:
        """The watchdog's question: answered by this worker's event loop."""
        return True

    async def outcomes(self) -> AsyncIterator[Any]:
        """The stream this worker's outcomes go back on (`batches.OutcomeStream`): first
        the name of this incarnation, then the outcomes of every `submit`, those that
        finished together in one item. Opening it ends the stream before it (ADR 0043),
        before the name lets the driver send this stream's first segment."""
        async with contextlib.aclosing(self._outbox.stream()) as finished:
            yield self._admission.incarnation
            async for outcomes in finished:
                yield outcomes

    async def submit(self, incarnation: str, jobs: list[SegmentJob]) -> bool:
        """Start `jobs`; their outcomes go back on `outcomes`. False, starting none, when
        they were meant for the incarnation before this one: its stream fails them."""
        if incarnation != self._admission.incarnation:
            return False
        for job in jobs:
            self._outbox.hold(job, asyncio.ensure_future(self._run_or_fail(job)))
        return True

    async def _run_or_fail(self, job: SegmentJob) -> SegmentOutcome:
        try:
            return await self.run(job)
        except Fenced as fenced:
            # The lease is another run's now: stopped, not failed — the new holder
            # resumes it from whatever was checkpointed before the fence.
            return SegmentOutcome(
                job.index,
                job.source,
                "interrupted",
                notes=[f"{FAILURE_PREFIX}{job.source}: {fenced}"],
                fenced=True,
            )
        except Exception as error:
            return failed_outcome(job, error)

    async def register(self) -> None:
        """Once per incarnation: frees a dead predecessor's permits at the gateway. The
        driver calls it as soon as it sees this worker die, so a restarted one frees them
        even if no segment is sent to it again."""
        if self._registered:
            return
        self._registered = True
        # Object-store writes run on threads and wait on the network: asyncio's
        # default of cores + 4 threads would queue the segments' PUTs behind one
        # another. (Local writes go to the group commit's one thread, ADR 0018.)
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="store")
        )
        await self._admission.register()
        self._deadline = await self._ledger.deadline.remote()
        heap.settle()

    async def run(self, job: SegmentJob) -> SegmentOutcome:
        await self.register()
        pending: list[Any] = []

        def emit(records: list[Record]) -> None:
            if self._diagnostics is not None:
                pending.append(self._diagnostics.write.remote(records))

        recorder = Metered(
            self._events,
            StoreRecorder(
                self._out,
                job.source,
                journal=self._journal,
                trace_attempts=self._settings.records.trace_attempts,
                sidecar=emit if self._diagnostics is not None else None,
                sidecar_path=self._settings.records.diagnostics_out,
            ),
        )

        async def commit(proposal: Proposal) -> Verdict | None:
            return await self._commits.commit(job.index, proposal)

        live = (
            queued_at(self._chat().complete, job.index)
            if self._settings.transport.endpoints or self._settings.serving.engine
            else None
        )
        model = Model(
            live or _no_endpoint,
            self._admission.next_attempt_seq,
            commit,
            GatewayRung(self._gateway, self._admission),
        )
        mode = self._settings.records.replay_mode
        if mode != "off":
            book = await asyncio.to_thread(_read_book, self._settings.replay_dir(), job.source)
            replayer = Replayer(book, mode, live)
            model = dataclasses.replace(model, complete=replayer.complete, replay=replayer)
        try:
            inputs = await self._run_inputs()
            return await extract_segment(
                job, self._settings, self._run_id, model, recorder, inputs, self._documents()
            )
        finally:
            recorder.close()
            # The driver closes the sidecar after the last segment returns: every
            # record this segment sent must have landed by then.
            if pending:
                await asyncio.gather(*pending)

    def _documents(self) -> Documents:
        """This worker's converter child and the --out cache (ADR 0078), made at the first
        document: a run of text segments starts no child."""
        if self._converting is None:
            self._converting = Documents.of(self._settings, self._out)
        return self._converting

    async def _run_inputs(self) -> RunInputs:
        """The run's inputs, asked of the ledger once however many segments start together
        (a run's first hundred would each ask); asked again after a failed fetch."""
        if self._inputs is None:
            self._inputs = asyncio.ensure_future(self._fetch_inputs())
        try:
            return await asyncio.shield(self._inputs)
        except Exception:
            self._inputs = None
            raise

    async def _fetch_inputs(self) -> RunInputs:
        [inputs] = await self._ledger.inputs.remote()
        return await inputs  # type: ignore[no-any-return]


def queued_at(complete: Complete, priority: int) -> Complete:
    """`complete`, its requests queued for a permit at `priority` (the segment index)."""

    async def complete_at(request: CompletionRequest) -> Completion:
        return await complete(dataclasses.replace(request, priority=priority))

    return complete_at


async def _no_endpoint(request: CompletionRequest) -> Completion:
    return Completion("transport", error="no endpoint is configured (TAGURU_EXTRACT_URL)")


def _read_book(folder: str, source: str) -> ReplayBook:
    """The segment's recorded attempts log under --replay-from (empty when there is none)."""
    path = folder.rstrip("/") + "/" + attempts_name(source)
    try:
        with fsspec.open(path, "rb") as handle:
            return ReplayBook.read(handle.read().decode("utf-8", errors="replace"))
    except FileNotFoundError:
        return ReplayBook()


class Metered:
    """A recorder that also counts attempts and ladder moves for Prometheus (the
    client counts their transport retries, by cause)."""

    def __init__(self, events: metrics.EventTally, inner: StoreRecorder) -> None:
        self._events = events
        self._inner = inner
        self.sidecar_path = inner.sidecar_path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def log(self, record: Record) -> None:
        if record["type"] == "attempt":
            self._events.attempt(record["state"], record["stage"])
        elif record["type"] == "move":
            self._events.move(record["move"])
        await self._inner.log(record)


@ray.remote(num_cpus=0, max_concurrency=1)
class DiagnosticsWriter:
    """The single writer of the run's --diagnostics-out sidecar (ordered per caller)."""

    def __init__(self, path: str, run_id: str, storage_env: dict[str, str]) -> None:
        os.environ.update(storage_env)  # the sidecar may live on the same object store
        self._sidecar = Sidecar(path)
        self._sidecar.write([RunRecord(run_id=run_id).record()])

    def cpu(self) -> CpuReading:
        return own_cpu()

    def write(self, records: list[Record]) -> None:
        self._sidecar.write(records)

    def close(self) -> None:
        self._sidecar.close()
