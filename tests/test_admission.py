"""The run's admission control, without Ray: caps, windows, endpoint health, stopping."""

from __future__ import annotations

import asyncio
import heapq
import random
import statistics

import pytest

from taguru_ray.gateway.limits import DOWN, AdaptiveLimit
from taguru_ray.gateway.numbering import AttemptNumbers
from taguru_ray.gateway.pool import Lease, PermitPool, Stopped
from taguru_ray.llm.client import Usage

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


def test_a_pause_is_capped_at_30_s_whatever_retry_after_says() -> None:
    async def scenario() -> list[float]:
        now = [1000.0]
        p = pool(urls=["http://only"], limit=10, clock=lambda: now[0])
        pauses = []
        for asked in (100000.0, float("inf")):
            lease = await p.acquire("w", 0)
            await p.release(lease.lease_id, Usage("http_429", 0.01, retry_after=asked))
            pauses.append(p.endpoints[0].paused_until - now[0])
            now[0] += 31.0  # past any capped pause
        return pauses

    capped, after_inf = asyncio.run(scenario())
    assert capped == 30.0 and after_inf < 0  # inf is malformed: it sets no pause


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


def _serve(
    limit: AdaptiveLimit, slots: int, service: float, gap: float, completions: int
) -> list[tuple[float, int]]:
    """A server with `slots` slots and a fixed service time, FIFO past them, and a
    client that keeps `limit.limit` requests out and takes `gap` seconds to turn
    each round (half on the way there, half back). Service times and gaps vary by
    ±20 %, deterministically. Returns (finish time, limit after it) per completion."""
    rng = random.Random(7)
    free = [0.0] * slots  # when each slot frees, as a heap
    out: list[tuple[float, float]] = []  # (client sees the answer, sent), a heap
    now, seen = 0.0, []
    while len(seen) < completions:
        while len(out) < limit.limit:
            start = max(now + gap / 2, heapq.heappop(free))
            done = start + service * rng.uniform(0.8, 1.2)
            heapq.heappush(free, done)
            heapq.heappush(out, (done + gap / 2 * rng.uniform(0.6, 1.4), now))
        now, sent = heapq.heappop(out)
        limit.observe(now - sent, "ok", len(out) + 1, now)
        seen.append((now, limit.limit))
    return seen


