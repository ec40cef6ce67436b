"""The run's admission control, without Ray: caps, windows, endpoint health, stopping."""

from __future__ import annotations

import asyncio

import pytest

from taguru_ray.llm.admission import PermitPool, Stopped
from taguru_ray.llm.client import Usage
from taguru_ray.llm.concurrency import AdaptiveLimit

OK = Usage("ok", 0.1)


def pool(**kwargs: object) -> PermitPool:
    defaults: dict[str, object] = {"urls": ["http://a", "http://b"], "limit": 4}
    return PermitPool(**{**defaults, **kwargs})  # type: ignore[arg-type]


def test_leases_balance_by_least_in_flight() -> None:
    async def scenario() -> list[int]:
        p = pool()
        leases = [await p.acquire("w", 0) for _ in range(4)]
        await p.release(leases[0].lease_id, OK)  # endpoint a now has one in flight
        again = await p.acquire("w", 0)
        return [lease.endpoint for lease in leases] + [again.endpoint]

    assert asyncio.run(scenario()) == [0, 1, 0, 1, 0]


def test_the_in_flight_cap_holds_across_callers() -> None:
    async def scenario() -> tuple[int, bool]:
        p = pool(limit=2)
        first = await p.acquire("w", 0)
        await p.acquire("w", 0)
        waiting = asyncio.create_task(p.acquire("w", 0))
        await asyncio.sleep(0.05)
        blocked = not waiting.done()
        await p.release(first.lease_id, OK)
        await asyncio.wait_for(waiting, 1)
        return p.max_in_flight, blocked

    assert asyncio.run(scenario()) == (2, True)


def test_requests_per_minute_slide_over_the_window() -> None:
    async def scenario() -> tuple[bool, bool]:
        p = pool(limit=100, rpm=2, window=0.3)
        for _ in range(2):
            lease = await p.acquire("w", 0)
            await p.release(lease.lease_id, OK)
        third = asyncio.create_task(p.acquire("w", 0))
        await asyncio.sleep(0.1)
        held = not third.done()
        await asyncio.wait_for(third, 1)  # admitted once the first request slid out
        return held, third.done()

    assert asyncio.run(scenario()) == (True, True)


def test_estimated_tokens_per_minute_are_a_ceiling_too() -> None:
    async def scenario() -> bool:
        p = pool(limit=100, tpm=1000, window=0.3)
        lease = await p.acquire("w", 800)
        await p.release(lease.lease_id, OK)
        second = asyncio.create_task(p.acquire("w", 300))
        await asyncio.sleep(0.1)
        held = not second.done()
        await asyncio.wait_for(second, 1)
        return held

    assert asyncio.run(scenario())


def test_a_429_retry_after_pauses_the_endpoint_for_every_caller() -> None:
    async def scenario() -> list[int]:
        p = pool(urls=["http://only"], limit=10)
        lease = await p.acquire("w", 0)
        await p.release(lease.lease_id, Usage("http_429", 0.01, retry_after=0.3))
        started = asyncio.get_running_loop().time()
        await p.acquire("other worker", 0)
        waited = asyncio.get_running_loop().time() - started
        return [int(waited >= 0.25)]

    assert asyncio.run(scenario()) == [1]


def test_a_paused_endpoint_leaves_its_traffic_to_the_others() -> None:
    async def scenario() -> int:
        p = pool()
        lease = await p.acquire("w", 0)
        await p.release(lease.lease_id, Usage("http_429", 0.01, retry_after=30))
        return (await p.acquire("w", 0)).endpoint

    assert asyncio.run(scenario()) == 1


def test_an_endpoint_that_keeps_failing_is_rested() -> None:
    async def scenario() -> list[int]:
        p = pool()
        for _ in range(3):
            lease = await p.acquire("w", 0)
            while lease.endpoint != 0:
                await p.release(lease.lease_id, OK)
                lease = await p.acquire("w", 0)
            await p.release(lease.lease_id, Usage("http_503", 0.01))
        return [(await p.acquire("w", 0)).endpoint for _ in range(3)]

    assert asyncio.run(scenario()) == [1, 1, 1]


def test_stopping_refuses_every_waiting_and_later_permit() -> None:
    async def scenario() -> tuple[bool, bool]:
        p = pool(limit=1)
        await p.acquire("w", 0)
        waiting = asyncio.create_task(p.acquire("w", 0))
        await asyncio.sleep(0.02)
        await p.stop()
        with pytest.raises(Stopped):
            await waiting
        with pytest.raises(Stopped):
            await p.acquire("w", 0)
        return True, p.stopped

    assert asyncio.run(scenario()) == (True, True)


