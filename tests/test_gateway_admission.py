"""A worker's admission over the real Gateway actor: swaps, local waiters, stopping."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from taguru_ray.gateway import kept
from taguru_ray.gateway.actor import Gateway
from taguru_ray.gateway.kept import ASKING, GatewayAdmission
from taguru_ray.gateway.pool import PermitPool, Stopped
from taguru_ray.llm.client import Usage


def test_many_requests_share_few_permits_numbered_once_each(ray_address: str) -> None:
    gateway = Gateway.remote(["http://unused"], 4)  # type: ignore[attr-defined]
    on_wire = {"now": 0, "max": 0}
    seqs: list[int] = []
    total = 3 * ASKING + 10

    async def scenario() -> dict:
        admission = GatewayAdmission(gateway, 0)
        await admission.register()

        async def request() -> None:
            lease, _, seq = await admission.acquire(10, True)
            on_wire["now"] += 1
            on_wire["max"] = max(on_wire["max"], on_wire["now"])
            await asyncio.sleep(0.01)
            on_wire["now"] -= 1
            await admission.release(lease, Usage("ok", 0.01, 5, 5))
            seqs.append(await seq)  # numbered by the worker's next report

        await asyncio.gather(*(request() for _ in range(3 * ASKING + 10)))
        await admission.flush()  # the run's end: idle permits go back
        for _ in range(100):  # the last releases and reports are not awaited
            stats = await gateway.stats.remote()
            if stats["in_flight"] == 0 and sum(stats["outcomes"].values()) == total:
                return stats
            await asyncio.sleep(0.05)
        return await gateway.stats.remote()

    stats = asyncio.run(scenario())
    assert on_wire["max"] <= 4
    assert sorted(seqs) == list(range(1, total + 1))  # every attempt numbered, once
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": total}
    assert stats["kept"] > 0  # most permits passed from request to request in the worker


def _waiting_through_a_stop(*, halt: bool, numbered: bool) -> list[str]:
    """A worker holding the one permit, with more requests waiting than ASKING, when
    the gateway stops (and, with `halt`, the worker is told too); then the permit's
    request ends well. What became of each waiting request."""
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]

    async def scenario() -> list[str]:
        admission = GatewayAdmission(gateway, 0)
        lease, _, _ = await admission.acquire(0, numbered)
        waiting = [asyncio.ensure_future(admission.acquire(0, numbered)) for _ in range(ASKING + 3)]
        await asyncio.sleep(0.2)
        await gateway.stop.remote()
        if halt:
            admission.halt()
        await admission.release(lease, Usage("ok", 0.01))
        done = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 10)
        return [type(result).__name__ for result in done]

    return asyncio.run(scenario())


def test_a_stop_refuses_every_request_waiting_at_the_worker(ray_address: str) -> None:
    # The driver tells the gateway and every worker (Stopping.halt).
    outcomes = _waiting_through_a_stop(halt=True, numbered=False)
    assert set(outcomes) == {Stopped.__name__}


def test_a_worker_learns_of_a_stop_from_its_next_report(ray_address: str) -> None:
    """Without the driver's word, a kept permit may start one more request; the report
    that request's number comes with says the run stops, and the rest are refused."""
    outcomes = _waiting_through_a_stop(halt=False, numbered=True)
    assert outcomes.count(Stopped.__name__) >= len(outcomes) - 1


def test_a_permit_granted_to_a_cancelled_request_goes_back_unused(ray_address: str) -> None:
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]

    async def scenario() -> dict:
        admission = GatewayAdmission(gateway, 0)
        lease, _, _ = await admission.acquire(0, False)
        waiter = asyncio.ensure_future(admission.acquire(0, False))
        await asyncio.sleep(0.2)
        waiter.cancel()
        await admission.release(lease, Usage("ok", 0.01))  # kept, idle: no one waits
        await admission.flush()  # the run's end gives it back
        for _ in range(100):
            stats = await gateway.stats.remote()
            if stats["in_flight"] == 0:
                break
            await asyncio.sleep(0.05)
        return stats

    stats = asyncio.run(scenario())
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": 1}


