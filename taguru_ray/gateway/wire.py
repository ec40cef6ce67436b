"""What crosses between a worker and the gateway actor, as named types.

Plain tuples on the wire (Ray sends tuples of plain values by msgpack, a named
type by pickle), named at both ends: a sender builds the type, a receiver
rebuilds it with `Type(*value)`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from taguru_ray.llm.client import Usage
from taguru_ray.llm.quota import Quota


class Grant(NamedTuple):
    """A permit: its lease, the endpoint to send to, the rung now, and how many permits
    the worker may keep (ADR 0017)."""

    lease: int
    endpoint: int
    rung: str | None
    keep: int


class Outcome(NamedTuple):
    """A finished request's `Usage`, field by field."""

    outcome: str
    latency_seconds: float
    input_tokens: int
    output_tokens: int
    retry_after: float | None
    quota: tuple[Any, ...] | None  # a `Quota`, as a plain tuple

    @staticmethod
    def of(usage: Usage) -> Outcome:
        return Outcome(
            usage.outcome,
            usage.latency_seconds,
            usage.input_tokens,
            usage.output_tokens,
            usage.retry_after,
            None if usage.quota is None else tuple(usage.quota),
        )

    def usage(self) -> Usage:
        quota = None if self.quota is None else Quota(*self.quota)
        return Usage(*self[:5], quota=quota)


class KeptOutcome(NamedTuple):
    """A request that ran on a kept permit: its endpoint, outcome and how long ago."""

    endpoint: int
    outcome: Outcome
    seconds_ago: float


class Word(NamedTuple):
    """The gateway's answer to a worker's report: the first of the attempt numbers it
    asked for (None: it asked for none), how many permits it may keep, whether the run
    stops, and the rung now."""

    first_seq: int | None
    keep: int
    stopped: bool
    rung: str | None


@dataclass(order=True)
class Waiter:
    """A request waiting for a permit: the oldest segment's first (its `priority`, the
    segment index, ADR 0016), then in arrival order."""

    priority: int
    order: int
    tokens: int = field(compare=False)
    future: asyncio.Future[Any] = field(compare=False)
    worker: str = field(default="", compare=False)
