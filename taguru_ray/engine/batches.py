"""Segments to one worker in batches, and their outcomes back on one stream.

An actor call costs the driver and the worker about 1 ms of CPU together, as much
as a fifth of a small segment's whole cost (ADR 0028). The segments the driver
hands one worker in the same turn of its event loop go in one `submit` call.
Their outcomes come back on the worker's one outcome stream, opened once per
incarnation of the worker, those that finished together in one item, so a slow
segment never holds a quick one's outcome back. A streaming call per batch cost
the driver 5 ms each where a plain call costs 2 (issue 23, ADR 0043).

A worker that dies ends its stream: every segment sent to that incarnation fails
with the death, and the driver resubmits them one by one. A `submit` carries the
incarnation its stream named; a restarted worker runs none of a predecessor's
segments (they fail with its stream), so no segment runs twice at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from taguru_ray.pipeline.report import FAILURE_PREFIX
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome

# With this many segments out at a worker it has work enough queued that a segment
# handed over GATHER_S later costs nothing, and segments handed over — or outcomes
# coming back — are gathered that long into one call or one item (issue 23: about
# 0.3 ms of the single driver's CPU each). Below it, they go at once: a narrow
# --segment-window would feel every millisecond. With GATHER_LONG_WHEN out, a
# second's work at 64 completions/s, they are gathered for GATHER_LONG_S: one
# outcome stream per worker would otherwise bring back an item, and start a call,
# every GATHER_S at any rate (ADR 0043).
GATHER_WHEN = 16
GATHER_S = 0.02
GATHER_LONG_WHEN = 64
GATHER_LONG_S = 0.25  # 0.1 until ADR 0043's later note: 0.05 ms a completion less


def gather_s(held: int) -> float | None:
    """How long a worker holding `held` segments gathers what goes to it, or comes back
    from it, before sending: None, at once."""
    if held >= GATHER_LONG_WHEN:
        return GATHER_LONG_S
    return GATHER_S if held >= GATHER_WHEN else None


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
    """The driver's side, for one worker: `run` hands it a segment."""

    def __init__(self, worker: Any) -> None:
        self._worker = worker
        self._pending: list[tuple[SegmentJob, asyncio.Future[SegmentOutcome]]] = []
        self._stream: OutcomeStream | None = None
        self._out = 0  # segments handed to the worker whose outcome has not come back

    def run(self, job: SegmentJob) -> asyncio.Future[SegmentOutcome]:
        """The segment's outcome, or the exception the worker's calls raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[SegmentOutcome] = loop.create_future()
        if not self._pending:
            delay = gather_s(self._out)
            if delay is None:
                loop.call_soon(self._send)  # after every segment handed over in this turn
            else:
                loop.call_later(delay, self._send)
        self._pending.append((job, future))
        self._out += 1
        future.add_done_callback(self._back)
        return future

    def _back(self, _: asyncio.Future[SegmentOutcome]) -> None:
        self._out -= 1

    def _send(self) -> None:
        batch, self._pending = self._pending, []
        if self._stream is None or self._stream.ended:
            self._stream = OutcomeStream(self._worker)
        self._stream.send(batch)

    def close(self) -> None:
        """The run is over: stop reading the worker's stream."""
        if self._stream is not None:
            self._stream.close()


