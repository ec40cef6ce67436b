"""The gateway: one coordinator of the run's completion permits and its rung.

Every HTTP request to a model endpoint holds a permit while it is on the wire,
so the in-flight cap, the rate ceilings and endpoint health hold across every
worker of the run (`admission.PermitPool`). The gateway is a coordinator, not
a proxy (ENGINE.md): request and answer bodies travel worker ↔ endpoint; the
gateway hands out leases naming the endpoint, numbers attempts in issue order
(`attempt_seq` is run-wide), holds the run-wide structured-output rung, and
keeps the counters the progress display and the metrics read. A worker with
requests waiting returns a finished request's permit and takes the next in one
call (`swap`, ADR 0015); requests are served oldest segment first (ADR 0016).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import secrets
from dataclasses import dataclass, field
from typing import Any

import ray

from taguru_ray.engine import heap, metrics
from taguru_ray.llm.admission import Lease, PermitPool, Stopped, priority
from taguru_ray.llm.client import Usage
from taguru_ray.llm.ladder import RungState

ASKING = 8  # a worker's requests asking the gateway on their own at once (swaps aside)


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
        run_inputs: list[Any] | None = None,  # [ObjectRef of the run's RunInputs]
    ) -> None:
        self._pool = PermitPool(urls, limit, rpm, tpm)
        self._rung = RungState(rung) if rung is not None else None
        self._run_inputs = run_inputs or []
        heap.settle()

    async def run_inputs(self) -> list[Any]:
        """The run's inputs as [ObjectRef]: a worker fetches them once, from the copy the
        driver owns, however often it is restarted."""
        return self._run_inputs

    async def acquire(
        self, worker: str, tokens: int, want_seq: bool = False, priority: int = 0
    ) -> tuple[int, int, int | None, str | None] | None:
        """(lease id, endpoint index, attempt_seq when asked, the rung now), or None once
        stopping. The rung rides along so a worker's rung port needs no call of its own."""
        try:
            lease = await self._pool.acquire(worker, tokens, priority)
        except Stopped:
            return None
        return self._grant(lease, want_seq)

    def _grant(self, lease: Lease, want_seq: bool) -> tuple[int, int, int | None, str | None]:
        metrics.in_flight(self._pool.in_flight)
        seq = self._pool.next_attempt_seq() if want_seq else None
        return lease.lease_id, lease.endpoint, seq, self._rung.rung if self._rung else None

    async def release(self, lease_id: int, usage: tuple[Any, ...]) -> None:
        """`usage` is a Usage's fields as a plain tuple: msgpack on the wire, not pickle."""
        done = Usage(*usage)
        await self._pool.release(lease_id, done)
        self._report(done)

    def _report(self, done: Usage) -> None:
        metrics.request_done(done, self._pool.in_flight, self._pool.current_limit)

    async def swap(
        self,
        lease_id: int,
        usage: tuple[Any, ...],
        worker: str,
        tokens: int,
        want_seq: bool,
        priority: int = 0,
    ) -> tuple[int, int, int | None, str | None] | None:
        """`release` and `acquire` in one call, for a worker with another request waiting:
        a grant in turn (the oldest segment's request first, this one included), or None
        once stopping."""
        done = Usage(*usage)
        try:
            lease = await self._pool.swap(lease_id, done, worker, tokens, priority)
        except Stopped:
            await self._pool.release(lease_id, done)  # refused before it was returned
            return None
        finally:
            self._report(done)
        return self._grant(lease, want_seq)

    async def give_back(self, lease_id: int) -> None:
        """A permit granted to a request that was cancelled before it could use it."""
        await self._pool.give_back(lease_id)

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


@dataclass(order=True)
class _Waiter:
    """A request of this worker waiting for a permit: here, or asking the gateway.
    The oldest segment's first (`admission.set_priority`), then in arrival order."""

    priority: int
    order: int
    tokens: int = field(compare=False)
    want_seq: bool = field(compare=False)
    future: asyncio.Future[Any] = field(compare=False)


class GatewayAdmission:
    """The client-side `Admission` over a Gateway actor handle, for one worker.

    A finished request whose worker has other requests waiting returns its permit
    and takes the next one in one call (`Gateway.swap`), instead of a release and
    another acquire: one actor call per completion, not two. The gateway still
    grants every permit, numbers every attempt and holds every pause, ceiling and
    stop. Requests go oldest segment first (ADR 0016), here and at the gateway:
    the permit a swap returns goes to the oldest request waiting, of any worker,
    the swap's own included. Besides the swaps, at most ASKING of a worker's
    requests (its oldest) ask the gateway on their own; the others wait here.
    """

    def __init__(self, gateway: Any, index: int) -> None:
        self._gateway = gateway
        self._index = index
        self.incarnation = f"{index}-{secrets.token_hex(4)}"
        self.rung_seen: tuple[str | None] | None = None  # the rung the last grant carried
        self._asking = 0  # calls at the gateway that will bring a permit (acquire, swap)
        self._queue: list[_Waiter] = []  # a heap
        self._order = itertools.count()
        self._stopped = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def register(self) -> None:
        """Tell the gateway this worker (re)started, freeing a dead predecessor's permits."""
        await self._gateway.register.remote(self._index, self.incarnation)

    async def acquire(self, tokens: int, want_seq: bool) -> tuple[int, int, int | None]:
        if self._stopped:
            raise Stopped()
        future = asyncio.get_running_loop().create_future()
        waiter = _Waiter(priority(), next(self._order), tokens, want_seq, future)
        heapq.heappush(self._queue, waiter)
        self._ask()
        return self._take(await waiter.future)

    def _take(self, granted: Any) -> tuple[int, int, int | None]:
        if granted is None:
            raise Stopped()
        lease, endpoint, seq, rung = granted
        self.rung_seen = (rung,)
        return lease, endpoint, seq

    def _next_waiter(self) -> _Waiter | None:
        while self._queue:
            waiter = heapq.heappop(self._queue)
            if not waiter.future.done():  # a cancelled request no longer waits
                return waiter
        return None

    def _ask(self) -> None:
        """Send waiters to the gateway until ASKING of them are there."""
        while self._asking < ASKING and not self._stopped:
            waiter = self._next_waiter()
            if waiter is None:
                return
            call = self._gateway.acquire.remote(
                self.incarnation, waiter.tokens, waiter.want_seq, waiter.priority
            )
            self._spawn(self._deliver(call, waiter))

    def _spawn(self, coroutine: Any) -> None:
        self._asking += 1
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, call: Any, waiter: _Waiter) -> None:
        """Hand what a gateway call brought to its waiter; then ask for the next ones."""
        try:
            try:
                granted = await call
            finally:
                self._asking -= 1
            if granted is None:
                self._stop()
            if waiter.future.done():  # cancelled meanwhile: the permit goes back unused
                if granted is not None:
                    self._gateway.give_back.remote(granted[0])
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
        queue, self._queue = self._queue, []
        for waiter in queue:
            if not waiter.future.done():
                waiter.future.set_result(None)

    async def release(self, lease_id: int, usage: Usage) -> None:
        # Never awaited on the gateway: the request it belonged to is already done.
        fields = (
            usage.outcome,
            usage.latency_seconds,
            usage.input_tokens,
            usage.output_tokens,
            usage.retry_after,
        )
        waiter = None if self._stopped else self._next_waiter()
        if waiter is None:
            self._gateway.release.remote(lease_id, fields)
            return
        call = self._gateway.swap.remote(
            lease_id, fields, self.incarnation, waiter.tokens, waiter.want_seq, waiter.priority
        )
        self._spawn(self._deliver(call, waiter))

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
