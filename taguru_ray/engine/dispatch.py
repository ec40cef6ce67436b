"""The dispatch loop: each segment in name order skipped, refused or sent to a worker
once the window allows, and what the claims ledger is handed.

The loop takes over from the early settling (`engine/reading.py`) and keeps a
bounded number of segments submitted: segment *i* waits until the window
(`engine/window.py`, SPEC 4.2) makes it eligible — the one place the loop waits
on the window (`wait_eligible`) — and goes with the label fold of `0 .. i-W`.
Before it goes, every segment below it that no worker commits at the claims
ledger is settled there (ADR 0019): a skipped one offers its existing file's
names, a refused one nothing. A segment that fails settles nothing; those are
sent in batches, without waiting. How each segment ended is recorded as it
comes back, in the tally and the summary.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from taguru_ray.engine.head_actors import HeadActors
from taguru_ray.engine.reading import Reading
from taguru_ray.engine.same_bytes import SameBytes
from taguru_ray.engine.scan import Tally
from taguru_ray.engine.skipping import Skipping
from taguru_ray.engine.stopping import Stopping
from taguru_ray.engine.summary import SegmentRow, Summary
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.engine.workers import Workers
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.steer import Contribution

SETTLE_BATCH = 64  # settled segments per claims-ledger call
SETTLE_DELAY_S = 0.02  # the longest a failed segment's settling waits to be sent


class Dispatch:
    def __init__(
        self,
        reading: Reading,
        skipping: Skipping,
        window: SegmentWindow,
        tally: Tally,
        summary: Summary,
        actors: HeadActors,
        workers: Workers,
        stop: Stopping,
        existing: Callable[[int], Contribution],
        same_bytes: SameBytes | None = None,
    ) -> None:
        self._reading = reading
        self._skipping = skipping
        self._window = window
        self._tally = tally
        self._summary = summary
        self._actors = actors  # the claims ledger
        self._workers = workers
        self._stop = stop
        self._existing = existing  # what skipped segment `index` offers
        self._same_bytes = same_bytes  # warns of one file under two source ids
        self._unsent: list[tuple[int, Contribution]] = []  # failed segments, for the ledger
        self._settle_timer: asyncio.TimerHandle | None = None
        self._waited_s = 0.0  # on the window, in all (the pacing part reads it)
        self._waiting_since: float | None = None
        self.all_handed_out = False  # every segment skipped, refused or sent to a worker

    async def run(self) -> None:
        """Dispatch every segment the early settling left, then wait for them all."""
        tasks: list[asyncio.Task[None]] = []
        skipping, window, tally = self._skipping, self._window, self._tally
        while (scanned := await self._reading.scanner.next()) is not None:
            if self._stop.requested:
                break
            if skipping.unchanged(scanned):
                gaps = await asyncio.to_thread(skipping.gaps, scanned) if skipping.coverage else []
                skipping.skip(scanned, gaps)
                continue
            if scanned.inputs is None or scanned.data is None:
                skipping.refuse(scanned)
                continue
            index = scanned.index
            if self._same_bytes is not None:
                self._same_bytes.check(index, scanned.inputs["sha256"])
            tally.reached = index + 1
            window.dispatched(index)
            await self.wait_eligible(index)
            if self._stop.requested:
                tally.reached = index
                break
            await self._share_below(index)
            vocabulary = window.vocabulary_for(index)
            job = SegmentJob(
                index,
                scanned.source,
                scanned.data,
                scanned.written_id,
                vocabulary,
                skipping.manifest.previous_output(scanned.source),
                scanned.inputs.get("converter"),
            )
            tasks.append(asyncio.create_task(self._extract(job)))
        self.all_handed_out = True
        if self._stop.requested:  # nothing from the first segment not dispatched on may commit
            self._actors.ledger.abandon.remote(tally.reached)
        self._send_settled([], now=True)
        await asyncio.gather(*tasks)

    async def wait_eligible(self, index: int) -> None:
        """Until segment `index` may start (`SegmentWindow.wait_eligible`): the loop's one
        wait on the window, timed for the pacing part (`window_waited`)."""
        self._waiting_since = time.monotonic()
        try:
            await self._window.wait_eligible(index)
        finally:
            self._waited_s += time.monotonic() - self._waiting_since
            self._waiting_since = None

    def window_waited(self) -> float:
        """Seconds the loop has waited on the window so far, a wait under way included."""
        ongoing = 0.0 if self._waiting_since is None else time.monotonic() - self._waiting_since
        return self._waited_s + ongoing

    async def _share_below(self, index: int) -> None:
        """Settle at the claims ledger every segment below `index` no worker commits there:
        a skipped one offers its existing file's names (read on a thread, kept for the
        label fold), a refused one nothing. Segment `index` then commits itself."""
        window = self._window
        while pending := window.unshared(index, SETTLE_BATCH):
            settled = (
                await asyncio.to_thread(self._offers, pending)
                if not all(refused for _, refused in pending)
                else [(k, Contribution()) for k, _ in pending]
            )
            window.resolved(settled)
            self._actors.ledger.settle.remote(settled)
            window.fold_upto(min(window.shared, window.vocabulary_upto(index)))
        window.commits(index)

    def _offers(self, pending: list[tuple[int, bool]]) -> list[tuple[int, Contribution]]:
        return [
            (index, Contribution() if refused else self._existing(index))
            for index, refused in pending
        ]

    def _send_settled(self, settled: list[tuple[int, Contribution]], *, now: bool = False) -> None:
        """Settle failed segments at the claims ledger in batches, without waiting: the
        turns behind one wait for it, and a batch leaves within SETTLE_DELAY_S."""
        self._unsent.extend(settled)
        if not self._unsent:
            return
        if now or len(self._unsent) >= SETTLE_BATCH:
            self._actors.ledger.settle.remote(self._unsent)
            self._unsent = []
            if self._settle_timer is not None:
                self._settle_timer.cancel()
                self._settle_timer = None
        elif self._settle_timer is None:
            loop = asyncio.get_running_loop()
            self._settle_timer = loop.call_later(SETTLE_DELAY_S, self._settle_due)

    def _settle_due(self) -> None:
        self._settle_timer = None
        self._send_settled([], now=True)

    async def _extract(self, job: SegmentJob) -> None:
        """Run segment `job` on a worker and record how it ended. The window hears of
        its end whatever happens here: a segment it never hears of would hold every
        segment W past it back for ever."""
        contribution = Contribution()
        try:
            outcome = await self._workers.run_segment(job)
            contribution = outcome.contribution
            self._ended(job, outcome)
        finally:
            self._window.finish(job.index, contribution)

    def _ended(self, job: SegmentJob, outcome: SegmentOutcome) -> None:
        lines = [("err", note) for note in outcome.notes]
        if outcome.status == "written" and outcome.inputs is not None:
            # The worker made its journal entry durable and dropped its checkpoint.
            self._skipping.manifest.remember(job.source, outcome.inputs)
        if outcome.status == "written":
            self._tally.written += 1
            self._tally.empty += outcome.counts.get("associations") == 0
            lines.append(("out", outcome.report or ""))
        elif outcome.status == "interrupted":
            self._tally.interrupted += 1
            self._actors.ledger.abandon.remote(job.index)  # no later segment may commit now
            if outcome.fenced:
                self._stop.lease_lost(job.source)
        else:
            self._tally.failed += 1
            self._send_settled([(job.index, Contribution())])  # a failed one settles nothing
        self._summary.ended(
            job.index,
            SegmentRow(
                job.source,
                outcome.status,
                outcome.report,
                tuple(outcome.notes),
                outcome.completions,
            ),
            lines,
        )
