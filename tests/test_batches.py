"""Segments to a worker in batches (`engine.batches`), over a stand-in for the actor
handle: what one turn hands over goes in one `submit`, outcomes land as they stream on
the worker's one outcome stream, and a stream that ends fails what its incarnation held.
The real actor is exercised by every CLI test on Ray (the killed and frozen worker tests
among them)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from taguru_ray.engine import batches as batches_module
from taguru_ray.engine.batches import (
    GATHER_WHEN,
    Outbox,
    WorkerBatches,
    failed_outcome,
    gather_s,
    pick_worker,
    worker_count,
)
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome


def job(index: int) -> SegmentJob:
    return SegmentJob(index, f"{index}.md", b"text", f"id{index}", ())


def outcome(index: int) -> SegmentOutcome:
    return SegmentOutcome(index, f"{index}.md", "written")


class WorkerDied(Exception):
    pass


Item = str | list[SegmentOutcome] | BaseException | None


class Method:
    """`handle.<method>[.options(...)].remote(...)`."""

    def __init__(self, call: Callable[..., Any], options: dict[str, Any] | None = None) -> None:
        self._call = call
        self._options = options

    def options(self, **options: Any) -> Method:
        assert options == self._options
        return self

    def remote(self, *args: Any) -> Any:
        return self._call(*args)


class FakeWorker:
    """A worker's handle: each `outcomes` stream names an incarnation (w-1, w-2, ...) and
    then streams what a test puts on it (lists of outcomes, an error, or None to end
    it); each `submit` is recorded with the name it carried and answers `answer`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []
        self.streams: list[asyncio.Queue[Item]] = []
        self.answer: bool | BaseException = True
        self.outcomes = Method(self._open, {"num_returns": "streaming"})
        self.submit = Method(self._submit)

    def _open(self) -> AsyncIterator[Awaitable[Any]]:
        items: asyncio.Queue[Item] = asyncio.Queue()
        items.put_nowait(f"w-{len(self.streams) + 1}")
        self.streams.append(items)
        return self._stream(items)

    async def _stream(self, items: asyncio.Queue[Item]) -> AsyncIterator[Awaitable[Any]]:
        while (item := await items.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield _ready(item)

    async def _submit(self, name: str, jobs: list[SegmentJob]) -> bool:
        self.calls.append((name, [j.index for j in jobs]))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


async def _ready(value: Any) -> Any:
    return value


def test_segments_handed_over_in_one_turn_go_in_one_call_and_land_as_they_finish() -> None:
    async def scenario() -> tuple[list[tuple[str, list[int]]], list[bool], list[str], int]:
        worker = FakeWorker()
        batches = WorkerBatches(worker)
        first = [batches.run(job(i)) for i in range(3)]
        await asyncio.sleep(0.01)  # the turn ends: one call for all three
        later = batches.run(job(3))
        await asyncio.sleep(0.01)
        [stream] = worker.streams  # one stream for both calls
        await stream.put([outcome(1)])
        await asyncio.sleep(0.01)
        landed = [future.done() for future in first]
        await stream.put([outcome(0), outcome(2)])
        await stream.put([outcome(3)])
        done = await asyncio.gather(*first, later)
        batches.close()
        return worker.calls, landed, [o.source for o in done], len(worker.streams)

    calls, landed, sources, streams = asyncio.run(scenario())
    assert calls == [("w-1", [0, 1, 2]), ("w-1", [3])]  # each carries the incarnation
    assert landed == [False, True, False]  # a quick segment is not held back by its batch
    assert sources == ["0.md", "1.md", "2.md", "3.md"] and streams == 1


def test_a_worker_holding_many_segments_gets_the_next_ones_gathered_into_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A gathering window long enough that a busy machine cannot stall three turns past it.
    gather = 0.5
    monkeypatch.setattr(batches_module, "GATHER_S", gather)

    async def scenario() -> list[list[int]]:
        worker = FakeWorker()
        batches = WorkerBatches(worker)
        held = [batches.run(job(i)) for i in range(GATHER_WHEN)]
        await asyncio.sleep(0.01)  # one turn: the first call goes at once
        for i in range(GATHER_WHEN, GATHER_WHEN + 3):  # three turns, within the window
            batches.run(job(i))
            await asyncio.sleep(0)
        assert len(worker.calls) == 1  # gathering
        await asyncio.sleep(gather * 2)
        [stream] = worker.streams
        await stream.put([outcome(i) for i in range(GATHER_WHEN)])
        await asyncio.gather(*held)
        batches.run(job(99))  # the worker holds 3 now: no gathering
        await asyncio.sleep(0.01)
        batches.close()
        return [indices for _, indices in worker.calls]

    calls = asyncio.run(scenario())
    assert calls == [list(range(GATHER_WHEN)), [16, 17, 18], [99]]


def test_a_stream_that_fails_fails_every_segment_its_incarnation_holds_then_reopens() -> None:
    async def scenario() -> tuple[list[bool], list[tuple[str, list[int]]], SegmentOutcome]:
        worker = FakeWorker()
        batches = WorkerBatches(worker)
        one = [batches.run(job(i)) for i in range(2)]
        await asyncio.sleep(0.01)
        two = batches.run(job(2))  # a second call to the same incarnation
        await asyncio.sleep(0.01)
        [stream] = worker.streams
        await stream.put([outcome(0)])
        await stream.put(WorkerDied("the actor died"))
        finished = await one[0]
        for future in (one[1], two):
            with pytest.raises(WorkerDied):
                await future
        died = [isinstance(f.exception(), WorkerDied) for f in (one[1], two)]
        again = batches.run(job(1))  # resubmitted: its restarted successor, a new stream
        await asyncio.sleep(0.01)
        await worker.streams[1].put([outcome(1)])
        assert (await again).index == 1
        batches.close()
        return died, worker.calls, finished

    died, calls, finished = asyncio.run(scenario())
    assert finished.status == "written" and died == [True, True]
    assert calls == [("w-1", [0, 1]), ("w-1", [2]), ("w-2", [1])]


def test_a_refused_submit_waits_for_its_stream_and_a_raising_one_fails_its_batch() -> None:
    async def scenario() -> tuple[bool, BaseException | None]:
        worker = FakeWorker()
        batches = WorkerBatches(worker)
        worker.answer = False  # the incarnation the name was for has been replaced
        refused = batches.run(job(0))
        await asyncio.sleep(0.01)
        still_out = not refused.done()  # not failed twice: its stream's death fails it
        await worker.streams[0].put(WorkerDied("the actor died"))
        with pytest.raises(WorkerDied):
            await refused
        worker.answer = WorkerDied("the call could not reach the actor")
        raised = batches.run(job(1))
        with pytest.raises(WorkerDied):
            await raised
        batches.close()
        return still_out, raised.exception()

    still_out, error = asyncio.run(scenario())
    assert still_out and str(error) == "the call could not reach the actor"


def test_closing_at_the_run_end_fails_what_is_still_out() -> None:
    async def scenario() -> BaseException | None:
        batches = WorkerBatches(FakeWorker())
        future = batches.run(job(0))
        await asyncio.sleep(0.01)
        batches.close()
        with pytest.raises(RuntimeError):
            await future
        return future.exception()

    assert "run ended" in str(asyncio.run(scenario()))


def test_a_segment_whose_call_failed_is_named_and_resumable() -> None:
    failed = failed_outcome(job(7), RuntimeError("boom"))
    assert failed.status == "failed" and failed.index == 7
    assert failed.notes == [
        "taguru: extract: 7.md: the worker running it failed (boom) — "
        "rerun to resume from its checkpoint"
    ]


def test_a_segment_goes_to_the_worker_holding_fewest_and_a_resubmit_goes_round() -> None:
    assert pick_worker([3, 1, 2], index=0, attempt=0) == 1
    # Ties go round by the segment's index, as a plain round robin would.
    assert [pick_worker([2, 2, 2], index, 0) for index in range(4)] == [0, 1, 2, 0]
    assert pick_worker([5, 0, 0], index=2, attempt=0) == 2
    # A resubmit skips the least-busy rule: the dead worker holds nothing, but restarts.
    assert pick_worker([4, 0, 4], index=1, attempt=1) == 2
    assert pick_worker([0, 4, 4], index=1, attempt=2) == 0


async def _take(
    stream: AsyncIterator[list[SegmentOutcome]], items: list[list[int]], n: int
) -> None:
    while len(items) < n:
        items.append(sorted(o.index for o in await anext(stream)))


def test_a_worker_holding_few_yields_each_outcome_as_it_finishes() -> None:
    async def scenario() -> tuple[list[list[int]], int]:
        outbox = Outbox()
        gates = [asyncio.Event() for _ in range(3)]

        async def segment(i: int) -> SegmentOutcome:
            await gates[i].wait()
            return outcome(i)

        for i in range(3):
            outbox.hold(job(i), asyncio.ensure_future(segment(i)))
        stream = outbox.stream()
        items: list[list[int]] = []
        for i, gate in enumerate(gates):
            gate.set()
            await _take(stream, items, i + 1)
        await stream.aclose()
        return items, outbox.count

    assert asyncio.run(scenario()) == ([[0], [1], [2]], 0)


def test_a_worker_holding_many_gathers_outcomes_that_finish_close_together() -> None:
    async def scenario() -> tuple[list[list[int]], int, int]:
        outbox = Outbox()
        count = GATHER_WHEN + 2
        gate = asyncio.Event()

        async def segment(i: int) -> SegmentOutcome:
            if i < 2:
                await asyncio.sleep(0.001 * i)  # two finish a moment apart
                return outcome(i)
            await gate.wait()
            return outcome(i)

        for i in range(count):
            outbox.hold(job(i), asyncio.ensure_future(segment(i)))
        stream = outbox.stream()
        items: list[list[int]] = []
        await _take(stream, items, 1)
        holding = outbox.count  # the rest, after the first item
        gate.set()
        while sum(map(len, items)) < count:
            await _take(stream, items, len(items) + 1)
        await stream.aclose()
        return items, holding, outbox.count

    items, holding, after = asyncio.run(scenario())
    assert items[0] == [0, 1]  # gathered into one item: the worker holds GATHER_WHEN more
    assert holding == GATHER_WHEN and after == 0
    assert sorted(i for item in items for i in item) == list(range(GATHER_WHEN + 2))


def test_a_segment_that_raises_comes_back_failed_and_closing_cancels_the_rest() -> None:
    async def scenario() -> tuple[list[SegmentOutcome], int, bool]:
        outbox = Outbox()

        async def segment(i: int) -> SegmentOutcome:
            if i == 0:
                raise RuntimeError("boom")
            await asyncio.sleep(60)
            return outcome(i)

        tasks = [asyncio.ensure_future(segment(i)) for i in range(3)]
        for i, task in enumerate(tasks):
            outbox.hold(job(i), task)
        stream = outbox.stream()
        first = await anext(stream)
        await stream.aclose()  # the stream went away: the worker's run is over
        await asyncio.sleep(0.01)  # the cancelled ones finish, and are forgotten
        return first, outbox.count, all(task.cancelled() for task in tasks[1:])

    first, count, cancelled = asyncio.run(scenario())
    assert [(o.index, o.status) for o in first] == [(0, "failed")]
    assert "(boom)" in first[0].notes[0]
    assert count == 0 and cancelled


def test_a_run_starts_the_workers_asked_for_but_never_more_than_its_segments() -> None:
    assert worker_count(2, 1) == 1
    assert worker_count(2, 3) == 2
    assert worker_count(4, 4) == 4
    assert worker_count(8, 0) == 1  # an empty corpus never dispatches; one is the floor


def test_the_more_a_worker_holds_the_longer_what_goes_to_it_or_comes_back_is_gathered() -> None:
    assert [gather_s(held) for held in (0, 15)] == [None, None]  # at once
    assert [gather_s(held) for held in (16, 63)] == [0.02, 0.02]
    assert [gather_s(held) for held in (64, 1000)] == [0.25, 0.25]


class ContactLost(Exception):
    """Ray's ActorUnavailableError: the driver's stream ends, the actor lives on."""


class LiveWorker:
    """A worker whose `outcomes` and `submit` are `SegmentWorker`'s over a real Outbox.
    Its generator runs on its own, as Ray runs it, and `lose()` ends the driver's side
    of the newest stream while that generator lives on."""

    def __init__(self) -> None:
        self.outbox = Outbox()
        self.gates: dict[int, asyncio.Event] = {}
        self.tasks: list[asyncio.Future[SegmentOutcome]] = []
        self.pumps: list[asyncio.Task[None]] = []
        self.lose: Callable[[], None] = lambda: None
        self.outcomes = Method(self._open, {"num_returns": "streaming"})
        self.submit = Method(self._submit)

    def gate(self, index: int) -> asyncio.Event:
        return self.gates.setdefault(index, asyncio.Event())

    async def _generator(self) -> AsyncIterator[Any]:  # as SegmentWorker.outcomes
        async with contextlib.aclosing(self.outbox.stream()) as finished:
            yield "w-1"
            async for outcomes in finished:
                yield outcomes

    async def _segment(self, index: int) -> SegmentOutcome:
        await self.gate(index).wait()
        return outcome(index)

    async def _submit(self, name: str, jobs: list[SegmentJob]) -> bool:
        for one in jobs:
            task = asyncio.ensure_future(self._segment(one.index))
            self.tasks.append(task)
            self.outbox.hold(one, task)
        return True

    def _open(self) -> AsyncIterator[Awaitable[Any]]:
        items: asyncio.Queue[Any] = asyncio.Queue()
        lost = asyncio.Event()
        self.lose = lost.set

        async def pump() -> None:
            async for item in self._generator():
                await items.put(item)

        self.pumps.append(asyncio.ensure_future(pump()))
        return self._driver_side(items, lost)

    async def _driver_side(
        self, items: asyncio.Queue[Any], lost: asyncio.Event
    ) -> AsyncIterator[Awaitable[Any]]:
        while True:
            got, gone = asyncio.ensure_future(items.get()), asyncio.ensure_future(lost.wait())
            await asyncio.wait({got, gone}, return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                got.cancel()
                raise ContactLost("lost contact with the actor")
            gone.cancel()
            yield _ready(got.result())


def test_a_stream_lost_while_its_worker_lives_hands_its_outcomes_to_the_next_stream() -> None:
    async def scenario() -> tuple[list[int], bool, bool, list[bool]]:
        worker = LiveWorker()
        batches = WorkerBatches(worker)
        first = [batches.run(job(i)) for i in range(2)]
        worker.gate(0).set()
        landed = (await asyncio.wait_for(first[0], 5)).index
        worker.lose()  # the worker lives on, still running segment 1
        with pytest.raises(ContactLost):
            await asyncio.wait_for(first[1], 5)
        again = batches.run(job(1))  # resubmitted: the same incarnation, a new stream
        await asyncio.sleep(0.01)
        worker.gate(1).set()
        resumed = (await asyncio.wait_for(again, 5)).index
        old_ended = worker.pumps[0].done()  # the new stream took over from the old
        batches.close()
        return (
            [landed, resumed],
            old_ended,
            len(worker.pumps) == 2,
            [task.cancelled() for task in worker.tasks],
        )

    indices, old_ended, two_streams, cancelled = asyncio.run(scenario())
    assert indices == [0, 1] and old_ended and two_streams
    assert cancelled == [False, False, False]  # the old stream ending cancelled nothing
