"""The gateway: one coordinator of the run's completion permits.

Every HTTP request to a model endpoint holds a permit while it is on the
wire, so ``--max-inflight`` bounds completions in flight across every worker
of the run. The gateway is a coordinator, not a proxy (ENGINE.md): request
and answer bodies travel worker ↔ endpoint; the gateway only hands out
permits, numbers attempts in issue order (``attempt_seq`` is run-wide) and
keeps the counters the progress display reads.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import ray

from taguru_ray.llm.client import Usage
from taguru_ray.llm.ladder import RungState


@dataclass
class PermitPool:
    """The gateway's state, free of Ray so it can be tested directly."""

    limit: int
    in_flight: int = 0
    max_in_flight: int = 0
    attempt_seq: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    _slots: asyncio.Semaphore | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        return self._slots

    async def acquire(self) -> None:
        await self._semaphore().acquire()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def release(self, usage: Usage) -> None:
        self.in_flight -= 1
        self._semaphore().release()
        self.outcomes[usage.outcome] += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    def next_attempt_seq(self) -> int:
        self.attempt_seq += 1
        return self.attempt_seq

    def stats(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "attempts": self.attempt_seq,
            "outcomes": dict(self.outcomes),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@ray.remote(num_cpus=0, max_concurrency=100_000)
class Gateway:
    """The Ray actor around a PermitPool; async, so waiting callers cost nothing.

    It also holds the run-wide structured-output rung, so a demotion one
    worker makes is the rung every worker's next round reads (ADR 0021).
    """

    def __init__(self, limit: int, rung: str | None = None) -> None:
        self._pool = PermitPool(limit)
        self._rung = RungState(rung) if rung is not None else None

    async def rung(self) -> str | None:
        return self._rung.rung if self._rung else None

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        if self._rung is None:
            return False, ran_under
        return self._rung.demote(ran_under)

    async def acquire(self) -> None:
        await self._pool.acquire()

    async def release(self, usage: Usage) -> None:
        self._pool.release(usage)

    async def next_attempt_seq(self) -> int:
        return self._pool.next_attempt_seq()

    async def stats(self) -> dict[str, Any]:
        return self._pool.stats()


class GatewayAdmission:
    """The client-side `Admission` over a Gateway actor handle."""

    def __init__(self, gateway: Any) -> None:
        self._gateway = gateway

    async def acquire(self) -> None:
        await self._gateway.acquire.remote()

    async def release(self, usage: Usage) -> None:
        await self._gateway.release.remote(usage)

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
