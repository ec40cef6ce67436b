"""The driver's reading, started before Ray is: segments, the manifest, the --out listing.

Ray takes seconds to start. Reading and hashing the corpus, parsing the
manifest and listing --out need none of it, so they start first, on threads,
and the leading segments that need no worker (unchanged, or refused) are
settled while Ray comes up. A rerun over a mostly unchanged corpus then costs
little more than starting Ray.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from taguru_ray.engine.scan import Scanned

SCAN_BATCH = 256
SCAN_BATCH_BYTES = 32 * 1024 * 1024
READERS = 4  # the manifest, the listing, the scan a batch ahead, the early settling


class ScanAhead:
    """Segments read and hashed in name order, a batch per thread hop (a hop costs more
    than hashing a small segment), the next batch read while this one is consumed.

    One consumer at a time: the early-settling thread, then the dispatch loop, which
    takes over once that thread has returned (its future orders the hand-over).
    A batch stops at SCAN_BATCH segments or SCAN_BATCH_BYTES of segment bytes.
    """

    def __init__(
        self, count: int, scan_one: Callable[[int], Scanned], executor: ThreadPoolExecutor
    ) -> None:
        self._count = count
        self._scan_one = scan_one
        self._executor = executor
        self._pending: deque[Scanned] = deque()
        self._next = 0
        self._ahead: Future[list[Scanned]] | None = self._read(0)

    def _batch(self, start: int) -> list[Scanned]:
        out: list[Scanned] = []
        held = 0
        for index in range(start, min(start + SCAN_BATCH, self._count)):
            scanned = self._scan_one(index)
            out.append(scanned)
            held += len(scanned.data or b"")
            if held > SCAN_BATCH_BYTES:
                break
        return out

    def _read(self, start: int) -> Future[list[Scanned]] | None:
        if start >= self._count:
            return None
        return self._executor.submit(self._batch, start)

    def _take(self, batch: list[Scanned]) -> None:
        self._next += len(batch)
        self._ahead = self._read(self._next)
        self._pending.extend(batch)

    def next_now(self) -> Scanned | None:
        """The next segment, waiting on this thread; None after the last."""
        while not self._pending:
            if self._ahead is None:
                return None
            self._take(self._ahead.result())
        return self._pending.popleft()

    async def next(self) -> Scanned | None:
        """The next segment, waiting without blocking the event loop; None after the last."""
        while not self._pending:
            if self._ahead is None:
                return None
            self._take(await asyncio.wrap_future(self._ahead))
        return self._pending.popleft()

    def put_back(self, scanned: Scanned) -> None:
        """Return the segment just taken: the next consumer starts with it."""
        self._pending.appendleft(scanned)
