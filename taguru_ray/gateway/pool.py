"""Run-wide admission control: which request may go on the wire, and to which endpoint.

Every HTTP try of the run leases one permit here and returns it with its
outcome. The pool enforces, across every worker:

- the in-flight cap (`--max-inflight N`, or the adaptive controller's level
  under `--max-inflight auto`);
- requests and estimated tokens per sliding 60 s window (`--rpm`, `--tpm`);
- per-endpoint health: a 429's Retry-After pauses every caller of that
  endpoint, and an endpoint that keeps failing is rested, doubling its rest;
- least-in-flight balancing over the healthy endpoints (`--endpoint`, repeatable).

Pure asyncio with an injectable clock: the Ray actor (`actor.py`) wraps it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.gateway.limits import AdaptiveLimit
from taguru_ray.gateway.wire import Waiter
from taguru_ray.llm.client import Usage
from taguru_ray.llm.retry import BACKOFF_CEILING_SECONDS
from taguru_ray.pipeline.effects import Stopped  # no new request goes on the wire

WINDOW_SECONDS = 60.0
FAILURES_BEFORE_REST = 3
FIRST_REST_SECONDS = 15.0
LONGEST_REST_SECONDS = 300.0


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
    renewed: int = 0  # outcomes of requests that ran on kept permits (reported in batches)
    _leases: dict[int, Lease] = field(default_factory=dict)
    _held: Counter[str] = field(default_factory=Counter)  # permits by worker
    _idle: Counter[str] = field(default_factory=Counter)  # of those, waiting at the worker
    _observed: float = 0.0  # the latest completion fed to the adaptive controller
    _requests: deque[float] = field(default_factory=deque)
    _tokens: deque[tuple[float, int]] = field(default_factory=deque)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _incarnations: dict[int, str] = field(default_factory=dict)
    _queue: list[Waiter] = field(default_factory=list)  # a heap: the next grant first
    _order: itertools.count[int] = field(default_factory=itertools.count)
    _timer: asyncio.TimerHandle | None = None  # a pause or a rate window opening

    def __post_init__(self) -> None:
        self.endpoints = [Endpoint(url) for url in self.urls]
        self.adaptive = AdaptiveLimit() if self.limit is None else None

    @property
    def current_limit(self) -> int:
        return self.adaptive.limit if self.adaptive is not None else int(self.limit or 1)

    async def acquire(self, worker: str = "", tokens: int = 0, priority: int = 0) -> Lease:
        """Wait for a permit; returns the lease naming the endpoint to use.

        Callers are served lowest `priority` first (a request's segment index: the
        oldest segment of the window holds the window back), then in arrival order.
        A permit is granted the moment it is free, to the first in line, so no
        later caller can take it from a waiter that has not run yet (ADRs 0025, 0016).
        """
        waiter = self._enqueue(worker, tokens, priority)
        self._dispatch()
        return await self._granted(waiter)

    async def swap(
        self, lease_id: int, usage: Usage, worker: str = "", tokens: int = 0, priority: int = 0
    ) -> Lease:
        """`release`, then `acquire`, with the new request in line before the permit is
        returned: an older segment's request takes it ahead of newer ones waiting."""
        waiter = self._enqueue(worker, tokens, priority)
        await self.release(lease_id, usage)
        return await self._granted(waiter)

    def _enqueue(self, worker: str, tokens: int, priority: int) -> Waiter:
        if self.stopped:
            raise Stopped()
        future = asyncio.get_running_loop().create_future()
        waiter = Waiter(priority, next(self._order), tokens, future, worker)
        heapq.heappush(self._queue, waiter)
        return waiter

    async def _granted(self, waiter: Waiter) -> Lease:
        try:
            return await waiter.future
        except asyncio.CancelledError:
            # Granted as the caller went away: the permit was never used.
            granted = waiter.future.done() and not waiter.future.cancelled()
            if granted and waiter.future.exception() is None:
                self._return(waiter.future.result().lease_id)
            raise

    def _dispatch(self) -> None:
        """Grant free permits to the waiters first in line, while the limit, the
        endpoints' pauses and the rate windows allow; arm a timer for when a pause
        or a rate window next opens."""
        while self._queue:
            head = self._queue[0]
            if head.future.done():  # cancelled while waiting
                heapq.heappop(self._queue)
                continue
            if self.in_flight >= self.current_limit:
                return  # the next release dispatches again
            now = self.clock()
            self._slide(now)
            index = self._pick(now)
            wait = self._wait_for(now, head.tokens)
            if index is None or wait > 0:
                if index is None:  # every endpoint paused or rested
                    wait = max(wait, min(e.opens_at() for e in self.endpoints) - now)
                self._arm(max(wait, 0.001))
                return
            heapq.heappop(self._queue)
            head.future.set_result(self._grant(index, head.worker, head.tokens, now))

    def _arm(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if self._timer is not None:
            if self._timer.when() <= when:
                return
            self._timer.cancel()
        self._timer = loop.call_at(when, self._opened)

    def _opened(self) -> None:
        self._timer = None
        self._dispatch()

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
        self._held[worker] += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._requests.append(now)
        if tokens:
            self._tokens.append((now, tokens))
        return lease

    async def release(self, lease_id: int, usage: Usage) -> None:
        lease = self._leases.pop(lease_id, None)
        if lease is not None:
            self._settle(lease, usage)
        self._dispatch()

    async def give_back(self, lease_id: int, idle: int | None = None) -> None:
        """Return a permit that was never used: no outcome, no latency to learn from.
        `idle`, when given: how many of the worker's permits still idle (`idle`)."""
        lease = self._leases.get(lease_id)
        if lease is not None and idle is not None:
            self.idle(lease.worker, idle)
        self._return(lease_id)

    def _return(self, lease_id: int) -> None:
        lease = self._leases.pop(lease_id, None)
        if lease is not None:
            self._free(lease)
        self._dispatch()

    def _free(self, lease: Lease) -> None:
        self.endpoints[lease.endpoint].in_flight -= 1
        self.in_flight -= 1
        self._held[lease.worker] -= 1
        if self._held[lease.worker] <= 0:
            del self._held[lease.worker]

    def renew(self, endpoint: int, usage: Usage, ago: float = 0.0) -> None:
        """A request on a kept permit finished `ago` seconds before this report, and the
        worker already sent its next request on the same permit (`keep`, ADR 0017): its
        outcome counts as a release's would, but the permit stays out (or went back
        since, with a later request's outcome)."""
        if 0 <= endpoint < len(self.endpoints):
            self.renewed += 1
            self._account(endpoint, usage, self.clock() - max(ago, 0.0), self._on_wire())
            self._dispatch()  # the adaptive limit may have risen: grant what it allows

    def idle(self, worker: str, count: int) -> None:
        """How many of `worker`'s permits wait for its next request (its last report):
        held, but not on the wire, so the adaptive controller does not count them."""
        if count > 0:
            self._idle[worker] = count
        else:
            self._idle.pop(worker, None)

    def keep(self, worker: str) -> int:
        """How many permits `worker` may keep for its next requests without asking.

        None while a rate ceiling counts each request, an endpoint is paused or
        rested, or the run stops: every request then goes through the queue here.
        Otherwise all of them, unless another worker waits here, when a fair share;
        and when the limit fell below what is out, what is out less the excess."""
        now = self.clock()
        if self.stopped or self.rpm or self.tpm:
            return 0
        if any(not endpoint.ready(now) for endpoint in self.endpoints):
            return 0
        limit = self.current_limit
        held = self._held.get(worker, 0)
        if self.in_flight > limit:
            return max(held - (self.in_flight - limit), 0)
        others = {w.worker for w in self._queue if not w.future.done()} - {worker}
        if not others:
            return limit
        return -(-limit // len(others | set(self._held) | {worker}))

    def _settle(self, lease: Lease, usage: Usage) -> None:
        self._free(lease)
        self._account(lease.endpoint, usage, self.clock(), self._on_wire() + 1)

    def _on_wire(self) -> int:
        """Permits out, less those idle at their workers: requests on the wire."""
        return max(self.in_flight - sum(self._idle.values()), 0)

    def _account(self, index: int, usage: Usage, now: float, in_flight: int) -> None:
        """What a finished request tells the pool: counts, endpoint health, the limit."""
        endpoint = self.endpoints[index]
        self.outcomes[usage.outcome] += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.retry_after is not None and math.isfinite(usage.retry_after):
            pause = min(max(usage.retry_after, 0.0), BACKOFF_CEILING_SECONDS)  # as promised
            endpoint.paused_until = max(endpoint.paused_until, now + pause)
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
            # Reports arrive in batches: never feed the controller time running backwards.
            self._observed = max(self._observed, now)
            self.adaptive.observe(usage.latency_seconds, usage.outcome, in_flight, self._observed)

    def register(self, index: int, incarnation: str) -> None:
        """A worker (re)started: leases of its previous incarnation died with it."""
        previous = self._incarnations.get(index)
        self._incarnations[index] = incarnation
        if previous is None or previous == incarnation:
            return
        self._drop(previous)

    def incarnation(self, index: int) -> str | None:
        return self._incarnations.get(index)

    def forget(self, index: int, incarnation: str | None) -> None:
        """Worker `index`'s `incarnation` died and no successor has registered within the
        driver's patience (its node was taken back and the actor cannot restart yet):
        free its permits, and let no grant reach its requests still queued here, whose
        caller is gone — else the survivors would wait for permits no one can return. A
        successor that registered meanwhile is never touched."""
        previous = self._incarnations.get(index)
        if previous is None or previous != incarnation:
            return
        self._incarnations[index] = f"{index}-forgotten"
        self._drop(previous)
        for waiter in self._queue:
            if waiter.worker == previous and not waiter.future.done():
                waiter.future.cancel()
        self._dispatch()

    def _drop(self, incarnation: str) -> None:
        self._idle.pop(incarnation, None)
        for lease in [lease for lease in self._leases.values() if lease.worker == incarnation]:
            del self._leases[lease.lease_id]
            self._settle(lease, Usage("lost", 0.0))

    async def wake(self) -> None:
        """Grant permits freed outside `release` (a restarted worker's) to waiters."""
        self._dispatch()

    async def stop(self) -> None:
        """Refuse every permit from now on, to the callers waiting too."""
        self.stopped = True
        queue, self._queue = self._queue, []
        for waiter in queue:
            if not waiter.future.done():
                waiter.future.set_exception(Stopped())
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def stats(self) -> dict[str, Any]:
        return {
            "limit": self.current_limit,
            "adaptive": self.adaptive is not None,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "kept": self.renewed,
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
