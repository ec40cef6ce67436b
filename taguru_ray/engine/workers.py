"""The segment workers: their start and placement, a segment run on one, worker deaths.

Workers start when the first segment needs one, so a rerun that skips everything
starts none. A worker that dies under a segment (a preempted node) is restarted
by Ray and the segment is resubmitted — to the next worker round, RESUBMITS times
at most — resuming from its checkpoint, so the redo is cheap (ADR 0010). The dead
worker's permits are reclaimed at once: its successor frees them by registering,
or the gateway forgets them. A worker alive but silent is the watchdog's
(`engine/watchdog.py`), which restarts it and so turns a hang into a death here.
Every write of a worker is fenced by the lease's deadline, pushed at each renewal.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import ray

from taguru_ray.engine.batches import WorkerBatches, failed_outcome, pick_worker, worker_count
from taguru_ray.engine.head import head_answers, head_lost_line
from taguru_ray.engine.head_actors import HeadActors
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.watchdog import Watchdog
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.settings import Settings

RESUBMITS = 3  # a segment whose worker dies this often fails, named
RECLAIM_S = 20.0  # a dead worker's successor registers by then, or its permits are freed
WORKER_DEATHS = (ray.exceptions.ActorDiedError, ray.exceptions.ActorUnavailableError)


class Workers:
    def __init__(
        self,
        settings: Settings,
        run_id: str,
        segments: int,
        say: Callable[[str], None],
        actors: HeadActors,
    ) -> None:
        self._settings = settings
        self._run_id = run_id
        self._segments = segments  # the run's, which bounds how many workers it starts
        self._say = say
        self._actors = actors  # the gateway, whose permits a dead worker held
        self.handles: list[Any] = []
        self.batches: list[WorkerBatches] = []
        self.watchdog: Watchdog  # set with the workers, by `start`
        self._watching: asyncio.Task[None] | None = None  # the watchdog, once workers start
        self._reclaiming: set[int] = set()  # workers whose permits are being reclaimed
        self._background: set[asyncio.Future[None]] = set()
        self._used: set[int] = set()  # workers that were handed a segment
        self.head_lost = False  # the Ray head stopped answering: nothing more can run

    def start(self) -> None:
        """The segment workers (`worker_count` of them) and their watchdog, once the first
        segment needs one: a rerun that skips everything starts none."""
        if self._watching is not None:
            return
        from taguru_ray.engine.worker import SegmentWorker

        settings = self._settings
        self.handles = [
            SegmentWorker.options(**self._placement()).remote(i, settings, self._run_id)
            for i in range(worker_count(settings.scale.workers, self._segments))
        ]
        self.batches = [WorkerBatches(worker) for worker in self.handles]
        self.watchdog = Watchdog(self.handles, settings.scale.worker_hang_secs, self._say)
        self._watching = asyncio.create_task(self.watchdog.run())

    def _placement(self) -> dict[str, Any]:
        """Spread the segment workers; `--worker-resource` keeps them on the nodes
        that declare it (the spot workers of `cluster/`)."""
        placement: dict[str, Any] = {"scheduling_strategy": "SPREAD"}
        if self._settings.scale.worker_resource:
            placement["resources"] = {self._settings.scale.worker_resource: 0.01}
        return placement

    async def run_segment(self, job: SegmentJob) -> SegmentOutcome:
        """Run a segment; a worker that dies under it gets the segment resubmitted."""
        if self.head_lost:
            return self._not_run(job)
        self.start()
        deaths: list[str] = []
        for attempt in range(RESUBMITS + 1):
            worker = pick_worker(self.watchdog.busy, job.index, attempt)
            try:
                outcome = await self._on(worker, job)
            except WORKER_DEATHS as error:
                if self.head_lost or await self._head_gone():
                    return self._not_run(job)
                self._reclaim(worker)
                deaths.append(type(error).__name__)
                self._say(
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

    async def _head_gone(self) -> bool:
        """Whether the death was the head's: said once, and every later segment is
        failed without a call (their actors are gone with it)."""
        address = ray.get_runtime_context().gcs_address
        if await head_answers(address):
            return False
        if not self.head_lost:
            self.head_lost = True
            self._say(head_lost_line(FAILURE_PREFIX, address))
        return True

    @staticmethod
    def _not_run(job: SegmentJob) -> SegmentOutcome:
        note = f"{FAILURE_PREFIX}{job.source}: not run — the Ray head is gone"
        return SegmentOutcome(job.index, job.source, "failed", notes=[note])

    async def _on(self, worker: int, job: SegmentJob) -> SegmentOutcome:
        self.watchdog.busy[worker] += 1  # watched while it holds the segment
        self._used.add(worker)  # its reports are flushed before the totals
        try:
            return await self.batches[worker].run(job)
        finally:
            self.watchdog.busy[worker] -= 1

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
            gateway = self._actors.gateway
            try:
                dead = await gateway.incarnation.remote(worker)  # the one that died
                deadline = time.monotonic() + RECLAIM_S
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        call = self.handles[worker].register.remote().future()
                        await asyncio.wait_for(asyncio.wrap_future(call), left)
                        return  # its successor is up, and freed what the dead one held
                    except TimeoutError:
                        break
                    except ray.exceptions.RayError:  # still restarting: ask again
                        await asyncio.sleep(min(1.0, max(left, 0.0)))
                await gateway.forget.remote(worker, dead)
            except ray.exceptions.RayError:
                pass  # the gateway is gone with the run
            finally:
                self._reclaiming.discard(worker)

        task = asyncio.ensure_future(reclaim())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def flushes(self) -> list[Any]:
        """Each worker that ran a segment sends the outcomes it kept for the gateway."""
        return [self.handles[index].flush.remote() for index in self._used]

    def abandon_endpoint(self, endpoint: int) -> None:
        """Endpoint `endpoint`'s replica is lost: each worker asks its requests on the wire
        to it again elsewhere, now (`SegmentWorker.abandon_endpoint`)."""
        for worker in self.handles:
            worker.abandon_endpoint.remote(endpoint)

    def halt(self) -> None:
        """The workers give back their kept permits, which the gateway does not see."""
        for worker in self.handles:
            worker.halt.remote()

    def set_deadline(self, deadline: float) -> None:
        """The lease's new write deadline (the lease's thread: a copy of the list)."""
        for worker in list(self.handles):
            worker.set_deadline.remote(deadline)

    def stop_watchdog(self) -> None:
        if self._watching is not None:
            self._watching.cancel()

    def end(self) -> None:
        for batches in self.batches:
            batches.close()
        for worker in self.handles:
            with contextlib.suppress(Exception):  # already gone is as good as ended
                ray.kill(worker, no_restart=True)
