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
    ) -> tuple[int, int, int | None] | None:
        """(lease id, endpoint index, attempt_seq when asked), or None once stopping."""
        try:
            lease = await self._pool.acquire(worker, tokens)
        except Stopped:
            return None
        metrics.in_flight(self._pool.in_flight)
        seq = self._pool.next_attempt_seq() if want_seq else None
        return lease.lease_id, lease.endpoint, seq

    async def release(self, lease_id: int, usage: Usage) -> None:
        await self._pool.release(lease_id, usage)
        metrics.request_done(usage, self._pool.in_flight, self._pool.current_limit)

    async def register(self, index: int, incarnation: str) -> None:
        self._pool.register(index, incarnation)

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

    async def register(self) -> None:
        """Tell the gateway this worker (re)started, freeing a dead predecessor's permits."""
        await self._gateway.register.remote(self._index, self.incarnation)

    async def acquire(self, tokens: int, want_seq: bool) -> tuple[int, int, int | None]:
        granted = await self._gateway.acquire.remote(self.incarnation, tokens, want_seq)
        if granted is None:
            raise Stopped()
        return granted  # type: ignore[no-any-return]

    async def release(self, lease_id: int, usage: Usage) -> None:
        # Not awaited: the gateway applies it in order with this worker's other calls,
        # and the request it belonged to is already done.
        self._gateway.release.remote(lease_id, usage)

    async def next_attempt_seq(self) -> int:
        return int(await self._gateway.next_attempt_seq.remote())


class GatewayRung:
    """The segment's rung port over the gateway: read fresh each round, demoted run-wide."""

    def __init__(self, gateway: Any) -> None:
        self._gateway = gateway

    async def current(self) -> str | None:
        return await self._gateway.rung.remote()  # type: ignore[no-any-return]

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        return await self._gateway.demote.remote(ran_under)  # type: ignore[no-any-return]
