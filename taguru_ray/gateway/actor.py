"""The gateway actor: one coordinator of the run's completion permits and its rung.

Every HTTP request to a model endpoint holds a permit while it is on the wire,
so the in-flight cap, the rate ceilings and endpoint health hold across every
worker of the run (`pool.PermitPool`). The gateway is a coordinator, not
a proxy (ENGINE.md): request and answer bodies travel worker ↔ endpoint; the
gateway hands out leases naming the endpoint, numbers attempts in issue order
(`attempt_seq` is run-wide), holds the run-wide structured-output rung, and
keeps the counters the progress display and the metrics read. A worker with
requests waiting returns a finished request's permit and takes the next in one
call (`swap`, ADR 0024); requests are served oldest segment first (ADR 0016).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import ray

from taguru_ray import heap
from taguru_ray.cpu import own_cpu
from taguru_ray.errors import EXIT_FAILED, EXIT_INTERRUPTED
from taguru_ray.gateway.fail_fast import FatalStreak
from taguru_ray.gateway.limits import CEILING
from taguru_ray.gateway.numbering import AttemptNumbers
from taguru_ray.gateway.pool import Lease, PermitPool, Stopped
from taguru_ray.gateway.wire import Grant, KeptOutcome, Outcome, Word
from taguru_ray.llm import metrics
from taguru_ray.llm.client import Usage
from taguru_ray.llm.endpoint_check import Blame, repeated_line
from taguru_ray.pipeline.ladder import RungState
from taguru_ray.pricing.tariff import Budget, Tariff


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
        *,
        run_id: str = "",
        model: str = "",
        tariff: Tariff | None = None,
        budget: Budget | None = None,
        blame: Blame | None = None,
        ceiling: int = CEILING,
        replicas: int = 0,
    ) -> None:
        """`run_id` and `model` label its metrics; `tariff`, when it knows a price, counts
        `taguru_ray_cost_usd`; `budget` stops the run before a request would cross it
        (`pool`); `blame`, when given, turns on fail-fast (`_judge`); `ceiling` is the
        most `auto` climbs to (ADR 0047); `replicas`, the engine's replicas asked for
        (`urls` are theirs, and `add_endpoint` and `retire_endpoint` follow them)."""
        self._pool = PermitPool(
            urls,
            limit,
            rpm,
            tpm,
            budget=budget or Budget(),
            tariff=tariff or Tariff(),
            ceiling=ceiling,
            replicas=replicas,
        )
        self._urls = list(urls)
        self._blame = blame
        self._streak = FatalStreak(len(urls))
        self._tripped = asyncio.Event()
        self._trip_line = ""
        self._trip_exit = EXIT_FAILED
        self._costed = 0.0  # dollars already counted in taguru_ray_cost_usd
        self._tally = metrics.RequestTally()
        self._numbers = AttemptNumbers()
        self._rung = RungState(rung) if rung is not None else None
        self._finished = False
        metrics.label(run_id, model)
        with contextlib.suppress(RuntimeError):  # an async actor starts in its event loop
            self._gauges = asyncio.get_running_loop().create_task(self._keep_gauges())
        heap.settle()

    async def acquire(self, worker: str, tokens: int, priority: int = 0) -> Grant | None:
        """(lease id, endpoint index, the rung now, how many permits the worker may
        keep), or None once stopping. The rung rides along so a worker's rung port
        needs no call of its own; attempts are numbered by `report`."""
        try:
            lease = await self._pool.acquire(worker, tokens, priority)
        except Stopped:
            self._halted()
            return None
        return self._grant(lease)

    def _grant(self, lease: Lease) -> Grant:
        keep = self._pool.keep(lease.worker)
        return Grant(lease.lease_id, lease.endpoint, self._rung.rung if self._rung else None, keep)

    async def release(self, lease_id: int, usage: tuple[Any, ...]) -> None:
        """`usage`: an `Outcome`, sent as a plain tuple (msgpack on the wire, not pickle)."""
        done = Outcome(*usage).usage()
        endpoint = self._pool.endpoint_of(lease_id)
        await self._pool.release(lease_id, done)
        self._report(done)
        await self._judge(endpoint, done)

    async def _keep_gauges(self) -> None:
        """Every FLUSH_S: the requests gathered since, the cost so far (a GPU-hour price
        runs on with the clock), in flight and the cap — set again while nothing changes
        them, as Ray's agent would drop them otherwise."""
        while True:
            await asyncio.sleep(metrics.FLUSH_S)
            self._flush()

    def _flush(self) -> None:
        spent = self._pool.spent_usd()
        if spent is not None and spent > self._costed:
            self._tally.usd += spent - self._costed
            self._costed = spent
        level = 0 if self._finished else self._pool.in_flight  # a late report changes nothing
        self._tally.flush(level, self._pool.current_limit)

    def _report(self, done: Usage) -> None:
        self._tally.add(done)

    async def swap(
        self,
        lease_id: int,
        usage: tuple[Any, ...],
        worker: str,
        tokens: int,
        priority: int = 0,
    ) -> Grant | None:
        """`release` and `acquire` in one call, for a worker with another request waiting:
        a grant in turn (the oldest segment's request first, this one included), or None
        once stopping."""
        done = Outcome(*usage).usage()
        await self._judge(self._pool.endpoint_of(lease_id), done)  # a trip refuses the swap
        try:
            lease = await self._pool.swap(lease_id, done, worker, tokens, priority)
        except Stopped:
            await self._pool.release(lease_id, done)  # refused before it was returned
            self._halted()
            return None
        finally:
            self._report(done)
        return self._grant(lease)

    async def report(
        self, worker: str, kept: list[tuple[Any, ...]], seqs: int, idle: int = 0
    ) -> Word:
        """A worker's batch: requests that finished on permits it kept (`KeptOutcome`s)
        and how many attempts it issued since its last report. `idle`: how many of its
        permits wait for its next request right now."""
        self._pool.idle(worker, idle)
        for item in kept:
            endpoint, outcome, ago = KeptOutcome(*item)
            done = Outcome(*outcome).usage()
            self._pool.renew(endpoint, done, ago)
            self._report(done)
            await self._judge(endpoint, done)
        first = self._numbers.take(seqs) if seqs else None
        keep = self._pool.keep(worker)
        return Word(first, keep, self._pool.stopped, self._rung.rung if self._rung else None)

    async def _judge(self, endpoint: int | None, done: Usage) -> None:
        """Fail-fast (ADR 0037): an endpoint refusing request after request the same way
        (401, 403, 404) with no success since stops the run at once, as a Ctrl+C does;
        the driver, waiting in `tripped`, prints the line and exits 1."""
        if self._blame is None or endpoint is None:
            return
        status = self._streak.observe(endpoint, done.outcome)
        if status is None:
            return
        self._trip_line = repeated_line(
            self._urls[endpoint], status, self._streak.streak, self._blame
        )
        await self._pool.stop()
        self._tripped.set()

    def _halted(self) -> None:
        """The pool stopped the run itself (a budget): the driver's word, as fail-fast's."""
        if self._pool.halted is not None and not self._tripped.is_set():
            self._trip_line, self._trip_exit = self._pool.halted, EXIT_INTERRUPTED
            self._tripped.set()

    async def tripped(self) -> tuple[str, int]:
        """Wait until the gateway stops the run on its own — fail-fast (exit 1) or the
        budget (exit 130, resumable) — and say why, with the exit code."""
        await self._tripped.wait()
        return self._trip_line, self._trip_exit

    async def give_back(self, lease_id: int, idle: int | None = None) -> None:
        """A permit no request used: granted to one that was cancelled or served
        meanwhile, or kept idle too long. `idle`: how many of the worker's permits
        still wait for its next request, now this one is back."""
        await self._pool.give_back(lease_id, idle)

    async def give_back_many(self, leases: list[int], idle: int) -> None:
        """Several idle permits of one worker at once; `idle` as `give_back`'s."""
        await self._pool.give_back_many(leases, idle)

    async def add_endpoint(self, url: str) -> int:
        """A replica of the run's engine is up at `url`: its endpoint index."""
        self._urls.append(url)
        self._streak.grow(len(self._urls))
        return self._pool.add(url)

    async def retire_endpoint(self, index: int) -> None:
        """Endpoint `index`'s replica is lost: nothing is granted on it again."""
        self._pool.retire(index)

    async def urls(self) -> list[str]:
        """Every endpoint's URL by index (a worker learns a new one's route here)."""
        return self._pool.addresses()

    async def register(self, index: int, incarnation: str) -> None:
        self._pool.register(index, incarnation)
        await self._pool.wake()

    async def incarnation(self, index: int) -> str | None:
        return self._pool.incarnation(index)

    async def forget(self, index: int, incarnation: str | None) -> None:
        """Worker `index`'s `incarnation` is gone and no successor registered: free what
        it held."""
        self._pool.forget(index, incarnation)

    async def next_attempt_seq(self) -> int:
        return self._numbers.next()

    async def stop(self) -> None:
        await self._pool.stop()

    async def finish(self) -> None:
        """The run is over: nothing of it is on the wire any more, whatever permits
        workers still keep, and the in-flight gauge says so before the actor ends."""
        self._finished = True
        await self._pool.stop()
        self._flush()  # what was gathered since the last tick, and in flight 0

    async def stats(self) -> dict[str, Any]:
        return {**self._pool.stats(), "attempts": self._numbers.issued}

    async def pace(self) -> dict[str, Any]:
        """The pool's pace since the run began (`pace.Pace.take`), the limit now and
        this process's CPU: what the driver samples each tick (ADR 0048)."""
        return {
            **self._pool.pace.take(self._pool.clock()),
            "limit": self._pool.current_limit,
            "replicas": self._pool.replicas,
            "cpu": own_cpu(),
        }

    async def rung(self) -> str | None:
        return self._rung.rung if self._rung else None

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        if self._rung is None:
            return False, ran_under
        return self._rung.demote(ran_under)
