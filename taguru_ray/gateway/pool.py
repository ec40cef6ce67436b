"""Run-wide admission control: which request may go on the wire, and to which endpoint.

Every HTTP try of the run leases one permit here and returns it with its
outcome. The pool enforces, across every worker:

- the in-flight cap (`--max-inflight N`, or the adaptive controller's level
  under `--max-inflight auto`);
- requests and estimated tokens per sliding 60 s window (`--rpm`, `--tpm`);
- per-endpoint health: a 429's Retry-After pauses every caller of that
  endpoint, and an endpoint that keeps failing is rested, doubling its rest;
- per-endpoint quota: what the provider's x-ratelimit-* headers say is left of
  its windows; an endpoint is paused until its window resets once what is left
  is spoken for, before a 429 says so (ADR 0039);
- least-in-flight balancing over the healthy endpoints (`--endpoint`, repeatable);
- endpoints that come and go: the run's own replicas (`--engine`) are added as they
  start and retired when lost — a retired one is never granted again, and what its
  requests met counts against nothing (the replica died, not the endpoint); while
  none is up, requests wait for one ("engine");
- the run's budget (`--budget-tokens`, `--budget-usd`): a request that would take
  what is spent, plus what is on the wire, past it is not granted and the run
  stops there, resumable (ADR 0040).

Pure asyncio with an injectable clock: the Ray actor (`actor.py`) wraps it.

Its length (over 400 lines) is one state machine's: every grant, release and
report changes the same counters, queue and endpoints, so they stay together.
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

from taguru_ray.gateway.allowance import Allowance
from taguru_ray.gateway.limits import CEILING, AdaptiveLimit
from taguru_ray.gateway.pace import Pace
from taguru_ray.gateway.paused import ENGINE, RATE, REST, RETRY_AFTER, WINDOW, Hold, Paused, paused
from taguru_ray.gateway.wire import Waiter
from taguru_ray.llm.client import Usage
from taguru_ray.llm.retry import BACKOFF_CEILING_SECONDS
from taguru_ray.pipeline.effects import Stopped  # no new request goes on the wire
from taguru_ray.pricing.tariff import Budget, Tariff

WINDOW_SECONDS = 60.0
FAILURES_BEFORE_REST = 3
FIRST_REST_SECONDS = 15.0
LONGEST_REST_SECONDS = 300.0
# A quota with fewer than this many in-flight limits' worth of requests (or tokens)
# left is counted request by request: no permit is kept past the pool.
QUOTA_LOW_WATER = 2


@dataclass
class Endpoint:
    url: str
    in_flight: int = 0
    paused_until: float = 0.0  # a 429's Retry-After, for every caller
    paused_since: float = 0.0  # when the pause that ends at `paused_until` was set
    paused_why: str = RETRY_AFTER  # RETRY_AFTER or WINDOW (`paused.py`)
    rested_until: float = 0.0  # kept failing: left alone for a while
    rested_since: float = 0.0
    failures: int = 0  # consecutive
    rests: int = 0
    completions: int = 0
    issued: int = 0  # requests granted to it, ever: which ones a quota report has not seen
    quota: Allowance | None = None  # its headers' word, while its window lasts
    quota_holds: float = 0.0  # its quota, spent, holds requests back until then
    retired: bool = False  # a replica that was lost: never granted again

    def ready(self, now: float) -> bool:
        return now >= self.paused_until and now >= self.rested_until

    def opens_at(self) -> float:
        return max(self.paused_until, self.rested_until)

    def pause(self, until: float, now: float, why: str) -> None:
        """Pause it until `until` at the latest of what it already waits for; the pause
        that ends last is the one the progress line names."""
        if until > self.paused_until:
            self.paused_until, self.paused_since, self.paused_why = until, now, why

    def hold(self) -> Hold:
        if self.rested_until > self.paused_until:
            return Hold(self.rested_until, self.rested_since, REST)
        return Hold(self.paused_until, self.paused_since, self.paused_why)


@dataclass
class Lease:
    lease_id: int
    endpoint: int
    worker: str
    tokens: int
    started: float
    issued: int = 0  # the endpoint's `issued` count when this one was granted


@dataclass
class PermitPool:
    urls: list[str]
    limit: int | None  # None: adaptive (--max-inflight auto)
    rpm: int = 0  # 0 = no ceiling
    tpm: int = 0
    clock: Callable[[], float] = time.monotonic
    window: float = WINDOW_SECONDS  # the sliding window of --rpm/--tpm
    budget: Budget = field(default_factory=Budget)
    tariff: Tariff = field(default_factory=Tariff)
    ceiling: int = CEILING  # the most `auto` may climb to: the run's in-flight ceiling
    halted: str | None = None  # why the pool stopped the run itself (the budget)
    replicas: int = 0  # the engine's replicas asked for (0: endpoints of the user's)
    endpoints: list[Endpoint] = field(init=False)
    adaptive: AdaptiveLimit | None = field(init=False)
    pace: Pace = field(init=False)  # on the wire and waiting, over time (ADR 0048)
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
    _request_tokens: float = 1000.0  # tokens a completion costs, a moving average
    _reserved: int = 0  # estimated tokens of the requests on the wire
    _began: float | None = None  # the first grant: a GPU-hour price counts from there
    _rate_hold: Hold | None = None  # --rpm/--tpm held the queue's head until then
    _short_since: float | None = None  # no replica up since then (the engine's)

    def __post_init__(self) -> None:
        self.endpoints = [Endpoint(url) for url in self.urls]
        self.adaptive = AdaptiveLimit(ceiling=self.ceiling) if self.limit is None else None
        self.pace = Pace(self.clock())
        self._shortage()

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
        or a rate window next opens. The pace notes what is on the wire now, and
        why the rest wait."""
        waiting = self._grant_in_turn()
        self.pace.mark(self.clock(), self._on_wire(), waiting)

    def _grant_in_turn(self) -> str | None:
        """`_dispatch`'s grants; what holds the waiters left (`pace.WAITS`), if any."""
        while self._queue:
            head = self._queue[0]
            if head.future.done():  # cancelled while waiting
                heapq.heappop(self._queue)
                continue
            if self.in_flight >= self.current_limit:
                # The next release dispatches again. Permits kept idle at other workers
                # hold the head back, not the limit: that is the client's slowness.
                return "limit" if self._on_wire() >= self.current_limit else None
            now = self.clock()
            self._slide(now)
            index = self._pick(now, head.tokens)
            wait = self._wait_for(now, head.tokens)
            if index is None and not self._live():
                return ENGINE  # no replica is up: `add` dispatches when one is
            if index is None or wait > 0:
                held = "rate" if wait > 0 else "pause"
                if wait > 0:
                    self._hold_rate(now, wait)
                if index is None:  # every endpoint paused or rested
                    live = self._live()
                    wait = max(wait, min(e.opens_at() for e in live) - now)
                    if all(e.quota_holds >= e.opens_at() for e in live):
                        held = "rate"  # a provider's quota, not a 429, paused them
                self._arm(max(wait, 0.001))
                return held
            if self.budget.set:
                why = self._over_budget(head.tokens, now)
                if why is not None:
                    self.halted = why
                    self._stop_now()
                    return None
            heapq.heappop(self._queue)
            head.future.set_result(self._grant(index, head.worker, head.tokens, now))
        return None

    def _hold_rate(self, now: float, wait: float) -> None:
        """Keep when the run's own rate window opens, and since when it has held."""
        held = self._rate_hold
        since = held.since if held is not None and held.until >= now else now
        self._rate_hold = Hold(now + wait, since, RATE)

    def _over_budget(self, tokens: int, now: float) -> str | None:
        began = now if self._began is None else self._began
        return self.budget.crossing(
            self.tariff,
            (self.input_tokens, self.output_tokens),
            self._reserved,
            tokens,
            now - began,
        )

    def spent_usd(self) -> float | None:
        """What the run's answered tokens (or its hours) cost so far, when priced."""
        began = self._began
        seconds = 0.0 if began is None else self.clock() - began
        return self.tariff.cost(self.input_tokens, self.output_tokens, seconds)

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

    def _pick(self, now: float, tokens: int = 0) -> int | None:
        if self.in_flight >= self.current_limit:
            return None
        ready = [
            i for i, e in enumerate(self.endpoints) if not e.retired and self._open(e, now, tokens)
        ]
        if not ready:
            return None
        return min(ready, key=lambda i: (self.endpoints[i].in_flight, i))

    @staticmethod
    def _open(endpoint: Endpoint, now: float, tokens: int) -> bool:
        """Ready, and its quota (when stated) takes one more request of `tokens`; a quota
        spent pauses the endpoint until its window resets, for every caller."""
        quota = endpoint.quota
        if quota is not None:
            if quota.lapsed(now):
                endpoint.quota = None  # a new window: unknown until an answer says
            else:
                ends = quota.exhausted(tokens)
                if ends is not None:
                    endpoint.pause(ends, now, WINDOW)
                    endpoint.quota_holds = max(endpoint.quota_holds, ends)
        return endpoint.ready(now)

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
        endpoint = self.endpoints[index]
        lease = Lease(next(self._ids), index, worker, tokens, now, endpoint.issued)
        self._leases[lease.lease_id] = lease
        endpoint.issued += 1
        self._reserved += tokens
        if self._began is None:
            self._began = now
        if endpoint.quota is not None:
            endpoint.quota.spend(tokens)
        endpoint.in_flight += 1
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

    async def give_back_many(self, lease_ids: list[int], idle: int) -> None:
        """`give_back` for several permits of one worker, dispatched once."""
        for lease_id in lease_ids:
            lease = self._leases.pop(lease_id, None)
            if lease is not None:
                self.idle(lease.worker, idle)
                self._free(lease)
        self._dispatch()

    def _return(self, lease_id: int) -> None:
        lease = self._leases.pop(lease_id, None)
        if lease is not None:
            self._free(lease)
        self._dispatch()

    def _free(self, lease: Lease) -> None:
        self._reserved -= lease.tokens
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
            if usage.quota is not None:
                # Which requests this one preceded is not known here: all on the wire.
                unseen = self.endpoints[endpoint].in_flight
                self._heed(self.endpoints[endpoint], usage, unseen, self._request_tokens)
            self._account(endpoint, usage, self.clock() - max(ago, 0.0), self._on_wire())
            self._dispatch()  # the adaptive limit may have risen: grant what it allows

    def idle(self, worker: str, count: int) -> None:
        """How many of `worker`'s permits wait for its next request (its last report):
        held, but not on the wire, so the adaptive controller does not count them."""
        if count > 0:
            self._idle[worker] = count
        else:
            self._idle.pop(worker, None)
        self.pace.mark(self.clock(), self._on_wire(), self.pace.waiting)

    def keep(self, worker: str) -> int:
        """How many permits `worker` may keep for its next requests without asking.

        None while a rate ceiling counts each request, an endpoint is paused or
        rested, or the run stops: every request then goes through the queue here.
        Otherwise all of them, unless another worker waits here, when a fair share;
        and when the limit fell below what is out, what is out less the excess."""
        now = self.clock()
        if self.stopped or self.rpm or self.tpm or self.budget.set:
            return 0
        if any(not endpoint.ready(now) for endpoint in self._live()):
            return 0
        limit = self.current_limit
        # Near a quota's end every request is counted here: kept permits go unseen
        # until their outcomes are reported.
        low = QUOTA_LOW_WATER * limit
        if any(
            e.quota is not None and e.quota.low(low, low * self._request_tokens)
            for e in self._live()
        ):
            return 0
        held = self._held.get(worker, 0)
        if self.in_flight > limit:
            return max(held - (self.in_flight - limit), 0)
        others = {w.worker for w in self._queue if not w.future.done()} - {worker}
        if not others:
            return limit
        return -(-limit // len(others | set(self._held) | {worker}))

    def _settle(self, lease: Lease, usage: Usage) -> None:
        self._free(lease)
        endpoint = self.endpoints[lease.endpoint]
        if usage.quota is not None:
            # Requests granted after this one may have reached the provider after it
            # counted what is left: they are spent from its word.
            self._heed(endpoint, usage, endpoint.issued - lease.issued - 1, lease.tokens)
        self._account(lease.endpoint, usage, self.clock(), self._on_wire() + 1)

    def _heed(self, endpoint: Endpoint, usage: Usage, unseen: int, tokens: int) -> None:
        """Take a quota report's word, less the `unseen` requests (of about `tokens`
        each) granted since that the provider may not have counted yet."""
        quota = usage.quota
        assert quota is not None
        now = self.clock()
        endpoint.quota = Allowance(
            None if quota.requests is None else quota.requests - max(unseen, 0),
            now + (quota.requests_reset or 0.0),
            None if quota.tokens is None else quota.tokens - max(unseen, 0) * tokens,
            now + (quota.tokens_reset or 0.0),
        )

    def _on_wire(self) -> int:
        """Permits out, less those idle at their workers: requests on the wire."""
        return max(self.in_flight - sum(self._idle.values()), 0)

    def _account(self, index: int, usage: Usage, now: float, in_flight: int) -> None:
        """What a finished request tells the pool: counts, endpoint health, the limit."""
        endpoint = self.endpoints[index]
        self.outcomes[usage.outcome] += 1
        self.pace.finished(usage.latency_seconds, usage.outcome)
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if endpoint.retired:
            return  # its replica was lost: what its last requests met says nothing of it
        if usage.outcome == "ok" and usage.input_tokens + usage.output_tokens:
            spent = usage.input_tokens + usage.output_tokens
            self._request_tokens += (spent - self._request_tokens) * 0.1
        if usage.retry_after is not None and math.isfinite(usage.retry_after):
            pause = min(max(usage.retry_after, 0.0), BACKOFF_CEILING_SECONDS)  # as promised
            endpoint.pause(now + pause, now, RETRY_AFTER)
        if usage.outcome == "ok":
            endpoint.failures, endpoint.rests = 0, 0
            endpoint.completions += 1
        elif usage.outcome != "http_429" and not usage.outcome.startswith("http_4"):
            endpoint.failures += 1
            if endpoint.failures >= FAILURES_BEFORE_REST and len(self._live()) > 1:
                rest = min(FIRST_REST_SECONDS * 2**endpoint.rests, LONGEST_REST_SECONDS)
                endpoint.rested_until, endpoint.rested_since = now + rest, now
                endpoint.rests += 1
                endpoint.failures = 0
        if self.adaptive is not None:
            # Reports arrive in batches: never feed the controller time running backwards.
            self._observed = max(self._observed, now)
            self.adaptive.observe(usage.latency_seconds, usage.outcome, in_flight, self._observed)

    def add(self, url: str) -> int:
        """A new endpoint (a replica that just started): its index, for good — indices are
        never reused, so a lease or a worker's route always means one server."""
        self.endpoints.append(Endpoint(url))
        self._shortage()
        self._dispatch()
        return len(self.endpoints) - 1

    def retire(self, index: int) -> None:
        """Endpoint `index`'s replica is lost: no grant reaches it again. Its requests on the
        wire end as they end (their workers abandon them and ask again elsewhere); their
        permits come back with their outcomes."""
        if 0 <= index < len(self.endpoints) and not self.endpoints[index].retired:
            self.endpoints[index].retired = True
            self._shortage()
            self._dispatch()

    def _live(self) -> list[Endpoint]:
        return [endpoint for endpoint in self.endpoints if not endpoint.retired]

    def _missing(self) -> int:
        """Replicas asked for that are not up now (0 for the user's own endpoints)."""
        return max(self.replicas - len(self._live()), 0) if self.replicas else 0

    def _shortage(self) -> None:
        now = self.clock()
        self.pace.short(now, self._missing())
        if self._live():
            self._short_since = None
        elif self._short_since is None:
            self._short_since = now

    def addresses(self) -> list[str]:
        """Every endpoint's URL by index, the retired included (a worker's route table)."""
        return [endpoint.url for endpoint in self.endpoints]

    def register(self, index: int, incarnation: str) -> None:
        """A worker (re)started: leases of its previous incarnation died with it."""
        previous = self._incarnations.get(index)
        self._incarnations[index] = incarnation
        if previous is None or previous == incarnation:
            return
        self._drop(previous)

    def incarnation(self, index: int) -> str | None:
        return self._incarnations.get(index)

    def endpoint_of(self, lease_id: int) -> int | None:
        """The endpoint lease `lease_id` was granted on, while it is out."""
        lease = self._leases.get(lease_id)
        return None if lease is None else lease.endpoint

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
        self._dispatch()

    def _drop(self, incarnation: str) -> None:
        """A dead worker's permits come back, and its requests still queued here are
        cancelled (their caller is gone: a grant to one would never come back). What
        its requests met is unknown — the worker died, not the endpoint — so nothing
        is counted against an endpoint's health (resting both endpoints of a run for
        minutes when a spot node went, issue 23) or fed to the adaptive limit."""
        self._idle.pop(incarnation, None)
        for lease in [lease for lease in self._leases.values() if lease.worker == incarnation]:
            del self._leases[lease.lease_id]
            self._free(lease)
            self.outcomes["lost"] += 1
        for waiter in self._queue:
            if waiter.worker == incarnation and not waiter.future.done():
                waiter.future.cancel()

    async def wake(self) -> None:
        """Grant permits freed outside `release` (a restarted worker's) to waiters."""
        self._dispatch()

    async def stop(self) -> None:
        """Refuse every permit from now on, to the callers waiting too."""
        self._stop_now()

    def _stop_now(self) -> None:
        self.stopped = True
        self.pace.mark(self.clock(), self._on_wire(), None)
        queue, self._queue = self._queue, []
        for waiter in queue:
            if not waiter.future.done():
                waiter.future.set_exception(Stopped())
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def paused(self) -> dict[str, Any] | None:
        """What pauses the run now (`paused.Paused.record`), or None: an endpoint's 429,
        its provider's window or its rest, or --rpm/--tpm while requests wait on them."""
        now = self.clock()
        waiting = any(not waiter.future.done() for waiter in self._queue)
        if self._short_since is not None and waiting:  # no replica up: nothing else matters
            down = Paused(ENGINE, now - self._short_since, 0.0, self.replicas, self.replicas)
            return down.record()
        found = paused([e.hold() for e in self._live()], now, self._rate_hold if waiting else None)
        return None if found is None else found.record()

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
            "cost_usd": self.spent_usd(),
            "halted": self.halted,
            "paused": self.paused(),
            "endpoints": [
                {
                    "url": e.url,
                    "in_flight": e.in_flight,
                    "completions": e.completions,
                    "paused": e.paused_until > self.clock(),
                    "rested": e.rested_until > self.clock(),
                    "retired": e.retired,
                }
                for e in self.endpoints
            ],
            "limit_changes": list(self.adaptive.changes) if self.adaptive else [],
        }
