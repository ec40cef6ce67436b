"""Run-wide admission control: which request may go on the wire, and to which endpoint.

Every HTTP try of the run leases one permit here and returns it with its
outcome. The pool enforces, across every worker:

- the in-flight cap (`--max-inflight N`, or the adaptive controller's level
  under `--max-inflight auto`);
- requests and estimated tokens per sliding 60 s window (`--rpm`, `--tpm`);
- per-endpoint health: a 429's Retry-After pauses every caller of that
  endpoint, and an endpoint that keeps failing is rested, doubling its rest;
- least-in-flight balancing over the healthy endpoints (`--endpoint`, repeatable).

Pure asyncio with an injectable clock: the Ray actor (`gateway.py`) wraps it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.llm.client import Usage
from taguru_ray.llm.concurrency import AdaptiveLimit

WINDOW_SECONDS = 60.0
FAILURES_BEFORE_REST = 3
FIRST_REST_SECONDS = 15.0
LONGEST_REST_SECONDS = 300.0


class Stopped(Exception):
    """The run is stopping (first Ctrl+C or SIGTERM): no new request goes on the wire."""


@dataclass
class Endpoint:
    url: str
    in_flight: int = 0
    paused_until: float = 0.0  # a 429's Retry-After, for every caller
    rested_until: float = 0.0  # kept failing: left alone for a while
    failures: int = 0  # consecutive
    rests: int = 0
    completions: int = 0

    def ready(self, now: float) -> bool:
        return now >= self.paused_until and now >= self.rested_until

    def opens_at(self) -> float:
        return max(self.paused_until, self.rested_until)


@dataclass
class Lease:
    lease_id: int
    endpoint: int
    worker: str
    tokens: int
    started: float


@dataclass
class PermitPool:
    urls: list[str]
    limit: int | None  # None: adaptive (--max-inflight auto)
    rpm: int = 0  # 0 = no ceiling
    tpm: int = 0
    clock: Callable[[], float] = time.monotonic
    window: float = WINDOW_SECONDS  # the sliding window of --rpm/--tpm
    endpoints: list[Endpoint] = field(init=False)
    adaptive: AdaptiveLimit | None = field(init=False)
    in_flight: int = 0
    max_in_flight: int = 0
    stopped: bool = False
    outcomes: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    attempt_seq: int = 0
    _leases: dict[int, Lease] = field(default_factory=dict)
    _requests: deque[float] = field(default_factory=deque)
    _tokens: deque[tuple[float, int]] = field(default_factory=deque)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _changed: asyncio.Condition | None = None
    _incarnations: dict[int, str] = field(default_factory=dict)
    _waiting: int = 0  # callers waiting (woken ones too, until they run)

    def __post_init__(self) -> None:
        self.endpoints = [Endpoint(url) for url in self.urls]
        self.adaptive = AdaptiveLimit() if self.limit is None else None

    @property
    def current_limit(self) -> int:
        return self.adaptive.limit if self.adaptive is not None else int(self.limit or 1)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def acquire(self, worker: str = "", tokens: int = 0) -> Lease:
        """Wait for a permit, first come first served; returns the lease naming the
        endpoint to use.

        A caller that finds others waiting queues behind them even when a permit is
        free: that permit was just freed for the first of them, who has been woken
        but not run yet. Taking it would starve them — a worker's swaps would pass
        one permit round among its newest requests while its oldest wait (ADR 0015).
        """
        async with self._condition():
            queued = self._waiting > 0
            while True:
                if self.stopped:
                    raise Stopped()
                now = self.clock()
                self._slide(now)
                index = self._pick(now)
                wait = self._wait_for(now, tokens)
                if index is not None and wait == 0.0 and not queued:
                    lease = self._grant(index, worker, tokens, now)
                    if self._waiting:
                        self._wake()  # permits left over go to those queued behind
                    return lease
                queued = False  # once woken, it is the first in line
                if index is None:
                    opens = min(e.opens_at() for e in self.endpoints) - now
                    wait = max(wait, opens) if wait else opens
                self._waiting += 1
                try:
                    timeout = wait if wait > 0 else None
                    await asyncio.wait_for(self._condition().wait(), timeout)
                except TimeoutError:
                    pass
                finally:
                    self._waiting -= 1

    def _pick(self, now: float) -> int | None:
        if self.in_flight >= self.current_limit:
            return None
        ready = [i for i, e in enumerate(self.endpoints) if e.ready(now)]
        if not ready:
            return None
        return min(ready, key=lambda i: (self.endpoints[i].in_flight, i))

    def _wait_for(self, now: float, tokens: int) -> float:
        """Seconds until the rate windows admit one more request (0 = now)."""
        wait = 0.0
        if self.rpm and len(self._requests) >= self.rpm:
            wait = max(wait, self._requests[0] + self.window - now)
        if self.tpm and self._tokens:
            used = sum(n for _, n in self._tokens)
            if used + tokens > self.tpm:
                wait = max(wait, self._tokens[0][0] + self.window - now)
        return max(wait, 0.0)

    def _slide(self, now: float) -> None:
        while self._requests and self._requests[0] <= now - self.window:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - self.window:
            self._tokens.popleft()

    def _grant(self, index: int, worker: str, tokens: int, now: float) -> Lease:
        lease = Lease(next(self._ids), index, worker, tokens, now)
        self._leases[lease.lease_id] = lease
        self.endpoints[index].in_flight += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._requests.append(now)
        if tokens:
            self._tokens.append((now, tokens))
        return lease

    async def release(self, lease_id: int, usage: Usage) -> None:
        async with self._condition():
            lease = self._leases.pop(lease_id, None)
            if lease is not None:
                self._settle(lease, usage)
            self._wake()

    def _wake(self) -> None:
        """Wake as many waiters as there are free permits, first come first served.

        Not all of them: with hundreds of segments waiting, waking every one per
        release costs more than the requests. A waiter that still cannot go (a
        paused endpoint, a rate window) waits again with its own timeout.
        """
        free = self.current_limit - self.in_flight
        if free > 0:
            self._condition().notify(free)

    async def give_back(self, lease_id: int) -> None:
        """Return a permit that was never used: no outcome, no latency to learn from."""
        async with self._condition():
            lease = self._leases.pop(lease_id, None)
            if lease is not None:
                self._free(lease)
            self._wake()

    def _free(self, lease: Lease) -> None:
        self.endpoints[lease.endpoint].in_flight -= 1
        self.in_flight -= 1

    def _settle(self, lease: Lease, usage: Usage) -> None:
        now = self.clock()
        endpoint = self.endpoints[lease.endpoint]
        self._free(lease)
        self.outcomes[usage.outcome] += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.retry_after is not None:
            endpoint.paused_until = max(endpoint.paused_until, now + usage.retry_after)
        if usage.outcome == "ok":
            endpoint.failures, endpoint.rests = 0, 0
            endpoint.completions += 1
        elif usage.outcome != "http_429" and not usage.outcome.startswith("http_4"):
            endpoint.failures += 1
            if endpoint.failures >= FAILURES_BEFORE_REST and len(self.endpoints) > 1:
                rest = min(FIRST_REST_SECONDS * 2**endpoint.rests, LONGEST_REST_SECONDS)
                endpoint.rested_until = now + rest
                endpoint.rests += 1
                endpoint.failures = 0
        if self.adaptive is not None:
            self.adaptive.observe(usage.latency_seconds, usage.outcome, self.in_flight + 1)

    def register(self, index: int, incarnation: str) -> None:
        """A worker (re)started: leases of its previous incarnation died with it."""
        previous = self._incarnations.get(index)
        self._incarnations[index] = incarnation
        if previous is None:
            return
        for lease in [lease for lease in self._leases.values() if lease.worker == previous]:
            del self._leases[lease.lease_id]
            self._settle(lease, Usage("lost", 0.0))

    async def wake(self) -> None:
        """Wake waiters for permits freed outside `release` (a restarted worker's)."""
        async with self._condition():
            self._wake()

    def next_attempt_seq(self) -> int:
        self.attempt_seq += 1
        return self.attempt_seq

    async def stop(self) -> None:
        """Refuse every permit from now on; waiters wake and see it."""
        async with self._condition():
            self.stopped = True
            self._condition().notify_all()

    def stats(self) -> dict[str, Any]:
        return {
            "limit": self.current_limit,
            "adaptive": self.adaptive is not None,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "attempts": self.attempt_seq,
            "outcomes": dict(self.outcomes),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "endpoints": [
                {
                    "url": e.url,
                    "in_flight": e.in_flight,
                    "completions": e.completions,
                    "paused": e.paused_until > self.clock(),
                    "rested": e.rested_until > self.clock(),
                }
                for e in self.endpoints
            ],
            "limit_changes": list(self.adaptive.changes) if self.adaptive else [],
        }