def test_a_returned_permit_goes_to_whoever_waited_longest() -> None:
    """A swap (release, then acquire at once) queues behind the callers already
    waiting: without that, one worker's swaps would pass its permits round among
    its newest requests while older ones, its own or another worker's, starved."""

    async def scenario() -> list[str]:
        pool = PermitPool(["u"], 2)
        held = [await pool.acquire("a", 0), await pool.acquire("a", 0)]
        order: list[str] = []

        async def wait_for_one(name: str, worker: str) -> Any:
            lease = await pool.acquire(worker, 0)
            order.append(name)
            return lease

        older = asyncio.ensure_future(wait_for_one("b's request", "b"))
        own = asyncio.ensure_future(wait_for_one("a's older request", "a"))
        await asyncio.sleep(0.01)
        # a's swap: its permit goes back, and its newest request asks at once.
        await pool.release(held[0].lease_id, Usage("ok", 0.1))
        newest = asyncio.ensure_future(wait_for_one("a's newest request", "a"))
        first = await asyncio.wait_for(older, 1)
        await pool.release(held[1].lease_id, Usage("ok", 0.1))
        second = await asyncio.wait_for(own, 1)
        await pool.give_back(first.lease_id)  # never used: no outcome counted
        await asyncio.wait_for(newest, 1)
        await pool.release(second.lease_id, Usage("ok", 0.1))
        assert pool.outcomes == {"ok": 3}
        return order

    assert asyncio.run(scenario()) == ["b's request", "a's older request", "a's newest request"]


def test_a_permit_left_free_reaches_a_caller_queued_behind_one_that_was_woken() -> None:
    """Queueing behind a woken caller must not strand the queued one when more
    permits are free than callers were woken."""

    async def scenario() -> int:
        pool = PermitPool(["u"], 3)
        held = [await pool.acquire("a", 0) for _ in range(3)]
        woken = asyncio.ensure_future(pool.acquire("a", 0))
        await asyncio.sleep(0.01)  # waiting
        behind = asyncio.ensure_future(pool.acquire("b", 0))  # runs once we yield
        await pool.release(held[0].lease_id, Usage("ok", 0.1))  # wakes `woken`
        await pool.release(held[1].lease_id, Usage("ok", 0.1))  # two permits free now
        # `behind` runs before `woken` resumes, sees it waiting and queues; only
        # `woken`'s grant can pass it the second permit, no release will.
        await asyncio.wait_for(asyncio.gather(woken, behind), 1)
        return pool.in_flight

    assert asyncio.run(scenario()) == 3


def test_the_oldest_segment_is_served_first_whenever_it_asked() -> None:
    """Segment i may start only once segment i-W has finished: a permit given to a
    newer segment's request while an older one waits holds the whole window back."""

    async def scenario() -> list[int]:
        pool = PermitPool(["u"], 1)
        held = await pool.acquire("a", 0, priority=0)
        order: list[int] = []

        async def segment(index: int) -> None:
            lease = await pool.acquire("a", 0, priority=index)
            order.append(index)
            await pool.release(lease.lease_id, Usage("ok", 0.1))

        waiting = [asyncio.ensure_future(segment(i)) for i in (5, 9, 3, 7)]
        await asyncio.sleep(0.01)
        await pool.release(held.lease_id, Usage("ok", 0.1))
        await asyncio.wait_for(asyncio.gather(*waiting), 1)
        return order

    assert asyncio.run(scenario()) == [3, 5, 7, 9]


