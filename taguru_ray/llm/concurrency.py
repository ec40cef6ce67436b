"""Adaptive concurrency (`--max-inflight auto`): find the endpoint's knee and hold there.

Self-hosted servers never say "slow down": vLLM queues without bound and
Ollama answers 503 only when its queue is full. What they do show is latency:
while in-flight requests fit the server's batch, latency stays at its unloaded
level and throughput rises with every extra request; past the knee requests
queue, latency climbs and throughput stays flat. So, like TCP finding a
bottleneck: grow the limit while the window's median latency stays within a
tolerance of the best seen (doubling at first, then by a quarter once latency
starts to rise: a doubling near the knee overshoots it twofold), and shrink
it by the latency gradient (limit × baseline / latency, which lands on the knee
when the rise is queueing) when it climbs; a 429, 503 or timeout halves it.
The limit only grows while it is actually binding (the run keeps it full).

One slow window is not a knee: on a busy client the latency it measures
includes its own CPU queueing, which comes and goes. Only two slow windows in
a row shrink the limit (an overload answer still halves it at once); growing
by a quarter, not a tenth, reaches a knee of 64 from 32 in three windows.

After a shrink the server still holds the queue the old limit built, and it
drains over several windows: judging those windows would shrink again and
again, far below the knee. So the requests of the old limit's size that
finish next are not judged.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

START = 8
FLOOR = 1
CEILING = 4096
TOLERANCE = 1.3  # a median this much above the baseline is queueing
SLOW_WINDOWS = 2  # consecutive slow windows before the limit shrinks
SLOW_START_EXIT = 1.1  # doubling stops once a window's median rises this far
OVERLOAD = {"http_429", "http_503", "timeout"}


@dataclass
class AdaptiveLimit:
    limit: int = START
    baseline: float | None = None  # the best window median seen: the unloaded latency
    slow_start: bool = True
    changes: deque[dict[str, float]] = field(default_factory=lambda: deque(maxlen=64))
    _samples: list[float] = field(default_factory=list)
    _peak: int = 0  # the most in flight during the window
    _slow: int = 0  # consecutive windows whose median was past the tolerance
    _draining: int = 0  # finished requests still to pass unjudged after a shrink

    def observe(self, latency: float, outcome: str, in_flight: int) -> None:
        """One finished request: its latency, outcome and the in-flight level it saw."""
        if outcome in OVERLOAD:
            self.slow_start = False
            self._set(max(FLOOR, self.limit // 2), latency)
            return
        if outcome != "ok":
            return
        if self._draining:
            self._draining -= 1
            return
        self._samples.append(latency)
        self._peak = max(self._peak, in_flight)
        if len(self._samples) < max(self.limit, START):
            return
        median = statistics.median(self._samples)
        binding = self._peak >= 0.8 * self.limit
        self._samples.clear()
        self._peak = 0
        self.baseline = median if self.baseline is None else min(self.baseline, median)
        if median > self.baseline * TOLERANCE:
            self._slow += 1
            if self._slow >= SLOW_WINDOWS:
                self._slow = 0
                self.slow_start = False
                self._draining = self.limit
                self._set(max(FLOOR, int(self.limit * self.baseline / median * 1.1)), median)
            return
        self._slow = 0
        if median > self.baseline * SLOW_START_EXIT:
            self.slow_start = False  # latency has begun to rise: near the knee, step
        if binding:
            grown = self.limit * 2 if self.slow_start else self.limit + max(1, self.limit // 4)
            self._set(min(CEILING, grown), median)

    def _set(self, limit: int, latency: float) -> None:
        if limit != self.limit:
            self.changes.append(
                {
                    "from": self.limit,
                    "to": limit,
                    "latency_ms": round(latency * 1000, 1),
                    "baseline_ms": round((self.baseline or latency) * 1000, 1),
                }
            )
            self.limit = limit
