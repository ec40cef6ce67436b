"""What a run shows while it goes: the progress display, the moves of the in-flight
limit, and the segment counts for Prometheus.

The progress bar is drawn on stderr below the report lines, so every line the run
prints lifts it first (`console`). Twice a second the loop (`watch`) sends the
tally's gains to Prometheus (`engine/run_metrics.py`) and, unless there is neither
a progress display nor an adaptive limit, asks the gateway for its counters: a
line for each move of `--max-inflight auto`'s limit, and the progress line — when
it is due, or at once when the gateway has just paused (a 429, a rate window).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import ray

from taguru_ray.engine.progress import Progress, mode_for
from taguru_ray.engine.run_metrics import SegmentMeter
from taguru_ray.engine.scan import Console, Tally
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.settings import Settings

WATCH_S = 0.5  # between looks at the tally and, when due, the gateway


class Monitor:
    def __init__(self, settings: Settings, tally: Tally, console: Console) -> None:
        self._tally = tally
        self._model = settings.transport.model
        self._adaptive = settings.transport.max_inflight == "auto"
        self._progress = Progress(
            mode_for(settings.records.progress, sys.stderr),
            tally.total,
            every=settings.records.progress_seconds,
        )
        self.console = Console(self._above(console.out), self._above(console.err))
        self._meter: SegmentMeter | None = None  # once Ray is up (`begin`)
        self._limit_changes_seen = 0
        self._pause_shown: object = None  # the gateway's pause the last line said

    def _above(self, emit: Callable[[str], None]) -> Callable[[str], None]:
        def emit_above(line: str) -> None:
            self._progress.clear()
            emit(line)

        return emit_above

    def clear(self) -> None:
        """Lift the progress bar, before a line printed past `console`."""
        self._progress.clear()

    def begin(self, run_id: str) -> None:
        """Count the run's segments for Prometheus: its metrics need Ray up."""
        self._meter = SegmentMeter(run_id, self._model, self._tally.total)

    def update(self) -> None:
        """Send Prometheus what the tally gained since the last look."""
        if self._meter is not None:
            self._meter.update(self._tally)

    async def watch(
        self,
        gateway: Any,
        paced: Callable[[], str | None] = lambda: None,
        engine: Callable[[], str | None] = lambda: None,
    ) -> None:
        """The progress display, and a line each time the adaptive limit moves; until
        cancelled. `paced` words what the run keeps in flight now and what holds it;
        `engine`, the run's own replicas while one is not up (`--engine`)."""
        progress, tally = self._progress, self._tally
        while True:
            await asyncio.sleep(WATCH_S)
            self.update()
            if not progress.due() and not self._adaptive and progress.mode == "off":
                continue  # nothing to show: no line, no limit moves
            try:
                stats = await gateway.stats.remote()
            except ray.exceptions.RayError:
                continue
            changes = stats.get("limit_changes", [])
            for change in changes[self._limit_changes_seen :]:
                rate = change.get("completions_per_s")
                at = f"{rate:g} completions/s, " if rate is not None else ""
                self.console.err(
                    f"{FAILURE_PREFIX}in-flight limit {change['from']} → {change['to']} "
                    f"({at}median latency {change['latency_ms']} ms, baseline "
                    f"{change['baseline_ms']} ms)"
                )
            self._limit_changes_seen = len(changes)
            # A pause that began since the last line is shown at once: plain lines come
            # every 15 s, and a 429's pause is often over by then.
            pause = stats.get("paused")
            began = pause is not None and self._pause_shown is None
            if pause is None:
                self._pause_shown = None
            if progress.due() or (began and progress.mode != "off"):
                self._pause_shown = pause
                done = tally.written + tally.failed + tally.unchanged + tally.interrupted
                progress.show(
                    progress.status(
                        done, tally.written, tally.failed, tally.unchanged, stats, paced(), engine()
                    )
                )
