"""The pool's endpoints come and go with the run's own replicas (--engine): added as they
start, retired when lost — a fake clock, no Ray, no network."""

from __future__ import annotations

import asyncio

import pytest

from taguru_ray.engine.bound import Caps, Sample, judge, observe
from taguru_ray.gateway.fail_fast import FatalStreak
from taguru_ray.gateway.paused import words
from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import Usage


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_retired_endpoint_is_never_granted_and_its_failures_count_against_nothing() -> None:
    clock = Clock()

    async def scenario() -> PermitPool:
        pool = PermitPool(["http://a/v1", "http://b/v1"], 8, clock=clock, replicas=2)
        leases = [await pool.acquire("w") for _ in range(6)]
        on_b = [lease for lease in leases if lease.endpoint == 1]
        assert len(on_b) == 3
        pool.retire(1)
        for lease in on_b:  # the lost replica's requests fail: no rest, no adaptive move
            await pool.release(lease.lease_id, Usage("transport", 0.1))
        again = [await pool.acquire("w") for _ in range(3)]
        assert [lease.endpoint for lease in again] == [0, 0, 0]
        return pool

    pool = asyncio.run(scenario())
    lost = pool.endpoints[1]
    assert lost.retired and lost.failures == 0 and lost.rested_until == 0.0
    assert pool.outcomes["transport"] == 3  # still counted among the run's outcomes
    assert pool.addresses() == ["http://a/v1", "http://b/v1"]


def test_requests_wait_for_the_engine_while_no_replica_is_up_and_go_when_one_is() -> None:
    clock = Clock()

    async def scenario() -> tuple[int, dict[str, object] | None, dict[str, float | int | None]]:
        pool = PermitPool(["http://a/v1"], 4, clock=clock, replicas=1)
        pool.retire(0)
        waiting = asyncio.create_task(pool.acquire("w"))
        await asyncio.sleep(0)
        clock.now = 30.0
        paused = pool.paused()
        index = pool.add("http://c/v1")  # its replacement is up: a new index, for good
        lease = await asyncio.wait_for(waiting, 1)
        assert lease.endpoint == index == 1
        clock.now = 31.0
        return index, paused, pool.pace.take(clock.now)

    _, paused, taken = asyncio.run(scenario())
    assert paused is not None and paused["why"] == "engine"
    assert words(paused) == "waiting 30s for a replica of the engine (none is up)"
    assert taken["waited_engine_s"] == pytest.approx(30.0)
    assert taken["short_s"] == pytest.approx(30.0)  # one replica missing for 30 s


def test_kept_permits_are_not_held_back_by_a_retired_endpoint() -> None:
    pool = PermitPool(["http://a/v1", "http://b/v1"], 4, replicas=2)
    pool.retire(1)
    assert pool.keep("w") == 4


def test_fail_fast_counts_an_added_endpoint() -> None:
    streak = FatalStreak(1)
    streak.grow(2)
    assert [streak.observe(1, "http_404") for _ in range(3)] == [None, None, 404]


def sample(at: float, requests: int, **fields: float) -> Sample:
    return Sample(at=at, requests=requests, throttled=0, limit=8, replicas=2, **fields)  # type: ignore[arg-type]


CAPS = Caps(window=512, width=1, adaptive=True, ceiling=512)


def test_the_bound_names_the_engine_when_requests_waited_with_no_replica_up() -> None:
    samples = [
        sample(0, 0),
        sample(10, 10, wire_s=40, waited_engine_s=0),
        sample(20, 20, wire_s=60, waited_engine_s=6, short_s=12),
        sample(30, 100, wire_s=140, waited_engine_s=6, short_s=12),
    ]
    seen = observe(samples)
    assert seen is not None
    bound = judge(seen, CAPS)
    assert bound.word == "engine" and "no replica was up" in bound.why


def test_replicas_down_for_a_while_name_the_engine_over_the_endpoint_they_left() -> None:
    samples = [
        sample(0, 0),
        sample(10, 10, wire_s=75, waited_limit_s=5),
        sample(20, 50, wire_s=155, waited_limit_s=10, short_s=8),
        sample(30, 100, wire_s=235, waited_limit_s=15, short_s=8),
    ]
    seen = observe(samples)
    assert seen is not None
    bound = judge(seen, CAPS)
    assert bound.word == "engine" and bound.why.startswith("replicas were down or starting")