def test_a_swap_hands_the_permit_to_an_older_request_than_those_waiting() -> None:
    async def scenario() -> list[str]:
        pool = PermitPool(["u"], 1)
        held = await pool.acquire("a", 0, priority=2)
        order: list[str] = []

        async def wait(name: str, priority: int) -> None:
            await pool.acquire("b", 0, priority=priority)
            order.append(name)

        newer = asyncio.ensure_future(wait("segment 8", 8))
        await asyncio.sleep(0.01)
        lease = await pool.swap(held.lease_id, Usage("ok", 0.1), "a", 0, priority=4)
        order.append("segment 4, by the swap")
        await pool.release(lease.lease_id, Usage("ok", 0.1))
        await asyncio.wait_for(newer, 1)
        return order

    assert asyncio.run(scenario()) == ["segment 4, by the swap", "segment 8"]


def test_a_worker_sends_its_oldest_requests_to_the_gateway_first(ray_address: str) -> None:
    """More requests than ASKING, arriving newest first: the first ASKING to arrive ask
    the gateway, the oldest wait at the worker; permits still go out oldest first."""
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]
    count = ASKING + 4

    async def scenario() -> list[int]:
        admission = GatewayAdmission(gateway, 0)
        await admission.register()
        held, _, _ = await admission.acquire(0, False)
        order: list[int] = []

        async def segment(index: int) -> None:
            lease, _, _ = await admission.acquire(0, False, index)  # the segment's place
            order.append(index)
            await asyncio.sleep(0.01)
            await admission.release(lease, Usage("ok", 0.01))

        # Arriving newest first: the first ASKING to arrive ask the gateway.
        tasks = []
        for index in reversed(range(count)):
            tasks.append(asyncio.ensure_future(segment(index)))
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # every asking request is queued at the gateway
        await admission.release(held, Usage("ok", 0.01))
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        return order

    # The held permit's release is a swap for the oldest waiting at the worker, and so
    # on; once none waits there, the gateway's queue goes on from the oldest that asked.
    assert asyncio.run(scenario()) == list(range(count))


def test_a_permit_no_request_waited_for_serves_the_next_one_or_goes_back(
    ray_address: str,
) -> None:
    """A worker's next request is usually milliseconds away: a kept permit waits for it
    at the worker, and goes back to the gateway once it has idled IDLE_S."""
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]

    async def scenario() -> tuple[int, int, bool, dict[str, Any]]:
        admission = GatewayAdmission(gateway, 0)
        await admission.register()
        first, _, _ = await admission.acquire(0, False)
        await admission.release(first, Usage("ok", 0.01))
        again, _, _ = await asyncio.wait_for(admission.acquire(0, False), 0.01)  # no call
        await admission.release(again, Usage("ok", 0.01))
        await admission.flush()  # reported, and the idle permit given back
        stats = await gateway.stats.remote()
        # The gateway can grant it again: another worker's request is served.
        other = GatewayAdmission(gateway, 1)
        await asyncio.wait_for(other.acquire(0, False), 10)
        return first, again, admission._idle == {}, stats

    first, again, returned, stats = asyncio.run(scenario())
    assert first == again and returned
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": 2} and stats["kept"] == 2


def test_a_worker_holding_idle_permits_hands_them_over_when_another_waits(
    ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle permits stay at their worker a while (IDLE_S), but the worker asks the
    gateway's word meanwhile: once another worker waits there, its fair share is all it
    may keep, and the rest go back — long before they would have idled out."""
    monkeypatch.setattr(kept, "IDLE_S", 60.0)
    gateway = Gateway.remote(["http://unused"], 2)  # type: ignore[attr-defined]

    async def scenario() -> int:
        holder = GatewayAdmission(gateway, 0)
        await holder.register()
        leases = [(await holder.acquire(0, False))[0] for _ in range(2)]
        for lease in leases:
            await holder.release(lease, Usage("ok", 0.01))  # both idle now, none waiting
        other = GatewayAdmission(gateway, 1)
        await other.register()
        await asyncio.wait_for(other.acquire(0, False), 20)  # one came back on a word
        return len(holder._idle)

    assert asyncio.run(scenario()) == 1  # the holder keeps its fair share, idle