class OutcomeStream:
    """One incarnation of a worker: the stream its outcomes come back on (its first
    item names the incarnation), and the segments sent to it, each until its outcome
    comes back. When the stream ends — the worker died — they fail with its error."""

    def __init__(self, worker: Any) -> None:
        self._worker = worker
        self.ended = False
        self._waiting: dict[int, asyncio.Future[SegmentOutcome]] = {}
        self._name: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._submits: set[asyncio.Task[None]] = set()
        self._reading = asyncio.ensure_future(self._read())

    def send(self, batch: list[tuple[SegmentJob, asyncio.Future[SegmentOutcome]]]) -> None:
        for job, future in batch:
            self._waiting[job.index] = future
        task = asyncio.ensure_future(self._submit(batch))
        self._submits.add(task)
        task.add_done_callback(self._submits.discard)

    async def _submit(self, batch: list[tuple[SegmentJob, asyncio.Future[SegmentOutcome]]]) -> None:
        name = await self._name
        if name is None:
            return  # the stream ended before it named the incarnation: it failed them
        try:
            await self._worker.submit.remote(name, [job for job, _ in batch])
        except Exception as error:
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
        # A restarted worker refuses (False) and runs none: the death that restarted it
        # ends this stream, which fails them.

    async def _read(self) -> None:
        error: BaseException = RuntimeError("the worker ended its outcome stream")
        try:
            items = self._worker.outcomes.options(num_returns="streaming").remote()
            async for item in items:
                value = await item
                if not self._name.done():
                    self._name.set_result(value)
                    continue
                for outcome in value:
                    future = self._waiting.pop(outcome.index, None)
                    if future is not None and not future.done():
                        future.set_result(outcome)
        except Exception as raised:
            error = raised
        self._end(error)

    def _end(self, error: BaseException) -> None:
        self.ended = True
        if not self._name.done():
            self._name.set_result(None)
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(error)

    def close(self) -> None:
        self._reading.cancel()
        self._end(RuntimeError("the run ended with this segment out"))


class Outbox:
    """The worker's side: the segments it holds, and the outcomes not yet streamed back.
    While it holds GATHER_WHEN or more, outcomes finishing within `gather_s` of each
    other go back as one item.

    Outcomes go back on the newest stream only. A driver that lost contact with this
    worker (Ray's ActorUnavailableError) opens a new stream while the old one's
    generator may live on here; the old one then ends, leaving what runs to the new
    one, and takes no outcome the driver would wait for in vain (ADR 0043)."""

    def __init__(self) -> None:
        self.count = 0
        self._finished: list[SegmentOutcome] = []
        self._ready = asyncio.Event()
        self._running: set[asyncio.Future[SegmentOutcome]] = set()
        self._newest = 0  # the stream outcomes go back on, by the order they opened

    def hold(self, job: SegmentJob, task: asyncio.Future[SegmentOutcome]) -> None:
        """Stream `task`'s outcome once it finishes (a raise comes back as `job` failed)."""
        self.count += 1
        self._running.add(task)

        def finished(_: asyncio.Future[SegmentOutcome]) -> None:
            self._running.discard(task)
            self.count -= 1
            if task.cancelled():
                return
            error = task.exception()
            self._finished.append(task.result() if error is None else failed_outcome(job, error))
            self._ready.set()

        task.add_done_callback(finished)

    def stream(self) -> OutboxStream:
        """Outcomes as they finish, those that finished together in one list. Opening
        it ends the stream before it; closing it while it is the newest cancels the
        segments still running."""
        self._newest += 1
        self._ready.set()  # wakes the stream before this one, which then ends
        return OutboxStream(self, self._newest)

    async def _next(self, stream: int) -> list[SegmentOutcome] | None:
        """The next item of stream number `stream`; None once a newer stream opened."""
        while self._newest == stream:
            await self._ready.wait()
            delay = gather_s(self.count)
            if delay is not None:
                await asyncio.sleep(delay)
            if self._newest != stream:
                break
            self._ready.clear()
            finished, self._finished = self._finished, []
            if finished:
                return finished
        return None

    def _close(self, stream: int) -> None:
        if self._newest == stream:
            for task in list(self._running):
                task.cancel()


class OutboxStream:
    """One `Outbox.stream`: an async iterator that ends once a newer stream opens, and
    whose `aclose`, while it is the newest, cancels the segments still running."""

    def __init__(self, outbox: Outbox, number: int) -> None:
        self._outbox = outbox
        self._number = number

    def __aiter__(self) -> OutboxStream:
        return self

    async def __anext__(self) -> list[SegmentOutcome]:
        finished = await self._outbox._next(self._number)
        if finished is None:
            raise StopAsyncIteration
        return finished

    async def aclose(self) -> None:
        self._outbox._close(self._number)


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
