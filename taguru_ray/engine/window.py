"""The deterministic segment window (SPEC 4.2) and the ordered report.

Segment *i* is prompted with the label vocabulary folded, in name order, from
segments ``0 .. i-W`` and may start once those have finished; W = 1 is the
reference's strictly sequential hand-off. `SegmentWindow` keeps the low-water
mark (the first unfinished segment), the fold, and which segments the claims
ledger has been handed: every segment a worker does not commit itself (ADR
0019). `OrderedReport` prints each segment's lines in name order, whatever
order segments finish in, so a log reads the same on every run.

A skipped segment is not stored at all (a run may skip a million): whatever
was classified, is not in flight and is neither refused nor extracted, was
skipped, and offers what its existing source file holds (`existing`), read
only when the fold or the claims ledger needs it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from taguru_ray.pipeline.steer import Contribution, LabelLedger, LabelUse


@dataclass
class SegmentWindow:
    width: int
    # What a skipped segment offers, by index (None: nothing, as in tests).
    existing: Callable[[int], Contribution] | None = None
    _frontier: int = 0  # segments below this are classified: skipped, refused or dispatched
    _in_flight: OrderedDict[int, None] = field(default_factory=OrderedDict)  # by index
    _extracted: dict[int, Contribution] = field(default_factory=dict)  # finished, not folded
    _refused: set[int] = field(default_factory=set)  # not folded yet
    _resolved: dict[int, Contribution] = field(default_factory=dict)  # skipped, read, not folded
    _shared: int = 0  # segments below this were handed to the claims ledger or commit there
    _ledger: LabelLedger = field(default_factory=LabelLedger)
    _folded: int = 0  # segments 0 .. _folded-1 are in the label fold
    # The dispatch loop waiting for a low-water mark: (mark needed, its future).
    _waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)

    @property
    def low_water(self) -> int:
        """Every segment below this index has finished."""
        return next(iter(self._in_flight)) if self._in_flight else self._frontier

    def seed(self, contribution: Contribution) -> None:
        """Fold what precedes every segment (the --vocabulary context's label uses)."""
        self._ledger.absorb(contribution)

    def skipped(self, index: int) -> None:
        """Synchronous, no lock: one event loop owns the window, and a skip run calls
        this once per segment (a hundred thousand times for a big unchanged corpus)."""
        self._classified(index)

    def refused(self, index: int) -> None:
        self._refused.add(index)
        self._classified(index)

    def dispatched(self, index: int) -> None:
        """Segment `index` goes to a worker: unfinished until `finish`."""
        self._in_flight[index] = None
        self._classified(index)

    def finish(self, index: int, contribution: Contribution) -> None:
        """A dispatched segment ended (written, failed or interrupted) offering this."""
        self._in_flight.pop(index, None)
        self._extracted[index] = contribution
        self._wake()

    def _classified(self, index: int) -> None:
        self._frontier = max(self._frontier, index + 1)
        self._wake()

    def _wake(self) -> None:
        if not self._waiters:
            return
        mark = self.low_water
        waiting, self._waiters = self._waiters, []
        for needed, future in waiting:
            if mark < needed:
                self._waiters.append((needed, future))
            elif not future.done():
                future.set_result(None)

    async def wait_eligible(self, index: int) -> None:
        """Wait until segments 0 .. index-W have all finished."""
        needed = index - self.width + 1
        if self.low_water >= needed:
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((needed, future))
        await future

    def vocabulary_upto(self, index: int) -> int:
        """Segments below this index are in the label fold segment `index` is offered."""
        return max(index - self.width + 1, 0)

    @property
    def shared(self) -> int:
        """Segments below this index are at the claims ledger (or commit there)."""
        return self._shared

    def unshared(self, below: int, limit: int) -> list[tuple[int, bool]]:
        """Up to `limit` segments below `below` not yet handed to the claims ledger, each
        with whether it was refused (else skipped): none of them commits there itself."""
        end = min(below, self._shared + limit)
        pending = [(index, index in self._refused) for index in range(self._shared, end)]
        self._shared = max(self._shared, end)
        return pending

    def commits(self, index: int) -> None:
        """Segment `index` commits at the claims ledger itself (its worker's turn)."""
        self._shared = max(self._shared, index + 1)

    def resolved(self, settled: list[tuple[int, Contribution]]) -> None:
        """Skipped segments already read for the claims ledger: the fold reuses them."""
        for index, contribution in settled:
            if index >= self._folded and index not in self._refused:
                self._resolved[index] = contribution

    def fold_upto(self, upto: int) -> None:
        """Fold segments below `upto`, in order; they must all have finished."""
        while self._folded < upto:
            index = self._folded
            if index in self._extracted:
                contribution = self._extracted.pop(index)
            elif index in self._refused:
                self._refused.discard(index)
                contribution = Contribution()
            elif index in self._resolved:
                contribution = self._resolved.pop(index)
            else:
                contribution = self.existing(index) if self.existing else Contribution()
            self._ledger.absorb(contribution)
            self._folded += 1

    def vocabulary_for(self, index: int) -> tuple[LabelUse, ...]:
        """The fold of segments 0 .. index-W.

        Call once `index` is eligible, in increasing index order: the ledger only
        grows, so the driver dispatches segments in name order.
        """
        upto = self.vocabulary_upto(index)
        if upto < self._folded:
            raise RuntimeError(f"vocabulary asked for segment {index} after a later one")
        self.fold_upto(upto)
        return self._ledger.ranked()


@dataclass
class OrderedReport:
    """Buffers each segment's lines and releases them in index order."""

    emit_out: Callable[[str], None]
    emit_err: Callable[[str], None]
    next_index: int = 0
    _pending: dict[int, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, index: int, lines: list[tuple[str, str]]) -> None:
        """`lines` are (stream, text) pairs, stream being "out" or "err"."""
        self._pending[index] = lines
        while self.next_index in self._pending:
            for stream, text in self._pending.pop(self.next_index):
                (self.emit_out if stream == "out" else self.emit_err)(text)
            self.next_index += 1
