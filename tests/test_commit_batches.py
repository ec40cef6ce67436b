"""A worker's commit turns in batches (engine/commits.py, ADR 0087): a busy worker gathers
the turns asked within GATHER_S into one ledger call, a quiet one asks at once, and every
turn gets the verdict the ledger's order gives it either way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from taguru_ray.contract.items import Association
from taguru_ray.engine import commits
from taguru_ray.engine.batches import GATHER_WHEN
from taguru_ray.engine.ledger import CommitOrder
from taguru_ray.pipeline.claims import Proposal, Verdict
from taguru_ray.pipeline.steer import Contribution


class FakeLedger:
    """`Ledger.commit_many` over a real `CommitOrder`, without Ray: records each call's turns."""

    def __init__(self) -> None:
        self.order = CommitOrder()
        self.calls: list[list[int]] = []
        self.commit_many = self

    def options(self, **_: Any) -> FakeLedger:
        return self

    def remote(self, turns: list[tuple[int, Proposal]]) -> AsyncIterator[Any]:
        self.calls.append([index for index, _ in turns])
        return self._stream(turns)

    async def _stream(self, turns: list[tuple[int, Proposal]]) -> AsyncIterator[Any]:
        waiting = {
            asyncio.ensure_future(self.order.commit(index, proposal)): index
            for index, proposal in turns
        }
        while waiting:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            item = [(waiting.pop(task), task.result()) for task in done]
            yield asyncio.sleep(0, item)  # Ray yields object refs: awaited for the item


def proposal(index: int) -> Proposal:
    return Proposal(Contribution.of([Association(f"s{index}", "uses", f"o{index}")], []))


async def three_turns(held: int) -> tuple[FakeLedger, list[Verdict | None]]:
    ledger = FakeLedger()
    batches = commits.CommitBatches(ledger, lambda: held)
    futures = []
    for index in (2, 0, 1):  # asked in separate loop turns, out of order
        futures.append(batches.commit(index, proposal(index)))
        await asyncio.sleep(0.001)
    verdicts = await asyncio.wait_for(asyncio.gather(*futures), timeout=10)
    return ledger, verdicts


def test_a_busy_worker_sends_the_turns_asked_together_in_one_call() -> None:
    ledger, verdicts = asyncio.run(three_turns(GATHER_WHEN))
    assert ledger.calls == [[2, 0, 1]]
    assert all(verdict is not None for verdict in verdicts)
    assert ledger.order.next == 3


def test_a_quiet_worker_asks_at_once_and_gets_the_same_verdicts() -> None:
    busy = asyncio.run(three_turns(GATHER_WHEN))[1]
    ledger, quiet = asyncio.run(three_turns(GATHER_WHEN - 1))
    assert ledger.calls == [[2], [0], [1]]
    assert quiet == busy
