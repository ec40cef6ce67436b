"""The claims ledger as a Ray actor: one copy of what earlier segments settled.

The driver folds finished segments into it in name order, in batches it does
not wait for; workers look up only the spellings a segment's aliases use, as
of that segment's window, and a lookup waits until every segment it may see
has been folded. Batches may arrive out of order: each is held until the
segments before it are in, since the first claim of a spelling wins.
"""

from __future__ import annotations

import asyncio

import ray

from taguru_ray.pipeline.claims import ClaimLedger
from taguru_ray.pipeline.steer import Contribution

CONTEXT_INDEX = -1  # the --vocabulary export: folded before every segment


@ray.remote(num_cpus=0, max_concurrency=1000)
class Ledger:
    """Async, so calls interleave on one event loop and never race on the ledger."""

    def __init__(self) -> None:
        self._claims = ClaimLedger()
        self._next = 0  # segments below this index are folded
        self._held: dict[int, Contribution] = {}
        self._folded: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._folded is None:  # created on the actor's event loop
            self._folded = asyncio.Condition()
        return self._folded

    async def absorb(self, folded: list[tuple[int, Contribution]]) -> None:
        for index, contribution in folded:
            if index == CONTEXT_INDEX:
                self._claims.absorb(index, contribution)
            else:
                self._held[index] = contribution
        while self._next in self._held:
            self._claims.absorb(self._next, self._held.pop(self._next))
            self._next += 1
        async with self._condition():
            self._condition().notify_all()

    async def lookups(
        self, queries: list[tuple[str, str]], upto: int
    ) -> dict[tuple[str, str], str]:
        async with self._condition():
            await self._condition().wait_for(lambda: self._next >= upto)
        return self._claims.lookups(queries, upto)
