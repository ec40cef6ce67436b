"""The pool's pace (gateway/pace.py): on the wire and waiting, integrated over a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from taguru_ray.gateway.pace import Pace
from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import Usage


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_levels_integrate_between_marks_and_the_peak_starts_over() -> None:
    pace = Pace(at=0.0)
    pace.mark(1.0, 4, None)  # nothing on the wire for a second
    pace.mark(3.0, 2, "limit")  # four for two seconds
    pace.finished(0.5, "ok")
    pace.finished(1.5, "ok")
    pace.finished(9.0, "http_429")
    taken = pace.take(4.0)  # two for a second, waiting on the limit
    assert taken["wire_s"] == 10.0 and taken["peak"] == 4
    assert taken["waited_limit_s"] == 1.0 and taken["waited_pause_s"] == 0.0
    assert (taken["requests"], taken["throttled"], taken["latency"]) == (3, 1, 1.0)
    again = pace.take(5.0)
    assert again["peak"] == 2 and again["latency"] is None and again["wire_s"] == 12.0


def test_a_clock_running_backwards_adds_nothing() -> None:
    pace = Pace(at=5.0, wire=3)
    pace.mark(4.0, 1, None)
    assert pace.wire_s == 0.0 and pace.at == 5.0


def test_the_pool_marks_grants_releases_and_why_requests_wait() -> None:
    clock = Clock()

    async def scenario() -> dict[str, float | int | None]:
        pool = PermitPool(["http://a"], 2, clock=clock)
        first = await pool.acquire("w")
        await pool.acquire("w")
        clock.now = 1.0
        waiting = asyncio.create_task(pool.acquire("w"))
        await asyncio.sleep(0)  # queued behind the full limit
        clock.now = 3.0
        await pool.release(first.lease_id, Usage("ok", 0.25))
        await asyncio.wait_for(waiting, 1)
        clock.now = 4.0
        return pool.pace.take(clock.now)

    taken = asyncio.run(scenario())
    assert taken["wire_s"] == pytest.approx(8.0)  # two on the wire for four seconds
    assert taken["waited_limit_s"] == pytest.approx(2.0)  # the third waited from 1 s to 3 s
    assert (taken["requests"], taken["latency"], taken["peak"]) == (1, 0.25, 2)


def test_a_rate_ceiling_is_a_rate_wait() -> None:
    clock = Clock()

    async def scenario() -> dict[str, float | int | None]:
        pool = PermitPool(["http://a"], 10, rpm=1, clock=clock)
        await pool.acquire("w")
        waiting = asyncio.create_task(pool.acquire("w"))
        await asyncio.sleep(0)
        clock.now = 2.0
        taken = pool.pace.take(clock.now)
        waiting.cancel()
        return taken

    taken = asyncio.run(scenario())
    assert taken["waited_rate_s"] == pytest.approx(2.0) and taken["waited_limit_s"] == 0.0
