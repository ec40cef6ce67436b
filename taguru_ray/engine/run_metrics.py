"""The run's segments for Prometheus: how many it has, and how many have settled, by
outcome — what a dashboard needs to draw progress and an ETA.

The driver's tally changes on several threads (the early settling runs before Ray is
up), so the counts are not sent where they change: the driver's loop sends what each
outcome gained since it last looked, and once more before the summary.
"""

from __future__ import annotations

import time

from taguru_ray.engine.scan import Tally
from taguru_ray.llm import metrics


class SegmentMeter:
    def __init__(self, run_id: str, model: str, total: int) -> None:
        self._labels = {"run_id": run_id, "model": model}
        self._total = total
        self._sent = dict.fromkeys(metrics.SEGMENT_OUTCOMES, 0)
        self._total_at = time.monotonic()
        metrics.segments(total, **self._labels)

    def update(self, tally: Tally) -> None:
        for outcome, sent in self._sent.items():
            now = getattr(tally, outcome)
            if now > sent:
                metrics.segments_done(outcome, now - sent, **self._labels)
                self._sent[outcome] = now
        if time.monotonic() - self._total_at >= metrics.GAUGE_REFRESH_S:
            self._total_at = time.monotonic()  # a gauge left alone is dropped (metrics.py)
            metrics.segments(self._total, **self._labels)
