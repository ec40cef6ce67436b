"""The claims ledger as a Ray actor: one copy of what earlier segments settled.

The driver folds finished segments into it in name order (awaiting each
fold before it dispatches the segment that must see it); workers look up
only the spellings a segment's aliases use, as of that segment's window.
"""

from __future__ import annotations

import ray

from taguru_ray.pipeline.claims import ClaimLedger
from taguru_ray.pipeline.steer import Contribution


@ray.remote(num_cpus=0, max_concurrency=1000)
class Ledger:
    """Async, so calls interleave on one event loop and never race on the ledger."""

    def __init__(self) -> None:
        self._claims = ClaimLedger()

    async def absorb(self, folded: list[tuple[int, Contribution]]) -> None:
        for index, contribution in folded:
            self._claims.absorb(index, contribution)

    async def lookups(
        self, queries: list[tuple[str, str]], upto: int
    ) -> dict[tuple[str, str], str]:
        return self._claims.lookups(queries, upto)
