"""Segments to a worker in batches (`engine.batches`), over a stand-in for the actor
handle: what one turn hands over goes in one call, outcomes land as they stream, and a
failed stream fails only the segments still out. The real actor is exercised by every
CLI test on Ray (the killed and frozen worker tests among them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest

from taguru_ray.engine.batches import (
    GATHER_S,
    GATHER_WHEN,
    Outstanding,
    WorkerBatches,
    failed_outcome,
    pick_worker,
    worker_count,
)
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome


def job(index: int) -> SegmentJob:
    return SegmentJob(index, f"{index}.md", b"text", f"id{index}", ())


def outcome(index: int) -> SegmentOutcome:
    return SegmentOutcome(index, f"{index}.md", "written")


class StreamingHandle:
    """`handle.run_many.options(num_returns="streaming").remote(jobs)`: records each
    call's jobs and streams the items a test feeds that call (lists of outcomes, an
    error, or None to end it)."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []
        self.streams: list[asyncio.Queue[list[SegmentOutcome] | BaseException | None]] = []
        self.run_many = self

    def options(self, **options: Any) -> StreamingHandle:
        assert options == {"num_returns": "streaming"}
        return self

    def remote(self, jobs: list[SegmentJob]) -> AsyncIterator[Awaitable[list[SegmentOutcome]]]:
        self.calls.append([j.index for j in jobs])
        self.streams.append(asyncio.Queue())
        return self._stream(self.streams[-1])

    async def _stream(
        self, items: asyncio.Queue[list[SegmentOutcome] | BaseException | None]
    ) -> AsyncIterator[Awaitable[list[SegmentOutcome]]]:
        while (item := await items.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield _ready(item)


async def _ready(value: list[SegmentOutcome]) -> list[SegmentOutcome]:
    return value


def test_segments_handed_over_in_one_turn_go_in_one_call_and_land_as_they_finish() -> None:
    async def scenario() -> tuple[list[list[int]], list[bool], list[str]]:
        handle = StreamingHandle()
        batches = WorkerBatches(handle)
        first = [batches.run(job(i)) for i in range(3)]
        await asyncio.sleep(0.01)  # the turn ends: one call for all three
        later = batches.run(job(3))
        await asyncio.sleep(0.01)
        one, two = handle.streams
        await one.put([outcome(1)])
        await asyncio.sleep(0.01)
        landed = [future.done() for future in first]
        await one.put([outcome(0), outcome(2)])
        await one.put(None)
        await two.put([outcome(3)])
        await two.put(None)
        done = await asyncio.gather(*first, later)
        return handle.calls, landed, [o.source for o in done]

    calls, landed, sources = asyncio.run(scenario())
    assert calls == [[0, 1, 2], [3]]
    assert landed == [False, True, False]  # a quick segment is not held back by its batch
    assert sources == ["0.md", "1.md", "2.md", "3.md"]


def test_a_worker_holding_many_segments_gets_the_next_ones_gathered_into_one_call() -> None:
    async def scenario() -> list[list[int]]:
        handle = StreamingHandle()
        batches = WorkerBatches(handle)
        held = [batches.run(job(i)) for i in range(GATHER_WHEN)]
        await asyncio.sleep(0)  # one turn: the first call goes at once
        for i in range(GATHER_WHEN, GATHER_WHEN + 3):  # three turns, within GATHER_S
            batches.run(job(i))
            await asyncio.sleep(0)
        assert len(handle.calls) == 1  # gathering
        await asyncio.sleep(GATHER_S * 3)
        [stream, _] = handle.streams
        await stream.put([outcome(i) for i in range(GATHER_WHEN)])
        await asyncio.gather(*held)
        batches.run(job(99))  # the worker holds 3 now: no gathering
        await asyncio.sleep(0)
        return handle.calls

    calls = asyncio.run(scenario())
    assert calls == [list(range(GATHER_WHEN)), [16, 17, 18], [99]]


def test_a_stream_that_fails_fails_only_the_segments_still_out() -> None:
    class WorkerDied(Exception):
        pass

    async def scenario() -> tuple[SegmentOutcome, BaseException | None]:
        handle = StreamingHandle()
        batches = WorkerBatches(handle)
        futures = [batches.run(job(i)) for i in range(2)]
        await asyncio.sleep(0.01)
        [stream] = handle.streams
        await stream.put([outcome(0)])
        await stream.put(WorkerDied("the actor died"))
        finished = await futures[0]
        with pytest.raises(WorkerDied):
            await futures[1]
        return finished, futures[1].exception()

    finished, error = asyncio.run(scenario())
    assert finished.status == "written" and isinstance(error, Exception)


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


def test_a_worker_holding_few_yields_each_outcome_as_it_finishes() -> None:
    async def scenario() -> tuple[list[list[int]], int]:
        held = Outstanding()
        gates = [asyncio.Event() for _ in range(3)]

        async def segment(i: int) -> int:
            await gates[i].wait()
            return i

        items: list[list[int]] = []
        stream = held.stream([asyncio.ensure_future(segment(i)) for i in range(3)])

        async def consume() -> None:
            async for item in stream:
                items.append(item)

        consumer = asyncio.ensure_future(consume())
        for gate in gates:
            gate.set()
            await asyncio.sleep(0.01)
        await consumer
        return items, held.count

    assert asyncio.run(scenario()) == ([[0], [1], [2]], 0)


def test_a_worker_holding_many_gathers_outcomes_that_finish_close_together() -> None:
    async def scenario() -> tuple[list[list[int]], int, int]:
        held = Outstanding()
        count = GATHER_WHEN + 2
        gate = asyncio.Event()

        async def segment(i: int) -> int:
            if i < 2:
                await asyncio.sleep(0.001 * i)  # two finish a moment apart
                return i
            await gate.wait()
            return i

        items: list[list[int]] = []
        stream = held.stream([asyncio.ensure_future(segment(i)) for i in range(count)])
        async for item in stream:
            items.append(sorted(item))
            if len(items) == 1:
                holding = held.count  # the rest, after the first item
                gate.set()
        return items, holding, held.count

    items, holding, after = asyncio.run(scenario())
    assert items[0] == [0, 1]  # gathered into one item: the worker holds GATHER_WHEN more
    assert holding == GATHER_WHEN and after == 0
    assert sorted(i for item in items for i in item) == list(range(GATHER_WHEN + 2))


def test_closing_the_stream_early_cancels_the_rest_and_forgets_them() -> None:
    async def scenario() -> tuple[int, bool]:
        held = Outstanding()

        async def segment(i: int) -> int:
            if i:
                await asyncio.sleep(60)
            return i

        tasks = [asyncio.ensure_future(segment(i)) for i in range(3)]
        stream = held.stream(tasks)
        assert await anext(stream) == [0]
        await stream.aclose()  # the driver's call went away
        await asyncio.sleep(0)
        return held.count, all(task.cancelled() for task in tasks[1:])

    assert asyncio.run(scenario()) == (0, True)


def test_a_run_starts_the_workers_asked_for_but_never_more_than_its_segments() -> None:
    assert worker_count(2, 1) == 1
    assert worker_count(2, 3) == 2
    assert worker_count(4, 4) == 4
    assert worker_count(8, 0) == 1  # an empty corpus never dispatches; one is the floor