def test_a_restarted_worker_frees_the_permits_its_dead_incarnation_held() -> None:
    async def scenario() -> int:
        p = pool(limit=2)
        p.register(0, "w0-a")
        await p.acquire("w0-a", 0)
        await p.acquire("w0-a", 0)
        p.register(0, "w0-b")  # the actor was restarted
        await asyncio.wait_for(p.acquire("w0-b", 0), 1)
        return p.in_flight

    assert asyncio.run(scenario()) == 1


def test_a_waiter_is_woken_when_a_dead_incarnations_permits_are_freed() -> None:
    async def scenario() -> int:
        p = pool(limit=1)
        p.register(0, "w0-a")
        await p.acquire("w0-a", 0)
        waiting = asyncio.ensure_future(p.acquire("w1-a", 0))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        p.register(0, "w0-b")  # the actor holding the permit was restarted
        await p.wake()
        await asyncio.wait_for(waiting, 1)
        return p.in_flight

    assert asyncio.run(scenario()) == 1


def test_a_release_hands_its_permit_to_one_waiter_in_arrival_order() -> None:
    async def scenario() -> list[int]:
        p = pool(limit=2)
        first = [await p.acquire("w", 0), await p.acquire("w", 0)]
        order: list[int] = []

        async def wait(n: int) -> None:
            await p.acquire("w", 0)
            order.append(n)

        waiters = [asyncio.ensure_future(wait(n)) for n in range(5)]
        await asyncio.sleep(0.01)
        await p.release(first[0].lease_id, Usage("ok", 0.1))
        await asyncio.sleep(0.01)
        assert order == [0]  # one permit freed, one waiter through
        await p.release(first[1].lease_id, Usage("ok", 0.1))
        await asyncio.sleep(0.01)
        for waiter in waiters:
            waiter.cancel()
        return order

    assert asyncio.run(scenario()) == [0, 1]


def test_adaptive_concurrency_settles_at_the_servers_knee() -> None:
    """A server with C slots and latency L: queueing past C makes latency climb.

    Each request's latency is set by the in-flight level it was admitted at, one
    request at a time, so a window can straddle a change of the limit as it does
    on a real run.
    """
    knee, unloaded = 64, 0.2
    limit = AdaptiveLimit()
    levels = []
    for _ in range(40_000):
        level = limit.limit  # the run keeps the limit full
        limit.observe(unloaded * max(1.0, level / knee), "ok", level)
        levels.append(limit.limit)
    settled = levels[-5_000:]
    assert knee * 0.9 <= min(settled) and max(settled) <= knee * 1.5
    assert limit.changes  # every move is reported


def test_one_slow_window_neither_shrinks_the_limit_nor_ends_slow_start() -> None:
    limit = AdaptiveLimit()
    for _ in range(8):
        limit.observe(0.2, "ok", 8)
    assert limit.limit == 16
    for _ in range(16):  # a client-side hiccup: one window half again as slow
        limit.observe(0.3, "ok", 16)
    assert limit.limit == 16 and limit.slow_start
    for _ in range(16):
        limit.observe(0.2, "ok", 16)
    assert limit.limit == 32  # still doubling
    for _ in range(2 * 32):  # two slow windows in a row: queueing, the limit shrinks
        limit.observe(0.3, "ok", 32)
    assert limit.limit < 32 and not limit.slow_start


def test_doubling_stops_once_latency_starts_to_rise() -> None:
    limit = AdaptiveLimit()
    for level in (8, 16, 32):  # unloaded: doubling
        for _ in range(level):
            limit.observe(0.2, "ok", level)
    assert limit.limit == 64 and limit.slow_start
    for _ in range(64):  # near the knee: within the tolerance, but rising
        limit.observe(0.23, "ok", 64)
    assert limit.limit == 80 and not limit.slow_start  # a quarter more, not twice


def test_the_queue_an_old_limit_built_is_not_judged_after_a_shrink() -> None:
    limit = AdaptiveLimit(limit=128, baseline=0.2, slow_start=False)
    for _ in range(2 * 128):  # two slow windows: queueing
        limit.observe(0.4, "ok", 128)
    assert limit.limit == 70  # 128 x 0.2 / 0.4 x 1.1
    for _ in range(128):  # the requests the old limit let in drain, still slow
        limit.observe(0.4, "ok", 100)
    assert limit.limit == 70  # not shrunk again on their account
    for _ in range(70):  # what the new limit lets in is judged
        limit.observe(0.2, "ok", 70)
    assert limit.limit == 87


def test_adaptive_concurrency_halves_on_overload_and_never_grows_unused() -> None:
    limit = AdaptiveLimit(limit=40)
    limit.observe(1.0, "http_503", 40)
    assert limit.limit == 20
    for _ in range(200):
        limit.observe(0.2, "ok", 3)  # the run never fills the limit
    assert limit.limit == 20
