"""The claims ledger as a Ray actor: segments commit through it in name order.

Segment *i*'s aliases are judged against what every segment ``0 .. i-1``
settled (ADR 0019). Extraction stays parallel; only the judgement is serial,
and it runs here, in one event loop, so the chain from one segment's commit
to the next crosses no process: a worker sends its `Proposal` once its
answers are in and is answered once every earlier segment has settled.
The driver settles the segments no worker commits (skipped: its existing
file's names; refused or failed: nothing), in batches, in any order, and
abandons the first segment a stopped run will not settle, which answers every
later turn with None: nothing after it is written, so a stopped run leaves a
name-order prefix.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import ray

from taguru_ray.cpu import CpuReading, own_cpu
from taguru_ray.pipeline.claims import ClaimLedger, Proposal, Verdict, judge
from taguru_ray.pipeline.steer import Contribution

CONTEXT_INDEX = -1  # the --vocabulary export: folded before every segment


@dataclass
class CommitOrder:
    """The sequencer itself, free of Ray: testable on one event loop."""

    claims: ClaimLedger = field(default_factory=ClaimLedger)
    # False: the benchmark's baseline (TAGURU_RAY_COMMIT_ORDER=arrival): each turn is
    # judged at once against whatever has settled, and what it settles folded as it comes.
    ordered: bool = True
    next: int = 0  # segments below this index have settled
    horizon: int | None = None  # the first segment this run will never settle
    _held: dict[int, Contribution] = field(default_factory=dict)
    _turns: dict[int, list[tuple[Proposal, asyncio.Future[Verdict | None]]]] = field(
        default_factory=dict
    )

    def settle(self, settled: list[tuple[int, Contribution]]) -> None:
        """Segments no worker commits; one settled already (it committed, then its
        worker died and the driver gave up on it) keeps what it settled."""
        for index, contribution in settled:
            if index == CONTEXT_INDEX:
                self.claims.absorb(index, contribution)
            elif index >= self.next:
                self._held.setdefault(index, contribution)
        self._advance()

    async def commit(self, index: int, proposal: Proposal) -> Verdict | None:
        """Wait for the turn of segment `index`; None when the run stopped before it."""
        if index < self.next:  # settled already: a resubmitted segment gets the same answer
            return judge(proposal, self.claims.lookups(proposal.queries(), index))
        if self.horizon is not None and index > self.horizon:
            return None
        if not self.ordered:
            verdict = judge(proposal, self.claims.lookups(proposal.queries(), index))
            self.claims.absorb(index, verdict.contribution)
            return verdict
        future: asyncio.Future[Verdict | None] = asyncio.get_running_loop().create_future()
        self._turns.setdefault(index, []).append((proposal, future))
        self._advance()
        return await future

    def abandon(self, index: int) -> None:
        """Segment `index` will not settle in this run: no later segment may commit."""
        self.horizon = index if self.horizon is None else min(self.horizon, index)
        for waiting in [i for i in self._turns if i > self.horizon]:
            for _, future in self._turns.pop(waiting):
                if not future.done():
                    future.set_result(None)

    def _advance(self) -> None:
        while True:
            turns = self._turns.pop(self.next, None)
            if turns:
                # The first proposal to arrive settles the segment; a second (its worker
                # died and it was resubmitted) is judged against the same claims.
                verdicts = [
                    judge(proposal, self.claims.lookups(proposal.queries(), self.next))
                    for proposal, _ in turns
                ]
                self.claims.absorb(self.next, verdicts[0].contribution)
                self._held.pop(self.next, None)
                for (_, future), verdict in zip(turns, verdicts, strict=True):
                    if not future.done():
                        future.set_result(verdict)
            elif self.next in self._held:
                self.claims.absorb(self.next, self._held.pop(self.next))
            else:
                return
            self.next += 1


@ray.remote(num_cpus=0, max_concurrency=10_000)
class Ledger:
    """Async, so calls interleave on one event loop and never race on the order.

    It also holds the run's write deadline (epoch seconds): the driver sets it at
    every renewal of its lease on an object store, the workers fetch it to fence
    their writes. A driver that freezes stops setting it, and its workers then stop
    writing before another run can take the lease over (store/lease.py).

    And it hands out the run's inputs (`RunInputs`): the driver puts one copy in the
    object store, and a segment worker — a restarted one too — asks here once for its
    reference. The reference travels inside a list, so Ray passes it on as a reference,
    never resolved here. (An actor of its own for it cost every run a process start.)
    """

    def __init__(self, ordered: bool = True, inputs: list[Any] | None = None) -> None:
        self._order = CommitOrder(ordered=ordered)
        self._deadline = math.inf  # a local folder's flock needs no fence
        self._inputs = inputs or []  # [ObjectRef of the run's RunInputs]

    async def inputs(self) -> list[Any]:
        return self._inputs

    async def settle(self, settled: list[tuple[int, Contribution]]) -> None:
        self._order.settle(settled)

    async def commit(self, index: int, proposal: Proposal) -> Verdict | None:
        return await self._order.commit(index, proposal)

    async def commit_many(
        self, turns: list[tuple[int, Proposal]]
    ) -> AsyncIterator[list[tuple[int, Verdict | None]]]:
        """Several segments' turns in one call (a worker's, `commits.CommitBatches`): their
        verdicts as each turn comes, those that came together in one item."""
        waiting = {
            asyncio.ensure_future(self._order.commit(index, proposal)): index
            for index, proposal in turns
        }
        try:
            while waiting:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                yield [(waiting.pop(task), task.result()) for task in done]
        finally:
            for task in waiting:
                task.cancel()

    async def abandon(self, index: int) -> None:
        self._order.abandon(index)

    async def set_deadline(self, deadline: float) -> None:
        self._deadline = deadline

    async def cpu(self) -> CpuReading:
        """This process's host, cores and CPU seconds (`cpu.own_cpu`, ADR 0048)."""
        return own_cpu()

    async def deadline(self) -> float:
        return self._deadline