def _settled(seen: list[tuple[float, int]]) -> tuple[float, float]:
    """The second half's completions per second and its median limit."""
    half = seen[len(seen) // 2 :]
    rate = (len(half) - 1) / (half[-1][0] - half[0][0])
    return rate, statistics.median(level for _, level in half)


def test_adaptive_concurrency_holds_where_throughput_stops_rising() -> None:
    """64 slots, 200 ms: 320/s at most. A client that needs 50 ms to turn a request
    round needs about 80 in flight to keep 64 slots busy; one that needs none, 64."""
    rate, level = _settled(_serve(AdaptiveLimit(), 64, 0.2, 0.05, 30_000))
    assert rate >= 0.95 * 320
    assert 64 < level <= 200  # past the slots: the client's turnaround needs covering
    rate, level = _settled(_serve(AdaptiveLimit(), 64, 0.2, 0.0, 30_000))
    assert rate >= 0.95 * 320 and level <= 200


def test_a_server_with_a_few_slots_is_found_from_far_above() -> None:
    """Three slots: slow start's 32 in flight is already ten times too many. The probes
    down bring the level to the plateau's start, and throughput never suffers."""
    limit = AdaptiveLimit()
    rate, level = _settled(_serve(limit, 3, 0.15, 0.0, 6_000))
    assert rate >= 0.95 * 20
    assert level <= 8
    assert limit.changes  # every move is reported


def _feed(limit: AdaptiveLimit, count: int, latency: float, per_s: float, start: float) -> float:
    """`count` completions at a steady `per_s`, the limit kept full; returns the clock."""
    now = start
    for _ in range(count):
        now += 1 / per_s
        limit.observe(latency, "ok", limit.limit, now)
    return now


def _probing(level: int) -> tuple[AdaptiveLimit, float]:
    """A limit past slow start, holding `level`, its throughput measured: 300/s."""
    limit = AdaptiveLimit(limit=level, baseline=0.2, slow_start=False, held=level)
    return limit, _feed(limit, 2 * level, 0.25, 300.0, 0.0)


def test_one_slow_window_does_not_end_slow_start() -> None:
    limit = AdaptiveLimit()
    now = _feed(limit, 32, 0.2, 160.0, 0.0)
    assert limit.limit == 64
    now = _feed(limit, 64, 0.3, 210.0, now)  # a client-side hiccup: half again as slow
    assert limit.limit == 64 and limit.slow_start
    now = _feed(limit, 64, 0.2, 320.0, now)
    assert limit.limit == 128  # still doubling
    for _ in range(2):  # two slow windows in a row: the knee
        now = _feed(limit, 128, 0.3, 420.0, now)
    assert not limit.slow_start and limit.held == 128


def test_doubling_stops_once_latency_starts_to_rise_and_the_first_probe_goes_up() -> None:
    limit = AdaptiveLimit()
    now = _feed(limit, 32, 0.2, 160.0, 0.0)
    now = _feed(limit, 64, 0.23, 280.0, now)  # within the hiccup allowance, but rising
    assert not limit.slow_start and limit.limit == 64
    now = _feed(limit, 64, 0.23, 280.0, now)  # the previous level's requests: unjudged
    now = _feed(limit, 128, 0.23, 280.0, now)  # the held level's throughput
    assert limit.held_rate == pytest.approx(280.0) and limit.limit == 96


def test_a_probe_up_is_kept_only_when_throughput_rises() -> None:
    limit, now = _probing(64)
    assert limit.limit == 96 and limit.held == 64  # probing up, half again
    now = _feed(limit, 64, 0.3, 300.0, now)  # settling: the 64 admitted before
    now = _feed(limit, 192, 0.3, 306.0, now)  # 2 % more: not worth the queue
    assert limit.limit == 64 and limit.held == 64
    limit, now = _probing(64)
    now = _feed(limit, 64, 0.3, 300.0, now)
    now = _feed(limit, 192, 0.3, 345.0, now)  # 15 % more: kept, and on up at once
    assert limit.held == 96 and limit.held_rate == pytest.approx(345.0)
    assert limit.limit == 144
    assert limit.changes[-1]["completions_per_s"] == pytest.approx(345.0)


def test_a_probe_up_the_run_cannot_fill_ends_once_the_old_level_is_done() -> None:
    limit, now = _probing(64)
    assert limit.limit == 96
    for _ in range(64):  # the old level's requests finish; the run never passes 70
        now += 1 / 300
        limit.observe(0.3, "ok", 70, now)
    assert limit.limit == 64 and limit.held == 64  # back at once, not after a window


def test_a_probe_down_is_kept_when_throughput_holds() -> None:
    limit = AdaptiveLimit(limit=192, baseline=0.2, slow_start=False, held=192, next_probe=DOWN)
    now = _feed(limit, 384, 0.6, 300.0, 0.0)  # latency tripled: a queue at the server
    assert limit.limit == 128
    now = _feed(limit, 192, 0.6, 300.0, now)  # settling
    now = _feed(limit, 256, 0.4, 301.0, now)  # as fast, a third fewer in flight
    assert limit.held == 128 and limit.limit == 85  # kept; on down at once
    now = _feed(limit, 128, 0.4, 300.0, now)
    now = _feed(limit, 170, 0.3, 240.0, now)  # too few: back, and up next time
    assert limit.limit == 128 and limit.held == 128


def test_a_level_the_run_does_not_fill_is_never_probed() -> None:
    limit = AdaptiveLimit(limit=64, baseline=0.2, slow_start=False, held=64)
    now = 0.0
    for _ in range(1_000):
        now += 1 / 100
        limit.observe(0.2, "ok", 20, now)  # 20 in flight of 64: the run lacks work
    assert limit.limit == 64 and not limit.changes


def test_adaptive_concurrency_halves_on_overload_and_never_grows_unused() -> None:
    limit = AdaptiveLimit(limit=40)
    limit.observe(1.0, "http_503", 40, 0.0)
    assert limit.limit == 20 and not limit.slow_start
    limit.observe(1.0, "timeout", 20, 0.1)
    assert limit.limit == 10
    now = 0.1
    for _ in range(400):
        now += 0.01
        limit.observe(0.2, "ok", 3, now)  # the run never fills the limit
    assert limit.limit == 10


def test_a_worker_keeps_every_permit_while_nobody_else_waits() -> None:
    async def scenario() -> tuple[int, int]:
        p = pool(limit=4)
        for _ in range(4):
            await p.acquire("a", 0)
        alone = p.keep("a")
        waiting = asyncio.ensure_future(p.acquire("b", 0))
        await asyncio.sleep(0)
        shared = p.keep("a")
        waiting.cancel()
        return alone, shared

    # With b waiting, a keeps its fair share: its extra permits go back through the queue.
    assert asyncio.run(scenario()) == (4, 2)


def test_no_permit_is_kept_under_a_ceiling_a_pause_or_a_stop() -> None:
    async def scenario() -> list[int]:
        ceiling = pool(rpm=100)
        await ceiling.acquire("a", 0)
        paused = pool(limit=4)
        lease = await paused.acquire("a", 0)
        await paused.release(lease.lease_id, Usage("http_429", 0.01, retry_after=30))
        await paused.acquire("a", 0)
        stopped = pool(limit=4)
        await stopped.acquire("a", 0)
        await stopped.stop()
        return [ceiling.keep("a"), paused.keep("a"), stopped.keep("a")]

    assert asyncio.run(scenario()) == [0, 0, 0]


def test_a_lower_limit_makes_a_worker_give_back_the_excess() -> None:
    async def scenario() -> int:
        p = pool(limit=None)  # adaptive
        assert p.adaptive is not None
        for _ in range(8):
            await p.acquire("a", 0)
        p.adaptive.limit = 5
        return p.keep("a")

    assert asyncio.run(scenario()) == 5


def test_a_kept_permits_outcome_counts_as_a_release_would_and_keeps_the_permit() -> None:
    async def scenario() -> tuple[int, dict[str, int], int, int]:
        p = pool(limit=2)
        lease = await p.acquire("a", 0)
        p.renew(lease.endpoint, Usage("ok", 0.2, 30, 7), ago=0.05)
        await p.release(lease.lease_id, Usage("ok", 0.2, 1, 1))  # the next request's
        p.renew(lease.endpoint, Usage("ok", 0.2, 2, 2))  # a late report: still counted
        return p.in_flight, dict(p.outcomes), p.input_tokens, p.endpoints[0].completions

    assert asyncio.run(scenario()) == (0, {"ok": 3}, 33, 3)


def test_attempts_are_numbered_in_blocks_without_gaps() -> None:
    numbers = AttemptNumbers()
    assert [numbers.next(), numbers.take(3), numbers.take(2)] == [1, 2, 5]
    assert numbers.issued == 6


def test_a_report_grants_what_a_risen_limit_allows() -> None:
    """With every permit kept, reports are the only news the pool gets: a limit the
    controller raised on them must reach the requests waiting at once."""

    async def scenario() -> bool:
        p = pool(limit=None)
        assert p.adaptive is not None
        held = [await p.acquire("a", 0) for _ in range(p.adaptive.limit)]
        waiting = asyncio.ensure_future(p.acquire("a", 0))
        await asyncio.sleep(0)
        p.adaptive.limit += 1
        p.renew(held[0].endpoint, OK)
        await asyncio.sleep(0)
        return waiting.done()

    assert asyncio.run(scenario())


def test_slow_start_ends_at_the_level_the_run_fills_when_it_stops_filling_more() -> None:
    """A CPU-bound client: latency never rises, because the client cannot send more
    than about 80 at once. Slow start must not sit at a ceiling the run never fills
    (its bursts overrun the server); it holds the level the run keeps full."""
    limit = AdaptiveLimit()
    now = _feed(limit, 32, 0.2, 160.0, 0.0)
    now = _feed(limit, 64, 0.2, 300.0, now)
    assert limit.limit == 128 and limit.slow_start
    for _ in range(128):
        now += 1 / 300
        limit.observe(0.2, "ok", 80, now)  # the run fills 80 of 128 at most
    assert not limit.slow_start and limit.limit == 89 and limit.held == 89


async def _watched_pool(permits: int) -> tuple[PermitPool, list[int], list[Lease]]:
    """An adaptive pool with `permits` taken by worker "a", and the list the in-flight
    counts its controller is shown land in."""
    p = pool(limit=None)
    assert p.adaptive is not None
    seen: list[int] = []
    p.adaptive.observe = lambda latency, outcome, in_flight, now: seen.append(in_flight)  # type: ignore[method-assign]
    return p, seen, [await p.acquire("a", 0) for _ in range(permits)]


def test_permits_idle_at_their_workers_are_not_counted_on_the_wire() -> None:
    async def scenario() -> list[int]:
        p, seen, leases = await _watched_pool(10)
        p.idle("a", 4)
        p.renew(leases[0].endpoint, OK)
        await p.release(leases[1].lease_id, OK)
        p.idle("a", 0)
        p.renew(leases[0].endpoint, OK)
        return seen

    # 10 out, 4 idle: 6 on the wire; the released one counts as it ended; then 9 on the wire.
    assert asyncio.run(scenario()) == [6, 6, 9]


def test_an_idle_permit_given_back_updates_the_idle_count_it_leaves() -> None:
    async def scenario() -> list[int]:
        p, seen, leases = await _watched_pool(10)
        p.idle("a", 3)
        await p.give_back(leases[9].lease_id, idle=2)  # one of the three idle went back
        p.renew(leases[0].endpoint, OK)
        return seen

    # 9 out, 2 of them idle: 7 on the wire (a stale count of 3 would say 6).
    assert asyncio.run(scenario()) == [7]


def test_idle_permits_given_back_together_free_each_and_wake_one_waiter_each() -> None:
    async def scenario() -> tuple[list[int], int, bool]:
        p, seen, leases = await _watched_pool(10)
        p.idle("a", 4)
        waiting = asyncio.create_task(p.acquire("b", 0))  # the pool's limit is all out
        await asyncio.sleep(0.01)
        await p.give_back_many([leases[6].lease_id, leases[7].lease_id, 999], idle=2)
        granted = await asyncio.wait_for(waiting, 1)
        p.renew(leases[0].endpoint, OK)
        return seen, p.in_flight, granted.lease_id not in {lease.lease_id for lease in leases}

    seen, in_flight, new = asyncio.run(scenario())
    # Two of "a"'s four idle went back (the unknown lease is ignored); "b" got one:
    # 9 out, 2 of them idle at "a", so 7 on the wire.
    assert (seen, in_flight, new) == ([7], 9, True)


def test_a_forgotten_worker_frees_its_permits_and_its_queued_requests_get_none() -> None:
    async def scenario() -> tuple[int, bool]:
        p = pool(urls=["http://only"], limit=2)
        p.register(0, "0-dead")
        held = [await p.acquire("0-dead", 0) for _ in range(2)]
        queued = asyncio.create_task(p.acquire("0-dead", 0))  # its caller died with it
        survivor = asyncio.create_task(p.acquire("1-alive", 0))
        await asyncio.sleep(0.05)
        assert not survivor.done()  # every permit is out, with a worker that is gone
        p.forget(0, "0-restarted")  # not the incarnation that holds them: nothing freed
        assert p.in_flight == 2
        p.forget(0, "0-dead")
        lease = await asyncio.wait_for(survivor, 1)
        await asyncio.sleep(0)
        assert queued.cancelled()
        await p.release(held[0].lease_id, OK)  # a late release of a freed lease: ignored
        return lease.endpoint, p.in_flight == 1

    assert asyncio.run(scenario()) == (0, True)


def test_a_dead_workers_permits_come_back_without_resting_any_endpoint() -> None:
    """A spot node taken back kills a worker holding permits on both endpoints: its
    successor's registration frees them, cancels the dead one's queued requests, and
    counts nothing against the endpoints — which answered nothing wrong."""

    async def scenario() -> tuple[list[bool], bool, int, dict[str, int]]:
        p = pool(limit=6)
        p.register(0, "0-dead")
        held = [await p.acquire("0-dead", 0) for _ in range(6)]  # three on each endpoint
        queued = asyncio.create_task(p.acquire("0-dead", 0))
        await asyncio.sleep(0.01)
        p.register(0, "0-successor")
        await p.wake()
        await asyncio.sleep(0)
        fresh = [await asyncio.wait_for(p.acquire("0-successor", 0), 1) for _ in range(6)]
        now = p.clock()
        ready = [endpoint.ready(now) for endpoint in p.endpoints]
        return ready, queued.cancelled(), len(held) + len(fresh), dict(p.outcomes)

    ready, cancelled, granted, outcomes = asyncio.run(scenario())
    assert ready == [True, True]  # neither endpoint rested
    assert cancelled and granted == 12
    assert outcomes == {"lost": 6}
