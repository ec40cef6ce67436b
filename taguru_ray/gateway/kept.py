"""The worker's side of the permit protocol: its requests' permits, kept and asked for.

One `GatewayAdmission` per segment worker stands between its HTTP client and
the gateway actor (`actor.Gateway`); `GatewayRung` is its segments' rung port.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import secrets
import time
from typing import Any

from taguru_ray.gateway.pace import Pace
from taguru_ray.gateway.pool import QUOTA_LOW_WATER, Stopped
from taguru_ray.gateway.wire import Grant, KeptOutcome, Outcome, Waiter, Word
from taguru_ray.llm.client import Usage

ASKING = 8  # a worker's requests asking the gateway on their own at once (swaps aside)
REPORT_S = 0.05  # how long a worker gathers kept permits' outcomes before reporting them
# A kept permit no request waits for stays at its worker: it goes back on the
# gateway's word (another worker waits, the limit fell, a ceiling or a pause), which a
# worker with traffic hears every REPORT_S and one holding idle permits asks for every
# IDLE_WORD_S (an empty report). Giving them back after a short idle cost two gateway
# calls a completion on a CPU-starved worker, whose requests come in bursts: back at
# one gap, asked for again at the next burst (issue 23, ADR 0041). IDLE_S only bounds
# a permit no word ever asked back; `flush` (the run's end) returns them all.
IDLE_S = 10.0
IDLE_WORD_S = 0.25


class GatewayAdmission:
    """The client-side `Admission` over a Gateway actor handle, for one worker.

    The gateway grants every permit, holds every pause, ceiling and stop, and
    numbers every attempt; how a worker talks to it is built to cost few calls:

    - **Kept permits** (ADR 0017). A request that finished well, in a worker
      with another request waiting, passes its permit straight to that request
      (the oldest waiting, as the gateway would have chosen). Its outcome is
      reported in a batch (`Gateway.report`) within REPORT_S, and the reply says
      how many permits the worker may keep: none while a rate ceiling counts
      requests, an endpoint is paused or rested, or the run stops; a fair share
      when another worker waits; fewer when the adaptive limit fell. A permit
      the worker may not keep goes back through the gateway's queue.
    - **A swap instead of a release and an acquire**: a permit going back while
      a request waits here is returned and asked for again in one call.
    - Besides the swaps, at most ASKING of a worker's requests (its oldest) ask
      the gateway on their own; the others wait here. Requests go oldest segment
      first (ADR 0016), here and at the gateway.
    - **Attempts are numbered in the reports**: an attempt's `attempt_seq`
      arrives with the next report after it was issued, in this worker's issue
      order, and is awaited only when the attempt is done.
    """

    def __init__(self, gateway: Any, index: int) -> None:
        self._gateway = gateway
        self._index = index
        self.incarnation = f"{index}-{secrets.token_hex(4)}"
        self.rung_seen: tuple[str | None] | None = None  # the rung the last word carried
        self._asking: list[Waiter] = []  # waiting for a gateway call (acquire, swap)
        self._queue: list[Waiter] = []  # a heap: waiting here
        self._order = itertools.count()
        self._stopped = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._held: dict[int, int] = {}  # lease id → endpoint, for every permit held here
        self._keep = 0  # how many permits this worker may keep: the gateway's last word
        self._kept: list[tuple[int, Outcome, float]] = []  # (endpoint, outcome, when)
        self._numbering: list[asyncio.Future[int]] = []  # issued, awaiting attempt_seq
        self._idle: dict[int, float] = {}  # kept permits no request waited for → since when
        self._reporting: asyncio.Task[None] | None = None
        self._given: Any = None  # the last give-back call, for `flush` to wait on
        self._heard = 0.0  # when this worker last reported (and heard the gateway's word)
        # This worker's requests on the wire, exactly (the gateway sees permits, some idle
        # here): from a permit's take to its release, integrated (ADR 0048).
        self.wire = Pace(time.monotonic())
        self._using = 0

    async def register(self) -> None:
        """Tell the gateway this worker (re)started, freeing a dead predecessor's permits."""
        await self._gateway.register.remote(self._index, self.incarnation)

    async def acquire(self, tokens: int, want_seq: bool, priority: int = 0) -> tuple[int, int, Any]:
        if self._stopped:
            raise Stopped()
        if self._idle:  # nobody waits here, or the permit would not be idle
            lease, _ = self._idle.popitem()
            return self._take(self._kept_grant(lease), want_seq)
        future = asyncio.get_running_loop().create_future()
        waiter = Waiter(priority, next(self._order), tokens, future)
        heapq.heappush(self._queue, waiter)
        self._ask()
        return self._take(await waiter.future, want_seq)

    def _take(self, granted: Any, want_seq: bool) -> tuple[int, int, Any]:
        if granted is None:
            raise Stopped()
        lease, endpoint, rung, keep = Grant(*granted)
        self.rung_seen = (rung,)
        self._keep = keep
        self._held[lease] = endpoint
        self._using += 1
        self.wire.mark(time.monotonic(), self._using, None)
        if not want_seq:
            return lease, endpoint, None
        number = asyncio.get_running_loop().create_future()
        self._numbering.append(number)
        self._schedule_report()
        return lease, endpoint, number

    def _kept_grant(self, lease: int) -> Grant:
        """A permit this worker holds, granted on: as the gateway's last word left it."""
        rung = self.rung_seen[0] if self.rung_seen else None
        return Grant(lease, self._held[lease], rung, self._keep)

    def _next_waiter(self) -> Waiter | None:
        while self._queue:
            waiter = heapq.heappop(self._queue)
            if not waiter.future.done():  # a cancelled request no longer waits
                return waiter
        return None

    def _oldest_waiter(self) -> Waiter | None:
        """The oldest request waiting, here or asking the gateway; a kept permit serves
        it (an asking request's grant, when it comes, goes to the next one)."""
        while self._queue and self._queue[0].future.done():
            heapq.heappop(self._queue)
        asking = [waiter for waiter in self._asking if not waiter.future.done()]
        oldest = min(asking, default=None)
        if self._queue and (oldest is None or self._queue[0] < oldest):
            return heapq.heappop(self._queue)
        return oldest

    def _ask(self) -> None:
        """Send waiters to the gateway until ASKING of them are there."""
        while len(self._asking) < ASKING and not self._stopped:
            waiter = self._next_waiter()
            if waiter is None:
                return
            call = self._gateway.acquire.remote(self.incarnation, waiter.tokens, waiter.priority)
            self._spawn(self._deliver(call, waiter), waiter)

    def _spawn(self, coroutine: Any, waiter: Waiter) -> None:
        self._asking.append(waiter)
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, call: Any, waiter: Waiter) -> None:
        """Hand what a gateway call brought to its waiter; then ask for the next ones."""
        try:
            try:
                granted = await call
            finally:
                self._asking.remove(waiter)
            if granted is None:
                self._stop()
            if waiter.future.done():  # served by a kept permit, or cancelled, meanwhile
                if granted is not None:
                    other = self._next_waiter()
                    if other is not None:
                        other.future.set_result(granted)
                    else:
                        self._gateway.give_back.remote(Grant(*granted).lease)
                return
            waiter.future.set_result(granted)
        except Exception as error:  # the gateway is gone: the waiter's request fails
            if not waiter.future.done():
                waiter.future.set_exception(error)
        finally:
            self._ask()

    def _stop(self) -> None:
        """The run is stopping: every request waiting here is refused at once."""
        self._stopped = True
        self._keep = 0
        queue, self._queue = self._queue, []
        for waiter in queue:
            if not waiter.future.done():
                waiter.future.set_result(None)
        self._return_idle(None)

    def halt(self) -> None:
        """The driver's word that the run stops: nothing new starts on a kept permit
        while the gateway's own word is on its way."""
        self._stop()

    async def release(self, lease_id: int, usage: Usage) -> None:
        # Never awaited on the gateway: the request it belonged to is already done.
        self._using = max(self._using - 1, 0)
        self.wire.mark(time.monotonic(), self._using, None)
        fields = Outcome.of(usage)
        endpoint = self._held.get(lease_id)
        if (
            endpoint is not None
            and usage.outcome == "ok"
            and len(self._held) <= self._keep
            and not self._stopped
            and not _quota_low(usage, self._keep)
        ):
            self._kept.append((endpoint, fields, time.monotonic()))
            self._schedule_report()
            waiter = self._oldest_waiter()
            if waiter is None:
                # The worker's next request is usually a few milliseconds away: the
                # permit waits for it here, and goes back if none comes (`_report`).
                self._idle[lease_id] = time.monotonic()
                return
            waiter.future.set_result(self._kept_grant(lease_id))
            return
        self._held.pop(lease_id, None)
        waiter = None if self._stopped else self._next_waiter()
        if waiter is None:
            self._gateway.release.remote(lease_id, fields)
            return
        call = self._gateway.swap.remote(
            lease_id, fields, self.incarnation, waiter.tokens, waiter.priority
        )
        self._spawn(self._deliver(call, waiter), waiter)

    async def flush(self) -> None:
        """Wait until every outcome and number this worker holds has been reported, its
        idle permits given back (the run's totals read the gateway next)."""
        self._return_idle(math.inf)
        while self._reporting is not None and not self._reporting.done():
            await asyncio.shield(self._reporting)
        if self._given is not None:
            given, self._given = self._given, None
            with contextlib.suppress(Exception):  # the gateway is gone: so is the run
                await given

    def _schedule_report(self) -> None:
        if self._reporting is None or self._reporting.done():
            self._reporting = asyncio.ensure_future(self._report())

    async def _report(self) -> None:
        """Every REPORT_S while there is something to say: kept permits' outcomes, and
        the attempts issued since, to be numbered."""
        while True:
            await asyncio.sleep(REPORT_S)
            now = time.monotonic()
            self._return_idle(now - IDLE_S)
            if not (self._kept or self._numbering):
                if not self._idle:
                    return
                if now - self._heard < IDLE_WORD_S:
                    continue
            self._heard = now
            kept, self._kept = self._kept, []
            numbering, self._numbering = self._numbering, []
            now = time.monotonic()
            batch = [KeptOutcome(endpoint, fields, now - at) for endpoint, fields, at in kept]
            try:
                word = await self._gateway.report.remote(
                    self.incarnation, batch, len(numbering), len(self._idle)
                )
                first, keep, stopped, rung = Word(*word)
            except Exception as error:  # the gateway is gone: so is the run
                for number in numbering:
                    if not number.done():
                        number.set_exception(error)
                return
            for offset, number in enumerate(numbering):
                if not number.done() and first is not None:  # asked for: numbers came
                    number.set_result(first + offset)
            self.rung_seen = (rung,)
            self._keep = 0 if self._stopped else keep
            if stopped:
                self._stop()
            self._return_idle(None)  # what the new word does not let this worker keep

    def _return_idle(self, before: float | None) -> None:
        """Give back idle permits, all in one call: those idle since `before`, and any
        over the keep."""
        returned = []
        for lease, since in list(self._idle.items()):
            if (before is not None and since <= before) or len(self._held) > self._keep:
                del self._idle[lease]
                del self._held[lease]
                returned.append(lease)
        if returned:
            self._given = self._gateway.give_back_many.remote(returned, len(self._idle))

    async def next_attempt_seq(self) -> int:
        return int(await self._gateway.next_attempt_seq.remote())


def _quota_low(usage: Usage, keep: int) -> bool:
    """The provider says its window is nearly spent: the permit goes back to the gateway,
    which then counts every request until the window resets (pool.QUOTA_LOW_WATER)."""
    quota = usage.quota
    return (
        quota is not None
        and quota.requests is not None
        and (quota.requests < QUOTA_LOW_WATER * max(keep, 1))
    )


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
