"""One `extract` run on Ray: the actors, the dispatch loop, stopping, and the summary.

The driver process reads and hashes every segment in name order, skips the
unchanged ones, and dispatches the rest to segment workers through the
deterministic window. A worker that dies (a preempted node) is restarted by
Ray and its segments are resubmitted; their checkpoints make the redo cheap.
The first SIGINT or SIGTERM stops dispatching and stops the gateway granting
permits — completions already on the wire finish and are checkpointed — and
the run exits 130; a second signal exits 130 at once.

Its length (over 400 lines) is the driver's: the scan, the window, dispatch,
worker deaths, the stop and the summary share one event loop and its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Container
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from taguru_ray import heap
from taguru_ray.contract.names import MANIFEST, MANIFEST_JOURNAL, output_name
from taguru_ray.contract.records.sidecar import GatewayRecord
from taguru_ray.engine.ahead import READERS, ScanAhead
from taguru_ray.engine.batches import WorkerBatches, failed_outcome, pick_worker, worker_count
from taguru_ray.engine.digest_helper import DigestHelper, worth_a_helper
from taguru_ray.engine.progress import Progress, mode_for
from taguru_ray.engine.run_metrics import SegmentMeter
from taguru_ray.engine.scan import (
    Console,
    Scanned,
    Tally,
    existing_contribution,
    existing_gaps,
    new_run_id,
    read_scanned,
    scan,
    skip_line,
)
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.spend import budget_of, money
from taguru_ray.engine.watchdog import Watchdog
from taguru_ray.engine.window import OrderedReport, SegmentWindow
from taguru_ray.engine.written_ids import WrittenIds
from taguru_ray.errors import EXIT_FAILED, EXIT_INTERRUPTED, StartupError, exit_code
from taguru_ray.llm import preflight
from taguru_ray.llm.client import ChatClient, open_session
from taguru_ray.llm.endpoint_check import Blame
from taguru_ray.llm.probe import probe
from taguru_ray.pipeline.ladder import starting_rung
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pipeline.vocabulary import contribution
from taguru_ray.pricing.tariff import Tariff
from taguru_ray.settings import Settings
from taguru_ray.store.inputs import read_source
from taguru_ray.store.lease import LeaseLock
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import Fenced, OutDir

SETTLE_BATCH = 64  # settled segments per claims-ledger call
SETTLE_DELAY_S = 0.02  # the longest a failed segment's settling waits to be sent
RESUBMITS = 3  # a segment whose worker dies this often fails, named
RECLAIM_S = 20.0  # a dead worker's successor registers by then, or its permits are freed
STOPPED_TAIL = " — stopped early, chunk checkpoints saved; rerun to resume"
WORKER_DEATHS = (ray.exceptions.ActorDiedError, ray.exceptions.ActorUnavailableError)


class ExtractRun:
    def __init__(
        self,
        settings: Settings,
        console: Console,
        out: OutDir,
        sources: list[str],
        inputs: RunInputs | None = None,
        lock: object | None = None,
        read: Callable[[str], bytes] = read_source,
        tariff: Tariff | None = None,
    ) -> None:
        self.settings = settings
        self.tariff = tariff or Tariff()  # how the run is charged (engine/spend.py)
        self.read = read  # the segments' reader: files, or a run's in-memory segments
        self.workers: list[Any] = []
        self.batches: list[WorkerBatches] = []
        if isinstance(lock, LeaseLock):
            # Every write of the run is fenced by the lease (store/lease.py): the driver's
            # through its OutDir, the workers' through the deadline pushed at each renewal.
            out.fence = lock.check
            lock.on_renewed = self._push_deadline
        self.lock = lock
        self.inputs = inputs or RunInputs()
        self.out = out
        self.sources = sources
        self.run_id = new_run_id()
        self.tally = Tally(total=len(sources))
        # What the Python API hands back: a row per segment that said something, and the
        # indexes skipped as unchanged — a bit each, so a 1M-segment rerun stays small.
        self.segments: dict[int, SegmentRow] = {}
        self.unchanged = bytearray(len(sources))
        self.stats: dict[str, Any] = {}
        self.window = SegmentWindow(settings.window, self._existing_contribution)
        self.progress = Progress(
            mode_for(settings.records.progress, sys.stderr),
            len(sources),
            every=settings.records.progress_seconds,
        )
        self.console = Console(self._above(console.out), self._above(console.err))
        self.report = OrderedReport(self.console.out, self.console.err)
        self.manifest = Manifest(out, {})  # replaced by the loaded one before any skip
        self._reclaiming: set[int] = set()  # workers whose permits are being reclaimed
        self._background: set[asyncio.Future[None]] = set()
        self.stopping = False
        self.fatal: str | None = None  # fail-fast's line: the run stopped on it, exit 1
        self.store_failed = False  # the end-of-run writes failed: exit 1 after the summary
        self.reached = 0
        self.started = time.monotonic()
        self._limit_changes_seen = 0
        self._unsent: list[tuple[int, Contribution]] = []  # failed segments, for the ledger
        self._used: set[int] = set()  # workers that were handed a segment
        self._skippable = not settings.run.force and not settings.records.bypasses_store
        self._coverage = settings.records.coverage
        self._seed: Contribution | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._helper: DigestHelper | None = None
        self._handover = threading.Event()
        self._existing: Container[str] = ()
        self._settle_timer: asyncio.TimerHandle | None = None
        self._watching: asyncio.Task[None] | None = None  # the watchdog, once workers start

    def _existing_contribution(self, index: int) -> Contribution:
        """What skipped segment `index` offers: its source file's labels and names."""
        return existing_contribution(self.out, output_name(self.sources[index]))

    def _above(self, emit: Any) -> Any:
        def emit_above(line: str) -> None:
            self.progress.clear()
            emit(line)

        return emit_above

    async def run(self) -> int:
        # Imported here: the actor classes register with Ray only when a run needs them.
        from taguru_ray.engine.ledger import CONTEXT_INDEX, Ledger
        from taguru_ray.engine.worker import DiagnosticsWriter, run_actor_name
        from taguru_ray.gateway.actor import Gateway

        settings = self.settings
        self.start_reading()  # a no-op when the driver started it before Ray
        limit = (
            settings.transport.max_inflight
            if isinstance(settings.transport.max_inflight, int)
            else None
        )
        # The run's state (permits, rung, claims, the sidecar) lives beside the driver —
        # on a cluster, the head node — never on a spot worker that may vanish.
        node = ray.get_runtime_context().get_node_id()

        def here(role: str) -> dict[str, Any]:
            # Named, so a worker (a restarted one too) finds it without a handle.
            return {
                "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False),
                "name": run_actor_name(self.run_id, role),
            }

        self._trap_signals()
        rung = await self._before_the_first_request()
        # One copy of the run's inputs in the object store however many workers.
        inputs_ref = self.inputs_ref = ray.put(self.inputs)  # the driver owns the copy
        self.gateway = Gateway.options(**here("gateway")).remote(
            list(settings.transport.endpoints),
            limit,
            settings.transport.rpm,
            settings.transport.tpm,
            rung,
            run_id=self.run_id,
            model=settings.transport.model,
            tariff=self.tariff,
            budget=budget_of(settings),
            blame=Blame.of(settings.transport),
            ceiling=settings.inflight_ceiling,
        )
        self.meter = SegmentMeter(self.run_id, settings.transport.model, self.tally.total)
        self.ledger = Ledger.options(**here("ledger")).remote(
            settings.scale.commit_order == "name", [inputs_ref]
        )
        if isinstance(self.lock, LeaseLock):
            self.ledger.set_deadline.remote(self.lock.write_deadline)
        if self._seed is not None:
            await self.ledger.settle.remote([(CONTEXT_INDEX, self._seed)])
        diagnostics = (
            DiagnosticsWriter.options(**here("diagnostics")).remote(
                settings.records.diagnostics_out, self.run_id, dict(settings.storage_env)
            )
            if settings.records.diagnostics_out
            else None
        )
        try:
            # The early settling hands over at its next segment; the loop goes on from there.
            self._handover.set()
            if await asyncio.wrap_future(self._early):
                self._start_workers()  # it stopped at a segment that needs one
            heap.settle()  # the manifest is in: out of every later collection's walk
            watcher = asyncio.create_task(self._watch())
            tripwire = asyncio.create_task(self._fail_fast())
            try:
                await self._dispatch()
            finally:
                watcher.cancel()
                if self._watching is not None:
                    self._watching.cancel()
                tripwire.cancel()
                self.progress.clear()
            try:
                await asyncio.to_thread(self.manifest.compact)
            except Fenced as fenced:  # the lease is another run's: its manifest is not ours
                self.console.err(f"{FAILURE_PREFIX}{fenced}")
            except OSError as error:  # a full disk, a read-only --out: the summary still comes
                self.store_failed = True
                self.console.err(
                    f"{FAILURE_PREFIX}could not compact the manifest ({error.strerror or error}) — "
                    "its journal keeps every entry, and a rerun once --out is writable again "
                    "compacts it and skips what was written"
                )
            stats = await self._gateway_stats()
            self.meter.update(self.tally)
            if diagnostics is not None:
                try:
                    await diagnostics.write.remote([gateway_record(self.run_id, stats)])
                    await diagnostics.close.remote()
                except ray.exceptions.RayError as error:
                    self.store_failed = True
                    sidecar = self.settings.records.diagnostics_out
                    self.console.err(f"{FAILURE_PREFIX}could not finish {sidecar} ({error})")
            return self._summary(stats)
        finally:
            # A run leaves no actor behind: the CLI's process would end them with its job,
            # but a run from Python (a notebook, a Ray task) lives on in the caller's Ray.
            self._end_actors(diagnostics)

    def _end_actors(self, diagnostics: Any) -> None:
        for batches in self.batches:
            batches.close()
        actors = [*self.workers, self.gateway, self.ledger, diagnostics]
        for actor in actors:
            if actor is not None:
                with contextlib.suppress(Exception):  # already gone is as good as ended
                    ray.kill(actor, no_restart=True)

    def _start_workers(self) -> None:
        """The segment workers (`worker_count` of them) and their watchdog, once the first
        segment needs one: a rerun that skips everything starts none."""
        if self._watching is not None:
            return
        from taguru_ray.engine.worker import SegmentWorker

        settings = self.settings
        self.workers = [
            SegmentWorker.options(**self._worker_placement()).remote(i, settings, self.run_id)
            for i in range(worker_count(settings.scale.workers, len(self.sources)))
        ]
        self.batches = [WorkerBatches(worker) for worker in self.workers]
        self.watchdog = Watchdog(self.workers, settings.scale.worker_hang_secs, self.console.err)
        self._watching = asyncio.create_task(self.watchdog.run())

    def _worker_placement(self) -> dict[str, Any]:
        """Spread the segment workers; `--worker-resource` keeps them on the nodes
        that declare it (the spot workers of `cluster/`)."""
        placement: dict[str, Any] = {"scheduling_strategy": "SPREAD"}
        if self.settings.scale.worker_resource:
            placement["resources"] = {self.settings.scale.worker_resource: 0.01}
        return placement

    def start_reading(self) -> None:
        """Start reading on threads: the manifest (a million entries take seconds to
        parse), the --out listing, the segments a batch ahead, and the early settling of
        the leading segments that need no worker. Called before Ray starts."""
        if self._readers is not None:
            return
        if self.inputs.vocabulary is not None:
            # The target context is one more finished segment, below every real one:
            # its labels seed the reuse list, its names the claimed-names check.
            self._seed = contribution(self.inputs.vocabulary)
            self.window.seed(self._seed)
        self._helper = DigestHelper.start() if self._wants_helper() else None
        readers = self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="taguru-read")
        self._manifest_loading = readers.submit(Manifest.load, self.out)
        self._listing = readers.submit(self.out.presence)
        seen = WrittenIds.of(self.sources, self.settings.source.source_id, self.inputs)
        several = len(self.sources) > 1
        helper = self._helper

        def scan_one(index: int, digest: str | None) -> Scanned:
            source = self.sources[index]
            scanned = scan(
                self.settings, index, source, several, seen, self.inputs, self.read, digest
            )
            if scanned.unread and not self._unchanged_by(scanned, self._inputs_now()):
                # The helper hashed it, and a worker needs its bytes: read here, on the
                # batch's thread, as without a helper.
                scanned = read_scanned(self.settings, scanned, self.inputs, self.read)
            return scanned

        self.scanner = ScanAhead(
            len(self.sources),
            scan_one,
            readers,
            (lambda batch: helper.digests([self.sources[i] for i in batch])) if helper else None,
        )
        self._early = readers.submit(self._settle_early)

    def _wants_helper(self) -> bool:
        """Whether a child process should hash the segments (`digest_helper.py`)."""
        sources = self.sources
        return worth_a_helper(
            len(sources),
            skippable=self._skippable,
            files=self.read is read_source and "://" not in (sources[0] if sources else ""),
            redacting=bool(self.inputs.redaction),
            coverage=self._coverage,
            manifest=self.out.local and any(map(self.out.exists, (MANIFEST, MANIFEST_JOURNAL))),
        )

    def stop_reading(self) -> None:
        """End the early settling and wait for the reads under way (each ends within a
        batch): called once the run is over, or when Ray failed to start."""
        self._handover.set()
        if self._readers is not None:
            wait([self._early])  # it stops at its next segment
            self._readers.shutdown(wait=True, cancel_futures=True)
        if self._helper is not None:
            self._helper.close()

    def _settle_early(self) -> bool:
        """While Ray starts: settle segments in order for as long as none needs a worker.
        True when it stopped at one that does."""
        self._take_inputs()
        while not (self.stopping or self._handover.is_set()):
            scanned = self.scanner.next_now()
            if scanned is None:
                return False
            if scanned.inputs is None:
                self._refused(scanned)
            elif self._unchanged(scanned):
                self._skip(scanned, self._gaps(scanned))
            else:
                self.scanner.put_back(scanned)
                return True
        return False

    def _take_inputs(self) -> None:
        """The loaded manifest (and the one note when it could not be used) and listing."""
        self.manifest, note = self._manifest_loading.result()
        if note:
            self.console.err(f"{FAILURE_PREFIX}{note}")
        self._existing = self._listing.result()

    def _inputs_now(self) -> tuple[Manifest, Container[str]]:
        """The manifest and the --out listing, waited for: a batch thread may ask before
        the early settling took them (`_take_inputs`)."""
        manifest, _ = self._manifest_loading.result()
        return manifest, self._listing.result()

    def _unchanged(self, scanned: Scanned) -> bool:
        # An unread segment was judged unchanged on its batch's thread (`start_reading`).
        return scanned.unread or self._unchanged_by(scanned, (self.manifest, self._existing))

    def _unchanged_by(self, scanned: Scanned, held: tuple[Manifest, Container[str]]) -> bool:
        manifest, existing = held
        return (
            self._skippable
            and scanned.inputs is not None
            and manifest.unchanged(scanned.source, scanned.inputs, existing)
        )

    def _gaps(self, scanned: Scanned) -> list[str]:
        """--coverage over a skipped segment, judged from the file it already has."""
        if not self._coverage or scanned.inputs is None or scanned.data is None:
            return []
        return existing_gaps(
            self.out,
            scanned.inputs["output"],
            scanned.source,
            scanned.data,
            self.inputs.redaction,
            self.inputs.redact_key,
        )

    def _skip(self, scanned: Scanned, gaps: list[str]) -> None:
        self.unchanged[scanned.index] = 1
        self.reached = scanned.index + 1
        self.tally.unchanged += 1
        lines = [("out", skip_line(scanned.source))]
        lines.extend(("err", line) for line in gaps)
        self.report.add(scanned.index, lines)
        self.window.skipped(scanned.index)

    def _refused(self, scanned: Scanned) -> None:
        self.segments[scanned.index] = SegmentRow(
            scanned.source, "failed", None, (scanned.refusal or "unreadable",)
        )
        self.reached = scanned.index + 1
        self.tally.failed += 1
        why = scanned.refusal or "unreadable"
        self.report.add(scanned.index, [("err", f"{FAILURE_PREFIX}{scanned.source}: {why}")])
        self.window.refused(scanned.index)

    async def _dispatch(self) -> None:
        tasks: list[asyncio.Task[None]] = []
        while (scanned := await self.scanner.next()) is not None:
            if self.stopping:
                break
            if self._unchanged(scanned):
                gaps = await asyncio.to_thread(self._gaps, scanned) if self._coverage else []
                self._skip(scanned, gaps)
                continue
            if scanned.inputs is None or scanned.data is None:
                self._refused(scanned)
                continue
            index = scanned.index
            self.reached = index + 1
            self.window.dispatched(index)
            await self.window.wait_eligible(index)
            if self.stopping:
                self.reached = index
                break
            await self._share_below(index)
            vocabulary = self.window.vocabulary_for(index)
            job = SegmentJob(
                index,
                scanned.source,
                scanned.data,
                scanned.written_id,
                vocabulary,
                self.manifest.previous_output(scanned.source),
            )
            tasks.append(asyncio.create_task(self._extract(job)))
        if self.stopping:  # nothing from the first segment not dispatched on may commit
            self.ledger.abandon.remote(self.reached)
        self._send_settled([], now=True)
        await asyncio.gather(*tasks)

    async def _share_below(self, index: int) -> None:
        """Settle at the claims ledger every segment below `index` no worker commits there:
        a skipped one offers its existing file's names (read on a thread, kept for the
        label fold), a refused one nothing. Segment `index` then commits itself."""
        window = self.window
        while pending := window.unshared(index, SETTLE_BATCH):
            settled = (
                await asyncio.to_thread(self._offers, pending)
                if not all(refused for _, refused in pending)
                else [(k, Contribution()) for k, _ in pending]
            )
            window.resolved(settled)
            self.ledger.settle.remote(settled)
            window.fold_upto(min(window.shared, window.vocabulary_upto(index)))
        window.commits(index)

    def _offers(self, pending: list[tuple[int, bool]]) -> list[tuple[int, Contribution]]:
        return [
            (index, Contribution() if refused else self._existing_contribution(index))
            for index, refused in pending
        ]

    def _send_settled(self, settled: list[tuple[int, Contribution]], *, now: bool = False) -> None:
        """Settle failed segments at the claims ledger in batches, without waiting: the
        turns behind one wait for it, and a batch leaves within SETTLE_DELAY_S."""
        self._unsent.extend(settled)
        if not self._unsent:
            return
        if now or len(self._unsent) >= SETTLE_BATCH:
            self.ledger.settle.remote(self._unsent)
            self._unsent = []
            if self._settle_timer is not None:
                self._settle_timer.cancel()
                self._settle_timer = None
        elif self._settle_timer is None:
            loop = asyncio.get_running_loop()
            self._settle_timer = loop.call_later(SETTLE_DELAY_S, self._settle_due)

    def _settle_due(self) -> None:
        self._settle_timer = None
        self._send_settled([], now=True)

    async def _before_the_first_request(self) -> str | None:
        """The run's starting rung, once the segments that need no request are settled.

        Only when a segment needs the model do the preflight and `auto`'s probe go out
        (ADR 0037): a rerun that skips every segment sends nothing, and a run refused by
        the preflight has started no actor and written nothing but what the driver
        takes back (`store.footprint`).
        """
        needs_a_request = await asyncio.wrap_future(self._early)
        if not needs_a_request or self.stopping:
            ladder = self.settings.ladder  # `auto` unprobed: a rung no request will ask for
            return starting_rung(ladder.structured_output, ladder.max_output_tokens)
        await self._preflight()
        return await self._resolve_rung()

    async def _preflight(self) -> None:
        """One GET …/models per endpoint; a verdict is one line and exit 1 (replay answers
        from its log first, and may never need the endpoint: none there)."""
        transport = self.settings.transport
        if not transport.endpoints or self.settings.records.replay_mode != "off":
            return
        async with open_session() as http:
            line = await preflight.check(http, transport)
        if line is not None:
            raise StartupError(line)

    async def _fail_fast(self) -> None:
        """Wait for the gateway's word that an endpoint keeps refusing the run's requests
        the same way (`gateway/fail_fast.py`): stop as a Ctrl+C does, and exit 1 with
        that line, said once, last — below the lines of the segments that failed on it."""
        try:
            line, code = await self.gateway.tripped.remote()
        except ray.exceptions.RayError:
            return
        if code == EXIT_INTERRUPTED:  # the budget: a stop to resume, said as it happens
            self.console.err(
                f"{FAILURE_PREFIX}stopping: {line} — completions in flight finish and are "
                "checkpointed; rerun with a higher budget to resume, nothing is asked twice"
            )
        else:
            self.fatal = line
        self.stopping = True
        self._halt()

    async def _resolve_rung(self) -> str | None:
        """The run's starting rung: none off the ladder, the pinned one, or `auto`'s probe."""
        settings = self.settings
        if settings.ladder.structured_output == "auto":
            async with open_session() as http:
                client = ChatClient.of(http, settings.transport)
                rung, why = await probe(client.complete)
            self.console.err(f"{FAILURE_PREFIX}structured output: auto resolved to {rung} ({why})")
            return rung
        return starting_rung(settings.ladder.structured_output, settings.ladder.max_output_tokens)

    async def _extract(self, job: SegmentJob) -> None:
        outcome = await self._run_on_a_worker(job)
        lines = [("err", note) for note in outcome.notes]
        if outcome.status == "written" and outcome.inputs is not None:
            # The worker made its journal entry durable and dropped its checkpoint.
            self.manifest.remember(job.source, outcome.inputs)
        if outcome.status == "written":
            self.tally.written += 1
            lines.append(("out", outcome.report or ""))
        elif outcome.status == "interrupted":
            self.tally.interrupted += 1
            self.ledger.abandon.remote(job.index)  # no later segment may commit now
            # Fenced (a lapsed lease) while the run goes on: nothing later can be written —
            # stop. A stop's own interruptions (a signal, a budget) are said by the stop.
            if outcome.fenced and not self.stopping:
                self.stopping = True
                self.console.err(
                    f"{FAILURE_PREFIX}stopping: {job.source} was interrupted, and no later "
                    "segment can be written in this run — rerun to resume"
                )
                self._halt()
        else:
            self.tally.failed += 1
            self._send_settled([(job.index, Contribution())])  # a failed one settles nothing
        self.report.add(job.index, lines)
        self.segments[job.index] = SegmentRow(
            job.source, outcome.status, outcome.report, tuple(outcome.notes), outcome.completions
        )
        self.window.finish(job.index, outcome.contribution)

    async def _run_on_a_worker(self, job: SegmentJob) -> SegmentOutcome:
        """Run a segment; a worker that dies under it gets the segment resubmitted."""
        self._start_workers()
        deaths: list[str] = []
        for attempt in range(RESUBMITS + 1):
            worker = pick_worker(self.watchdog.busy, job.index, attempt)
            try:
                outcome = await self._on(worker, job)
            except WORKER_DEATHS as error:
                self._reclaim(worker)
                deaths.append(type(error).__name__)
                self.console.err(
                    f"{FAILURE_PREFIX}{job.source}: the worker running it died "
                    f"({type(error).__name__}); resubmitting — its checkpoint keeps every "
                    "finished chunk"
                )
                await asyncio.sleep(1.0)  # let Ray restart the actor
                continue
            except ray.exceptions.RayError as error:
                return failed_outcome(job, error)
            if deaths:
                outcome.notes.insert(
                    0, f"{FAILURE_PREFIX}{job.source}: finished after {len(deaths)} worker death(s)"
                )
            return outcome
        return SegmentOutcome(
            job.index,
            job.source,
            "failed",
            notes=[
                f"{FAILURE_PREFIX}{job.source}: its worker died {len(deaths)} times "
                f"({', '.join(deaths)}) — rerun to resume from its checkpoint"
            ],
        )

    def _reclaim(self, worker: int) -> None:
        """A worker died: its permits must come back, or the survivors wait for them for
        ever. Its restarted incarnation frees them by registering (asked at once, not
        left to its next segment, which may never come); one that does not come up
        within RECLAIM_S — its node gone and nowhere to restart — is forgotten by the
        gateway instead."""
        if worker in self._reclaiming:
            return
        self._reclaiming.add(worker)

        async def reclaim() -> None:
            try:
                dead = await self.gateway.incarnation.remote(worker)  # the one that died
                deadline = time.monotonic() + RECLAIM_S
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        call = self.workers[worker].register.remote().future()
                        await asyncio.wait_for(asyncio.wrap_future(call), left)
                        return  # its successor is up, and freed what the dead one held
                    except TimeoutError:
                        break
                    except ray.exceptions.RayError:  # still restarting: ask again
                        await asyncio.sleep(min(1.0, max(left, 0.0)))
                await self.gateway.forget.remote(worker, dead)
            except ray.exceptions.RayError:
                pass  # the gateway is gone with the run
            finally:
                self._reclaiming.discard(worker)

        task = asyncio.ensure_future(reclaim())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _on(self, worker: int, job: SegmentJob) -> SegmentOutcome:
        self.watchdog.busy[worker] += 1  # watched while it holds the segment
        self._used.add(worker)  # its reports are flushed before the totals
        try:
            return await self.batches[worker].run(job)
        finally:
            self.watchdog.busy[worker] -= 1

    def _push_deadline(self, deadline: float) -> None:
        """The lease was renewed (or lost: -inf): the workers' new write deadline. Called
        on the lease's thread; actor calls are thread-safe and not waited for."""
        ledger = getattr(self, "ledger", None)
        if ledger is not None:
            ledger.set_deadline.remote(deadline)
        for worker in list(self.workers):
            worker.set_deadline.remote(deadline)

    def _trap_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # a run from a thread (the Python API in a notebook): the caller's signals
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, self._on_signal)

    def _on_signal(self) -> None:
        if self.stopping:
            self.progress.clear()
            print(f"{FAILURE_PREFIX}stopping at once (second signal)", file=sys.stderr, flush=True)
            os._exit(EXIT_INTERRUPTED)
        self.stopping = True
        self.console.err(
            f"{FAILURE_PREFIX}stopping: completions in flight finish and are checkpointed, "
            "nothing new starts (a second Ctrl+C stops at once)"
        )
        self._halt()

    def _halt(self) -> None:
        """Nothing new starts: the gateway refuses permits, the workers their kept ones."""
        gateway = getattr(self, "gateway", None)  # a signal may come before it exists
        if gateway is not None:
            gateway.stop.remote()
        for worker in self.workers:  # their kept permits, which the gateway does not see
            worker.halt.remote()

    async def _watch(self) -> None:
        """The progress display, and a line each time the adaptive limit moves."""
        while True:
            await asyncio.sleep(0.5)
            self.meter.update(self.tally)
            if not self.progress.due() and self.settings.transport.max_inflight != "auto":
                continue
            try:
                stats = await self.gateway.stats.remote()
            except ray.exceptions.RayError:
                continue
            changes = stats.get("limit_changes", [])
            for change in changes[self._limit_changes_seen :]:
                rate = change.get("completions_per_s")
                at = f"{rate:g} completions/s, " if rate is not None else ""
                self.console.err(
                    f"{FAILURE_PREFIX}in-flight limit {change['from']} → {change['to']} "
                    f"({at}median latency {change['latency_ms']} ms, baseline "
                    f"{change['baseline_ms']} ms)"
                )
            self._limit_changes_seen = len(changes)
            if self.progress.due():
                t = self.tally
                done = t.written + t.failed + t.unchanged + t.interrupted
                self.progress.show(
                    self.progress.status(done, t.written, t.failed, t.unchanged, stats)
                )

    async def _gateway_stats(self) -> dict[str, Any]:
        try:
            # Outcomes on kept permits reach the gateway in batches: the last ones first.
            flushes = (self.workers[index].flush.remote() for index in self._used)
            await asyncio.gather(*flushes, return_exceptions=True)  # a dead one has no say
            stats: dict[str, Any] = await self.gateway.stats.remote()
            await self.gateway.finish.remote()  # in-flight back to 0
        except ray.exceptions.RayError:
            stats = {}
        return stats

    def _summary(self, stats: dict[str, Any]) -> int:
        self.stats = stats
        tally = self.tally
        tail = STOPPED_TAIL if self.stopping else ""
        self.console.out(  # stdout, as seed 000's: scripts parse it
            f"extract: {tally.written} written, {tally.unchanged} unchanged, {tally.failed} failed "
            f"of {tally.total} segment(s){tail}"
        )
        elapsed = time.monotonic() - self.started
        requests = sum(stats.get("outcomes", {}).values())
        cost = stats.get("cost_usd")
        priced = (
            f"cost {money(cost)} ({self.tariff.basis})"
            if isinstance(cost, (int, float))
            else f"cost unknown: {self.tariff.basis} (--prices FILE or --price-per-hour)"
        )
        self.console.err(
            f"{FAILURE_PREFIX}{stats.get('attempts', 0)} completion(s), {requests} request(s), "
            f"{stats.get('input_tokens', 0)} input + {stats.get('output_tokens', 0)} output "
            f"tokens in {elapsed:.1f} s · {priced}"
        )
        if self.stopping:
            self.console.err(
                f"{FAILURE_PREFIX}stopped after reaching {self.reached} of {tally.total} segment(s)"
            )
        if self.fatal is not None:
            self.console.err(f"{FAILURE_PREFIX}{self.fatal}")
            return EXIT_FAILED  # stopped by fail-fast, whatever the tally
        if tally.unsettled and not self.stopping:  # never exit 0 short of a segment
            self.console.err(
                f"{FAILURE_PREFIX}{tally.unsettled} of {tally.total} segment(s) were neither "
                "written, unchanged nor failed, yet the run was not stopped — rerun to resume"
            )
            return EXIT_FAILED
        return exit_code(tally.failed + int(self.store_failed), self.stopping)

    def row(self, index: int) -> SegmentRow | None:
        """How segment `index` ended in this run, or None when the run never reached it."""
        row = self.segments.get(index)
        if row is None and self.unchanged[index]:
            return SegmentRow(self.sources[index], "unchanged")
        return row


@dataclass(frozen=True)
class SegmentRow:
    """How one segment ended in this run, as the Python API reports it."""

    source: str
    status: str  # written | unchanged | failed | interrupted
    report: str | None = None  # the stdout line of a written segment
    notes: tuple[str, ...] = ()  # its stderr lines, the failure line last
    completions: int = 0


def gateway_record(run_id: str, stats: dict[str, Any]) -> dict[str, Any]:
    """The sidecar's last record: the gateway's counters as the run ends (none when the
    gateway could not be asked — a record of zeros says so)."""
    outcomes = {str(name): int(count) for name, count in stats.get("outcomes", {}).items()}
    limit = stats.get("limit")
    return GatewayRecord(
        run_id=run_id,
        completions=int(stats.get("attempts", 0)),
        requests=sum(outcomes.values()),
        outcomes=dict(sorted(outcomes.items())),
        inflight_limit=int(limit) if isinstance(limit, int) else None,
        inflight_adaptive=bool(stats.get("adaptive", False)),
        max_in_flight=int(stats.get("max_in_flight", 0)),
        input_tokens=int(stats.get("input_tokens", 0)),
        output_tokens=int(stats.get("output_tokens", 0)),
    ).record()
