"""Segments to one worker in batches: one actor call for the segments a turn hands it.

An actor call costs the driver and the worker about 1 ms of CPU together, as much
as a fifth of a small segment's whole cost (ADR 0028). The segments the driver
hands one worker in the same turn of its event loop go in one call, and the
worker streams their outcomes back as they finish, those that finished together
in one item, so a slow segment never holds a quick one's outcome back. A worker
that dies fails every segment of its batches still out, each with the death,
and the driver resubmits them one by one as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any, TypeVar

from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome

# With this many segments out at a worker it has work enough queued that a segment
# handed over GATHER_S later costs nothing, and segments handed over — or outcomes
# coming back — are gathered that long into one call or one item (issue 23: about
# 0.3 ms of the single driver's CPU each). Below it, they go at once: a narrow
# --segment-window would feel every millisecond.
GATHER_WHEN = 16
GATHER_S = 0.02

T = TypeVar("T")


def worker_count(wanted: int, segments: int) -> int:
    """How many segment workers a run of `segments` starts when `--workers` asks for
    `wanted`: never more than it has segments, as each is a process to start and a run
    of one segment has nothing to hand a second; at least one."""
    return max(1, min(wanted, segments))


def pick_worker(busy: list[int], index: int, attempt: int) -> int:
    """The worker segment `index` goes to, by how many segments each holds (`busy`).

    The one holding the fewest, so a worker that started late or runs slower
    gets fewer and every worker's queue runs dry at about the same time (the
    run's tail); ties go round by the segment's index. A resubmitted segment
    goes round to the next worker instead: the one that died under it is still
    restarting, and holds nothing.
    """
    count = len(busy)
    turn = (index + attempt) % count
    if attempt:
        return turn
    return min(range(count), key=lambda worker: (busy[worker], (worker - turn) % count))


class WorkerBatches:
    def __init__(self, worker: Any) -> None:
        self._worker = worker
        self._pending: list[tuple[SegmentJob, asyncio.Future[SegmentOutcome]]] = []
        self._streams: set[asyncio.Task[None]] = set()
        self._out = 0  # segments handed to the worker whose outcome has not come back

    def run(self, job: SegmentJob) -> asyncio.Future[SegmentOutcome]:
        """The segment's outcome, or the exception the worker's call raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[SegmentOutcome] = loop.create_future()
        if not self._pending:
            if self._out >= GATHER_WHEN:
                loop.call_later(GATHER_S, self._send)
            else:
                loop.call_soon(self._send)  # after every segment handed over in this turn
        self._pending.append((job, future))
        self._out += 1
        future.add_done_callback(self._back)
        return future

    def _back(self, _: asyncio.Future[SegmentOutcome]) -> None:
        self._out -= 1

    def _send(self) -> None:
        batch, self._pending = self._pending, []
        task = asyncio.ensure_future(self._stream(batch))
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)

    async def _stream(self, batch: list[tuple[SegmentJob, asyncio.Future[SegmentOutcome]]]) -> None:
        waiting = {job.index: future for job, future in batch}
        error: BaseException = RuntimeError("the worker ended the batch without every outcome")
        try:
            call = self._worker.run_many.options(num_returns="streaming")
            async for item in call.remote([job for job, _ in batch]):
                for outcome in await item:
                    future = waiting.pop(outcome.index, None)
                    if future is not None and not future.done():
                        future.set_result(outcome)
        except Exception as raised:
            error = raised
        for future in waiting.values():
            if not future.done():
                future.set_exception(error)


class Outstanding:
    """The worker's side: the segments it holds across all its calls. While it holds
    GATHER_WHEN or more, outcomes finishing within GATHER_S of each other go back as
    one streamed item."""

    def __init__(self) -> None:
        self.count = 0

    async def stream(self, tasks: Iterable[asyncio.Future[T]]) -> AsyncIterator[list[T]]:
        """The tasks' results as they finish, those that finished together in one list;
        the tasks still running are cancelled when the stream is closed early."""
        running = set(tasks)
        self.count += len(running)
        try:
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                self.count -= len(done)
                if self.count >= GATHER_WHEN:
                    await asyncio.sleep(GATHER_S)
                    more = {task for task in running if task.done()}
                    self.count -= len(more)
                    done, running = done | more, running - more
                yield [task.result() for task in done]
        finally:
            self.count -= len(running)
            for task in running:
                task.cancel()


def failed_outcome(job: SegmentJob, error: BaseException) -> SegmentOutcome:
    """A segment whose worker call failed outside the pipeline's own handling."""
    return SegmentOutcome(
        job.index,
        job.source,
        "failed",
        notes=[
            f"{FAILURE_PREFIX}{job.source}: the worker running it failed ({error}) — "
            "rerun to resume from its checkpoint"
        ],
    )
