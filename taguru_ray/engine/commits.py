"""A worker's commit turns in batches: one ledger call for the turns asked together.

A call to the ledger costs the worker and the ledger each a few hundred
microseconds of CPU, as much as the rest of a small segment's bookkeeping, and
every segment takes its turn (ADR 0019). The turns a worker's segments ask for
in the same turn of its event loop go in one streaming call; the ledger answers
each as its turn comes, those that came together in one item, so a segment
never waits for a later batch-mate's turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from taguru_ray.engine.batches import gather_s
from taguru_ray.pipeline.claims import Proposal, Verdict

Turn = tuple[int, Proposal, "asyncio.Future[Verdict | None]"]


# While its worker holds GATHER_WHEN segments or more (`batches.gather_s`), the turns
# asked within GATHER_S of the first go in one call: at 64 in flight on a 2-core host a
# loop turn held one turn or two, so a completion cost a streaming call, most of the
# ledger's CPU and a few hundred microseconds of the worker's (issue 51, ADR 0087).
# A narrow window (fewer held) still asks at once: its segments would wait on it.
GATHER_S = 0.05


class CommitBatches:
    def __init__(self, ledger: Any, held: Callable[[], int] = lambda: 0) -> None:
        self._ledger = ledger
        self._held = held  # how many segments the worker holds now
        self._pending: list[Turn] = []
        self._streams: set[asyncio.Task[None]] = set()

    def commit(self, index: int, proposal: Proposal) -> asyncio.Future[Verdict | None]:
        """Segment `index`'s verdict once its turn comes (None: the run stopped first)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Verdict | None] = loop.create_future()
        if not self._pending:
            if gather_s(self._held()) is None:
                loop.call_soon(self._send)  # after every turn asked in this loop turn
            else:
                loop.call_later(GATHER_S, self._send)
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
