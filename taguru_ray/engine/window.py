"""The deterministic segment window (SPEC 4.2) and the ordered report.

Segment *i* is prompted with the label vocabulary folded, in name order, from
segments ``0 .. i-W`` and may start once those have finished; W = 1 is the
reference's strictly sequential hand-off. `SegmentWindow` keeps the low-water
mark (the first unfinished segment) and the fold; `OrderedReport` prints each
segment's lines in name order, whatever order segments finish in, so a log
reads the same on every run.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from taguru_ray.pipeline.steer import Contribution, LabelLedger, LabelUse


class Skipped:
    """A segment skipped as unchanged: what it offers is read from its existing source
    file, and only if a later segment's fold needs it (`SegmentWindow.existing`)."""


SKIPPED = Skipped()
LazyContribution = Contribution | Callable[[], Contribution] | Skipped


@dataclass
class SegmentWindow:
    width: int
    # What a skipped segment offers, by index (None: nothing, as in tests).
    existing: Callable[[int], Contribution] | None = None
    low_water: int = 0  # every segment below this index has finished
    # Finished above the low-water mark (at most about W of them) ...
    _finished: dict[int, LazyContribution] = field(default_factory=dict)
    # ... and below it, not folded yet: segments _folded .. low_water-1, in order. A run
    # that skips a million segments and dispatches none holds a million sentinels here.
    _ready: deque[LazyContribution] = field(default_factory=deque)
    _ledger: LabelLedger = field(default_factory=LabelLedger)
    _folded: int = 0  # segments 0 .. _folded-1 are in the ledger
    # Folded since the driver last drained them, for the claims ledger.
    newly_folded: list[tuple[int, Contribution]] = field(default_factory=list)
    # The dispatch loop waiting for a low-water mark: (mark needed, its future).
    _waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)

    def seed(self, contribution: Contribution) -> None:
        """Fold what precedes every segment (the --vocabulary context's label uses)."""
        self._ledger.absorb(contribution)

    def finish(self, index: int, contribution: LazyContribution) -> None:
        """Record a finished segment (written, skipped or failed) and what it offers.

        Synchronous, no lock: one event loop owns the window, and a skip run calls
        this once per segment (a hundred thousand times for a big unchanged corpus).
        """
        if index != self.low_water:
            self._finished[index] = contribution
            return
        self._ready.append(contribution)
        self.low_water += 1
        while self.low_water in self._finished:
            self._ready.append(self._finished.pop(self.low_water))
            self.low_water += 1
        if self._waiters:
            waiting = self._waiters
            self._waiters = []
            for needed, future in waiting:
                if self.low_water < needed:
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

    def claims_upto(self, index: int) -> int:
        """Segments below this index are visible to segment `index`."""
        return max(index - self.width + 1, 0)

    def drain_folded(self) -> list[tuple[int, Contribution]]:
        folded, self.newly_folded = self.newly_folded, []
        return folded

    def vocabulary_for(self, index: int) -> tuple[LabelUse, ...]:
        """The fold of segments 0 .. index-W.

        Call once `index` is eligible, in increasing index order: the ledger only
        grows, so the driver dispatches segments in name order.
        """
        upto = self.claims_upto(index)
        if upto < self._folded:
            raise RuntimeError(f"vocabulary asked for segment {index} after a later one")
        while self._folded < upto:
            lazy = self._ready.popleft()
            if isinstance(lazy, Skipped):
                contribution = self.existing(self._folded) if self.existing else Contribution()
            else:
                contribution = lazy() if callable(lazy) else lazy
            self._ledger.absorb(contribution)
            self.newly_folded.append((self._folded, contribution))
            self._folded += 1
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
