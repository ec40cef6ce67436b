"""One `extract` run on Ray: its parts, composed by one event loop.

Each concern of the driver is a part with its own state and module:

- `reading.py` — the scan-ahead, the manifest and --out listing, the digest
  helper, and the early settling, all started before Ray;
- `skipping.py` — which segments are skipped unchanged or refused, and how;
- `same_bytes.py` — the warning for one file extracted under two source ids;
- `pruning.py` — the manifest's segments the inputs no longer hold: named once
  the manifest is in, retired at the commit under --prune (ADR 0083);
- `dispatch.py` — the dispatch loop, the window's waits, the claims ledger's
  settled segments, and each segment's end as it comes back;
- `workers.py` — the segment workers: start, placement, worker deaths and
  resubmits, the reclaim of a dead worker's permits, the watchdog;
- `head_actors.py` — the gateway, the claims ledger and the diagnostics writer
  beside the driver;
- `replicas/fleet.py` — with `--engine`, the model's own replicas: started before
  the first request, the gateway's endpoints, replaced when lost, stopped at the end;
- `stopping.py` — signals, fail-fast, the budget, a lost lease;
- `monitor.py` — the progress display and the in-flight limit's moves;
- `pacing.py` — a sample of the run each second: what it kept in flight and what
  bounded it (ADR 0048), for the progress line, the summary and the sidecar;
- `summary.py` — the ordered report, a row per segment, the closing lines and
  the exit code.

`ExtractRun` holds the parts and the few things they share (the settings, the
console, --out, the run id, the tally, the window), and `run` sets them going in
order: reading, then — still before Ray, from the driver (`check_endpoints`) —
the preflight, only when a segment needs the model (with `--engine`, the
replicas instead, once Ray is up); the head actors, the
hand-over from the early settling to the dispatch loop, the manifest's
compaction (and under --prune the retirement with it), the gateway's last
counters, the sidecar, the summary — and every actor (and replica) ended, however
the run ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ray

from taguru_ray import heap
from taguru_ray.contract.names import output_name, written_id
from taguru_ray.engine.batch_segments import BatchSegments
from taguru_ray.engine.dispatch import Dispatch
from taguru_ray.engine.head_actors import HeadActors
from taguru_ray.engine.monitor import Monitor
from taguru_ray.engine.pacing import WORKER, Judged, Pacing, caps_of
from taguru_ray.engine.paid_ledger import BATCHES, held_by_batches
from taguru_ray.engine.pruning import Pruning
from taguru_ray.engine.reading import Reading
from taguru_ray.engine.replicas.fleet import Fleet
from taguru_ray.engine.same_bytes import SameBytes, manifest_holders
from taguru_ray.engine.scan import Console, Tally, existing_contribution, new_run_id
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.skipping import Skipping
from taguru_ray.engine.stopping import Stopping
from taguru_ray.engine.summary import SegmentRow, Summary, gateway_record
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.engine.workers import Workers
from taguru_ray.errors import StartupError
from taguru_ray.llm import preflight
from taguru_ray.llm.client import ChatClient, open_session
from taguru_ray.llm.probe import probe
from taguru_ray.pipeline.ladder import starting_rung
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pricing.tariff import Tariff
from taguru_ray.settings import Settings
from taguru_ray.store.inputs import read_source
from taguru_ray.store.lease import LeaseLock
from taguru_ray.store.orphans import Coverage
from taguru_ray.store.outdir import Fenced, OutDir

__all__ = ["ExtractRun", "SegmentRow", "gateway_record"]


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
        corpus: Coverage | None = None,
    ) -> None:
        inputs = inputs or RunInputs()
        tariff = tariff or Tariff()  # how the run is charged (engine/spend.py)
        self.settings = settings
        self.out = out
        self.sources = sources
        self.run_id = new_run_id()
        self.tally = Tally(total=len(sources))
        self.window = SegmentWindow(settings.window, self._existing_contribution)
        self.monitor = Monitor(settings, self.tally, console)
        self.console = self.monitor.console  # every line lifts the progress bar first
        self.actors = HeadActors(settings, self.run_id, tariff, lock)
        self.workers = (
            BatchSegments(settings, self.run_id, out, self.actors, inputs, self.console.err)
            if settings.transport.batch_api  # the programs run here, answered in rounds
            else Workers(settings, self.run_id, len(sources), self.console.err, self.actors)
        )
        self.stop = Stopping(self.console, self.monitor.clear, self.actors, self.workers)
        # The model's own replicas (--engine): a part like the gateway, not flags in the loop.
        self.fleet = (
            Fleet(settings, self.run_id, self.console.err) if settings.serving.engine else None
        )
        self._replicas: list[str] | None = None  # their URLs, once up
        self.summary = Summary(self.console, self.tally, sources, tariff, self.stop, out.url)
        self.skipping = Skipping(settings, out, inputs, self.window, self.summary, self.tally)
        self.reading = Reading(
            settings,
            out,
            sources,
            inputs,
            read,
            self.window,
            self.skipping,
            self.console.err,
            lambda: self.stop.requested,
        )
        self.pruning = Pruning(settings, out, self.run_id, corpus, self.console.err)
        self.same_bytes = SameBytes(
            self._holder,
            manifest_holders(lambda: self.skipping.manifest),
            self.console.err,
            renamed=self.pruning.orphan,
            prune=settings.run.prune,
        )
        self.pacing = Pacing(
            caps_of(settings),
            lambda: self.dispatch.window_waited(),
            lambda: self.dispatch.all_handed_out,
        )
        self.dispatch = Dispatch(
            self.reading,
            self.skipping,
            self.window,
            self.tally,
            self.summary,
            self.actors,
            self.workers,
            self.stop,
            self._existing_contribution,
            self.same_bytes,
        )
        if isinstance(lock, LeaseLock):
            # Every write of the run is fenced by the lease (store/lease.py): the driver's
            # through its OutDir, the workers' through the deadline pushed at each renewal.
            # Wired last: a renewal may come at once, on the lease's thread.
            out.fence = lock.check
            lock.on_renewed = self._push_deadline
        self._lease = lock if isinstance(lock, LeaseLock) else None
        self._checked = False  # the preflight went out (or was not needed) before Ray

    def check_endpoints(self) -> None:
        """The preflight, before Ray starts (ADR 0054): once the early settling finds a
        segment that needs the model, one GET …/models per endpoint — so a wrong key, URL
        or model is one line in about a second, and no Ray process is ever started for a
        run that cannot go. A rerun that skips every segment sends nothing, as before."""
        self.start_reading()
        if self.reading.early.result():
            asyncio.run(self._preflight())
        self._checked = True

    def detach_lease(self) -> None:
        """The run is over: the lease's renewals stop reaching the actors before Ray goes
        (the lease is still held, and renewed, until the driver releases it)."""
        if self._lease is not None:
            self._lease.detach()

    # What the Python API (api.py) reads of a finished run.

    @property
    def stopping(self) -> bool:
        return self.stop.requested

    @property
    def stats(self) -> dict[str, Any]:
        return self.summary.stats

    @property
    def segments(self) -> dict[int, SegmentRow]:
        return self.summary.segments

    @property
    def unchanged(self) -> bytearray:
        return self.summary.unchanged

    @property
    def tariff(self) -> Tariff:
        return self.summary.tariff

    def row(self, index: int) -> SegmentRow | None:
        """How segment `index` ended in this run, or None when the run never reached it."""
        return self.summary.row(index)

    def start_reading(self) -> None:
        """Start reading on threads (`Reading.start`), and judging the manifest's orphans
        once it is in; called before Ray starts."""
        self.reading.start()
        self.pruning.start(self.reading.manifest_loading)

    def stop_reading(self) -> None:
        """End the early settling and the reads: once the run is over, or when Ray failed
        to start."""
        self.reading.stop()

    def _existing_contribution(self, index: int) -> Contribution:
        """What skipped segment `index` offers: its source file's labels and names."""
        source = self.sources[index]
        return existing_contribution(self.out, output_name(source), source)

    def _holder(self, index: int) -> tuple[str, str]:
        """Segment `index`'s path and the source id it writes."""
        source = self.sources[index]
        return source, written_id(source, self.settings.source.source_id, len(self.sources) > 1)

    def _push_deadline(self, deadline: float) -> None:
        """The lease was renewed (or lost: -inf): the workers' new write deadline. Called
        on the lease's thread; actor calls are thread-safe and not waited for."""
        self.actors.set_deadline(deadline)
        self.workers.set_deadline(deadline)

    async def run(self) -> int:
        self.start_reading()  # a no-op when the driver started it before Ray
        self.stop.trap_signals()
        try:
            rung = await self._before_the_first_request()
            self.monitor.begin(self.run_id)
            await self.actors.start(rung, self.reading.inputs, self.reading.seed, self._replicas)
            if self.fleet is not None and self.fleet.started:
                self.fleet.attach(self.actors.gateway, self._abandon, self.stop.engine_failed)
            # The early settling hands over at its next segment; the loop goes on from there.
            self.reading.hand_over()
            if await asyncio.wrap_future(self.reading.early):
                self.workers.start()  # it stopped at a segment that needs one
            heap.settle()  # the manifest is in: out of every later collection's walk
            gateway = self.actors.gateway
            pacer = asyncio.create_task(self.pacing.run(gateway, self._paced_actors))
            engine = self.fleet.words if self.fleet is not None else lambda: None
            watcher = asyncio.create_task(self.monitor.watch(gateway, self.pacing.now, engine))
            tripwire = asyncio.create_task(self.stop.fail_fast())
            try:
                await self.dispatch.run()
            finally:
                pacer.cancel()
                watcher.cancel()
                self.workers.stop_watchdog()
                tripwire.cancel()
                self.monitor.clear()
            self.same_bytes.close()
            await self.pacing.tick(gateway, self._paced_actors())  # the run's last sample
            await self._compact()
            stats = await self.actors.final_stats(self.workers.flushes)
            self.monitor.update()
            steady = self.pacing.judged(budget_stopped=bool(stats.get("halted")))
            await self._finish_sidecar(stats, steady)
            said = self.fleet.summary() if self.fleet is not None else None
            if said:
                self.console.err(f"{FAILURE_PREFIX}{said}")  # before the summary's lines
            return self.summary.close(stats, steady.line if steady else None)
        finally:
            # A run leaves no actor behind: the CLI's process would end them with its job,
            # but a run from Python (a notebook, a Ray task) lives on in the caller's Ray.
            # The replicas go once nothing is in flight: their GPUs are given back.
            self.workers.end()
            if self.fleet is not None:
                await self.fleet.stop()
            self.actors.end()

    async def _before_the_first_request(self) -> str | None:
        """The run's starting rung, once the segments that need no request are settled.

        Only when a segment needs the model do the preflight and `auto`'s probe go out
        (ADR 0037): a rerun that skips every segment sends nothing, and a run refused by
        the preflight has started no actor and written nothing but what the driver
        takes back (`store.footprint`).
        """
        needs_a_request = await asyncio.wrap_future(self.reading.early)
        ladder = self.settings.ladder  # `auto` unprobed: a rung no request will ask for
        unprobed = starting_rung(ladder.structured_output, ladder.max_output_tokens)
        if not needs_a_request or self.stop.requested:
            return unprobed
        if self.fleet is not None:  # the replicas answer their health check: no preflight
            self._replicas = await self.fleet.start(lambda: self.stop.requested)
            if self.stop.requested:
                return unprobed
        elif not self._checked:  # a run the driver did not check before Ray
            await self._preflight()
        return await self._resolve_rung()

    async def _preflight(self) -> None:
        """One GET …/models per endpoint; a verdict is one line and exit 1 (replay answers
        from its log first, and may never need the endpoint: none there)."""
        transport = self.settings.transport
        if not transport.batch_api:
            await self._refuse_what_batches_hold()
        if not transport.endpoints or self.settings.records.replay_mode != "off":
            return
        if transport.batch_api == "anthropic":  # its model list takes x-api-key, not a Bearer
            return
        async with open_session() as http:
            line = await preflight.check(http, transport)
        if line is not None:
            raise StartupError(line)

    async def _refuse_what_batches_hold(self) -> None:
        """A live run asks the one accounting of money (`engine/paid_ledger.py`) before its
        first request: requests a --batch-api run handed over may be paid for, and only
        that API can collect their answers — so they are not asked again live."""
        records, requests, api = await asyncio.to_thread(held_by_batches, self.out)
        if records:
            raise StartupError(
                f"--out holds {records} batch record(s) ({BATCHES}/) naming {requests} "
                f"request(s) a --batch-api {api} run handed over, possibly paid for: rerun "
                f"with --batch-api {api} to collect their answers, or delete {BATCHES}/ in "
                "--out to pay for them again live"
            )

    async def _resolve_rung(self) -> str | None:
        """The run's starting rung: none off the ladder, the pinned one, or `auto`'s probe."""
        settings = self.settings
        if settings.ladder.structured_output == "auto":
            async with open_session() as http:
                client = ChatClient.of(http, settings.transport)
                if self._replicas:  # the run's own replicas: the first one is asked
                    client = ChatClient(
                        http,
                        self._replicas[:1],
                        settings.transport.model,
                        api_key=settings.transport.api_key,
                        timeout_secs=settings.transport.timeout_secs,
                    )
                rung, why = await probe(client.complete)
            self.console.err(f"{FAILURE_PREFIX}structured output: auto resolved to {rung} ({why})")
            return rung
        return starting_rung(settings.ladder.structured_output, settings.ladder.max_output_tokens)

    async def _compact(self) -> None:
        """The run's commit: the manifest's journal folded into its file, and under --prune
        the orphans retired with it (`pruning.py`); a failure is said, and the summary
        still comes."""
        manifest = self.skipping.manifest
        try:
            await asyncio.to_thread(self.pruning.commit, manifest, stopped=self.stop.requested)
        except Fenced as fenced:  # the lease is another run's: its manifest is not ours
            self.console.err(f"{FAILURE_PREFIX}{fenced}")
        except OSError as error:  # a full disk, a read-only --out: the summary still comes
            self.summary.store_failed = True
            self.console.err(
                f"{FAILURE_PREFIX}could not compact the manifest ({error.strerror or error}) — "
                "its journal keeps every entry (and a prune its plan), and a rerun once --out "
                "is writable again compacts it, skips what was written and completes the prune"
            )

    def _paced_actors(self) -> list[tuple[str, Any]]:
        """The run's actors the pacing part asks for their CPU (the gateway answers with
        its pace): the workers, the ledger, the diagnostics writer."""
        found = [(f"{WORKER}{i}", handle) for i, handle in enumerate(self.workers.handles)]
        found += [(role, actor) for role, actor in self.actors.others() if actor is not None]
        return found

    def _abandon(self, endpoint: int) -> None:
        """A replica is lost: the segment workers ask its requests on the wire again."""
        if isinstance(self.workers, Workers):
            self.workers.abandon_endpoint(endpoint)

    async def _finish_sidecar(self, stats: dict[str, Any], steady: Judged | None) -> None:
        """With --diagnostics-out, the sidecar's last records — the engine's, with --engine,
        and the gateway's (`gateway_record`) — then closed."""
        diagnostics = self.actors.diagnostics
        if diagnostics is None:
            return
        fields = steady.fields if steady else None
        last = [gateway_record(self.run_id, stats, fields)]
        if self.fleet is not None and self.fleet.ledger.starts:
            last.insert(0, self.fleet.record(self.run_id).record())
        try:
            await diagnostics.write.remote(last)
            await diagnostics.close.remote()
        except ray.exceptions.RayError as error:
            self.summary.store_failed = True
            sidecar = self.settings.records.diagnostics_out
            self.console.err(f"{FAILURE_PREFIX}could not finish {sidecar} ({error})")
