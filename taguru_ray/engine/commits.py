"""A worker's commit turns in batches: one ledger call for the turns a loop turn asks.

A call to the ledger costs the worker and the ledger each a few hundred
microseconds of CPU, as much as the rest of a small segment's bookkeeping, and
every segment takes its turn (ADR 0019). The turns a worker's segments ask for
in the same turn of its event loop go in one streaming call; the ledger answers
each as its turn comes, those that came together in one item, so a segment
never waits for a later batch-mate's turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from taguru_ray.pipeline.claims import Proposal, Verdict

Turn = tuple[int, Proposal, "asyncio.Future[Verdict | None]"]


class CommitBatches:
    def __init__(self, ledger: Any) -> None:
        self._ledger = ledger
        self._pending: list[Turn] = []
        self._streams: set[asyncio.Task[None]] = set()

    def commit(self, index: int, proposal: Proposal) -> asyncio.Future[Verdict | None]:
        """Segment `index`'s verdict once its turn comes (None: the run stopped first)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Verdict | None] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._send)  # after every turn asked in this loop turn
        self._pending.append((index, proposal, future))
        return future

    def _send(self) -> None:
        batch, self._pending = self._pending, []
        task = asyncio.ensure_future(self._stream(batch))
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)

    async def _stream(
        self, batch: list[tuple[int, Proposal, asyncio.Future[Verdict | None]]]
    ) -> None:
        waiting: dict[int, list[asyncio.Future[Verdict | None]]] = {}
        for index, _, future in batch:
            waiting.setdefault(index, []).append(future)
        error: BaseException = RuntimeError("the ledger ended the batch without every verdict")
        try:
            call = self._ledger.commit_many.options(num_returns="streaming")
            async for item in call.remote([(index, proposal) for index, proposal, _ in batch]):
                for index, verdict in await item:
                    for future in waiting.pop(index, []):
                        if not future.done():
                            future.set_result(verdict)
        except Exception as raised:
            error = raised
        for futures in waiting.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)
