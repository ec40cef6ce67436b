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
SCAN_BATCH_BYTES = 16 * 1024 * 1024
SCAN_DEPTH = 2  # batches read at once: one waits on the disk while the other hashes
READERS = 5  # the manifest, the listing, the scan's batches, the early settling


class ScanAhead:
    """Segments read and hashed in name order, a batch per thread hop (a hop costs more
    than hashing a small segment), SCAN_DEPTH batches read at once while the one before
    them is consumed: a file not in the page cache is waited for on one thread while
    another hashes (ADR 0042).

    One consumer at a time: the early-settling thread, then the dispatch loop, which
    takes over once that thread has returned (its future orders the hand-over).
    A batch is SCAN_BATCH segments, cut short at SCAN_BATCH_BYTES of segment bytes;
    the rest of a cut batch is read next, before the batches after it. With `digests`
    (the helper process) a batch is hashed there first and its segments come unread.

    A serial part of the corpus (a dataset shard, read as one stream: `serial_end`
    gives its end, ADR 0075) is read one batch at a time: no batch crosses its
    bounds, and the next batch of it is asked for once the one before is taken,
    so its reader keeps one stream open and never holds more than a batch of rows.
    """

    def __init__(
        self,
        count: int,
        scan_one: Callable[[int, str | None], Scanned],
        executor: ThreadPoolExecutor,
        digests: Callable[[range], list[str | None]] | None = None,
        serial_end: Callable[[int], int | None] | None = None,
        next_serial: Callable[[int], int] | None = None,
    ) -> None:
        self._count = count
        self._serial_end = serial_end  # the end of the serial part at an index, or None
        self._next_serial = next_serial  # the first index a serial part holds, from one
        self._scan_one = scan_one  # (index, the digest the helper found, or None)
        self._digests = digests  # a batch's digests from the helper process (ADR 0046)
        self._executor = executor
        self._pending: deque[Scanned] = deque()
        self._next = 0  # the first index no batch was asked for
        # Batches asked for, in index order: (first index, end of its range, its read).
        self._ahead: deque[tuple[int, int, Future[list[Scanned]]]] = deque()
        self._fill()

    def _batch(self, start: int, stop: int) -> list[Scanned]:
        out: list[Scanned] = []
        held = 0
        known = self._digests(range(start, stop)) if self._digests is not None else None
        for index in range(start, stop):
            scanned = self._scan_one(index, known[index - start] if known else None)
            out.append(scanned)
            held += len(scanned.data or b"")
            if held > SCAN_BATCH_BYTES:
                break
        return out

    def _fill(self) -> None:
        while len(self._ahead) < SCAN_DEPTH and self._next < self._count:
            start, stop = self._next, min(self._next + SCAN_BATCH, self._count)
            end = self._serial_end(start) if self._serial_end is not None else None
            if end is not None:
                # One batch of a serial part at a time: wait for the one asked for.
                if any(self._serial_end(first) == end for first, _, _ in self._ahead):
                    break
                stop = min(stop, end)
            elif self._next_serial is not None:
                stop = min(stop, max(start + 1, self._next_serial(start)))
            self._ahead.append((start, stop, self._executor.submit(self._batch, start, stop)))
            self._next = stop

    def _take(self, batch: list[Scanned]) -> None:
        start, stop, _ = self._ahead.popleft()
        cut = start + len(batch)
        if cut < stop:  # cut short by its bytes: the rest comes before the batches after it
            self._ahead.appendleft((cut, stop, self._executor.submit(self._batch, cut, stop)))
        self._fill()
        self._pending.extend(batch)

    def next_now(self) -> Scanned | None:
        """The next segment, waiting on this thread; None after the last."""
        while not self._pending:
            if not self._ahead:
                return None
            self._take(self._ahead[0][2].result())
        return self._pending.popleft()

    async def next(self) -> Scanned | None:
        """The next segment, waiting without blocking the event loop; None after the last."""
        while not self._pending:
            if not self._ahead:
                return None
            self._take(await asyncio.wrap_future(self._ahead[0][2]))
        return self._pending.popleft()

    def put_back(self, scanned: Scanned) -> None:
        """Return the segment just taken: the next consumer starts with it."""
        self._pending.appendleft(scanned)
