"""The gateway: one coordinator of the run's completion permits and its rung.

Every HTTP request to a model endpoint holds a permit while it is on the wire,
so the in-flight cap, the rate ceilings and endpoint health hold across every
worker of the run (`admission.PermitPool`). The gateway is a coordinator, not
a proxy (ENGINE.md): request and answer bodies travel worker ↔ endpoint; the
gateway hands out leases naming the endpoint, numbers attempts in issue order
(`attempt_seq` is run-wide), holds the run-wide structured-output rung, and
keeps the counters the progress display and the metrics read.
"""

from __future__ import annotations

import secrets
from typing import Any

import ray

from taguru_ray.engine import metrics
from taguru_ray.llm.admission import PermitPool, Stopped
from taguru_ray.llm.client import Usage
from taguru_ray.llm.ladder import RungState


@ray.remote(num_cpus=0, max_concurrency=100_000)
class Gateway:
    """The Ray actor around a PermitPool; async, so waiting callers cost nothing."""

    def __init__(
        self,
        urls: list[str],
        limit: int | None,
        rpm: int = 0,
        tpm: int = 0,
        rung: str | None = None,
    ) -> None:
        self._pool = PermitPool(urls, limit, rpm, tpm)
        self._rung = RungState(rung) if rung is not None else None

    async def acquire(
        self, worker: str, tokens: int, want_seq: bool = False
    ) -> tuple[int, int, int | None, str | None] | None:
        """(lease id, endpoint index, attempt_seq when asked, the rung now), or None once
        stopping. The rung rides along so a worker's rung port needs no call of its own."""
        try:
            lease = await self._pool.acquire(worker, tokens)
        except Stopped:
            return None
        metrics.in_flight(self._pool.in_flight)
        seq = self._pool.next_attempt_seq() if want_seq else None
        return lease.lease_id, lease.endpoint, seq, self._rung.rung if self._rung else None

    async def release(self, lease_id: int, usage: tuple[Any, ...]) -> None:
        """`usage` is a Usage's fields as a plain tuple: msgpack on the wire, not pickle."""
        done = Usage(*usage)
        await self._pool.release(lease_id, done)
        metrics.request_done(done, self._pool.in_flight, self._pool.current_limit)

    async def register(self, index: int, incarnation: str) -> None:
        self._pool.register(index, incarnation)
        await self._pool.wake()

    async def next_attempt_seq(self) -> int:
        return self._pool.next_attempt_seq()

    async def stop(self) -> None:
        await self._pool.stop()

    async def stats(self) -> dict[str, Any]:
        return self._pool.stats()

    async def rung(self) -> str | None:
        return self._rung.rung if self._rung else None

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        if self._rung is None:
            return False, ran_under
        return self._rung.demote(ran_under)


class GatewayAdmission:
    """The client-side `Admission` over a Gateway actor handle, for one worker."""

    def __init__(self, gateway: Any, index: int) -> None:
        self._gateway = gateway
        self._index = index
        self.incarnation = f"{index}-{secrets.token_hex(4)}"
        self.rung_seen: tuple[str | None] | None = None  # the rung the last grant carried

    async def register(self) -> None:
        """Tell the gateway this worker (re)started, freeing a dead predecessor's permits."""
        await self._gateway.register.remote(self._index, self.incarnation)

    async def acquire(self, tokens: int, want_seq: bool) -> tuple[int, int, int | None]:
        granted = await self._gateway.acquire.remote(self.incarnation, tokens, want_seq)
        if granted is None:
            raise Stopped()
        lease, endpoint, seq, rung = granted
        self.rung_seen = (rung,)
        return lease, endpoint, seq

    async def release(self, lease_id: int, usage: Usage) -> None:
        # Not awaited: the gateway applies it in order with this worker's other calls,
        # and the request it belonged to is already done.
        fields = (
            usage.outcome,
            usage.latency_seconds,
            usage.input_tokens,
            usage.output_tokens,
            usage.retry_after,
        )
        self._gateway.release.remote(lease_id, fields)

    async def next_attempt_seq(self) -> int:
        return int(await self._gateway.next_attempt_seq.remote())


class GatewayRung:
    """The segment's rung port over the gateway, demoted run-wide.

    `current` is the rung the worker's latest permit grant or demotion reply
    carried (one call to the gateway before the first of them): a worker takes
    a permit every few milliseconds under load, so a demotion elsewhere reaches
    it by its next request. A request built under a rung already demoted fails
    like the one that demoted it, and its `demote` answers with the rung now.
    """

    def __init__(self, gateway: Any, admission: GatewayAdmission) -> None:
        self._gateway = gateway
        self._admission = admission

    async def current(self) -> str | None:
        if self._admission.rung_seen is None:
            self._admission.rung_seen = (await self._gateway.rung.remote(),)
        return self._admission.rung_seen[0]

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        moved, now = await self._gateway.demote.remote(ran_under)
        self._admission.rung_seen = (now,)
        return moved, now
