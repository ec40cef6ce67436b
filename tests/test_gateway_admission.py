"""A worker's admission over the real Gateway actor: swaps, local waiters, stopping."""

from __future__ import annotations

import asyncio

from taguru_ray.llm.admission import PermitPool, Stopped
from taguru_ray.llm.client import Usage
from taguru_ray.llm.gateway import ASKING, Gateway, GatewayAdmission


def test_many_requests_share_few_permits_numbered_once_each(ray_address: str) -> None:
    gateway = Gateway.remote(["http://unused"], 4)  # type: ignore[attr-defined]
    on_wire = {"now": 0, "max": 0}
    seqs: list[int] = []

    async def scenario() -> dict:
        admission = GatewayAdmission(gateway, 0)
        await admission.register()

        async def request() -> None:
            lease, _, seq = await admission.acquire(10, True)
            on_wire["now"] += 1
            on_wire["max"] = max(on_wire["max"], on_wire["now"])
            seqs.append(seq or 0)
            await asyncio.sleep(0.01)
            on_wire["now"] -= 1
            await admission.release(lease, Usage("ok", 0.01, 5, 5))

        await asyncio.gather(*(request() for _ in range(3 * ASKING + 10)))
        for _ in range(100):  # the last releases are not awaited
            stats = await gateway.stats.remote()
            if stats["in_flight"] == 0:
                return stats
            await asyncio.sleep(0.05)
        return await gateway.stats.remote()

    stats = asyncio.run(scenario())
    total = 3 * ASKING + 10
    assert on_wire["max"] <= 4
    assert sorted(seqs) == list(range(1, total + 1))  # every attempt numbered, once
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": total}


def test_a_stop_refuses_every_request_waiting_at_the_worker(ray_address: str) -> None:
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]

    async def scenario() -> list[str]:
        admission = GatewayAdmission(gateway, 0)
        lease, _, _ = await admission.acquire(0, False)
        waiting = [asyncio.ensure_future(admission.acquire(0, False)) for _ in range(ASKING + 3)]
        await asyncio.sleep(0.2)
        await gateway.stop.remote()
        await admission.release(lease, Usage("ok", 0.01))
        done = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 10)
        return [type(result).__name__ for result in done]

    assert set(asyncio.run(scenario())) == {Stopped.__name__}


def test_a_permit_granted_to_a_cancelled_request_goes_back_unused(ray_address: str) -> None:
    gateway = Gateway.remote(["http://unused"], 1)  # type: ignore[attr-defined]

    async def scenario() -> dict:
        admission = GatewayAdmission(gateway, 0)
        lease, _, _ = await admission.acquire(0, False)
        waiter = asyncio.ensure_future(admission.acquire(0, False))
        await asyncio.sleep(0.2)
        waiter.cancel()
        await admission.release(lease, Usage("ok", 0.01))
        for _ in range(100):
            stats = await gateway.stats.remote()
            if stats["in_flight"] == 0:
                break
            await asyncio.sleep(0.05)
        return stats

    stats = asyncio.run(scenario())
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": 1}


def test_a_worker_keeps_a_returned_permit_only_within_its_share_while_others_wait() -> None:
    async def scenario() -> list[bool]:
        pool = PermitPool(["u"], 2)
        mine = [await pool.acquire("a", 0), await pool.acquire("a", 0)]
        other = asyncio.ensure_future(pool.acquire("b", 0))
        await asyncio.sleep(0.01)
        await pool.release(mine[0].lease_id, Usage("ok", 0.1))
        # "a" now holds 1 of 2 permits, "b" waits: a's share is 1, so it may not keep one.
        over_share = pool.may_keep("a")
        await asyncio.wait_for(other, 1)
        await pool.give_back(mine[1].lease_id)  # never used: no outcome counted
        alone = pool.may_keep("b")  # nobody else waits
        return [over_share, alone, pool.outcomes == {"ok": 1}, pool.in_flight == 1]

    assert asyncio.run(scenario()) == [False, True, True, True]
