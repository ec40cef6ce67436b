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
from typing import Any

from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome


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

    def run(self, job: SegmentJob) -> asyncio.Future[SegmentOutcome]:
        """The segment's outcome, or the exception the worker's call raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[SegmentOutcome] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._send)  # after every segment handed over in this turn
        self._pending.append((job, future))
        return future

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
