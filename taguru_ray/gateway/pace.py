"""The pool's pace: requests on the wire and requests waiting, integrated over time.

Pure, with the caller's clock. The pool marks every change of the number on the
wire, and why requests wait for a permit when they do (the limit, an endpoint's
pause, a rate ceiling, no replica of the engine up) and how many of the engine's
replicas are missing; the driver takes the cumulative figures every tick and
reads the run's steady state out of them (`engine/bound.py`, ADR 0048). A
level holds from one mark to the next, so the integrals are exact, however
seldom the driver asks.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

WAITS = ("limit", "pause", "rate", "engine")  # why a request queued for a permit
THROTTLING = frozenset({"http_429", "http_503", "timeout"})


@dataclass
class Pace:
    at: float  # when the current level began
    wire: int = 0  # requests on the wire since `at`
    waiting: str | None = None  # why requests queue since `at` (one of WAITS), or None
    wire_s: float = 0.0  # requests on the wire, integrated (request-seconds)
    waited: dict[str, float] = field(default_factory=lambda: dict.fromkeys(WAITS, 0.0))
    peak: int = 0  # the most on the wire since the last `take`
    missing: int = 0  # replicas of the run's engine asked for and not up, since `at`
    short_s: float = 0.0  # those, integrated (replica-seconds)
    requests: int = 0
    throttled: int = 0
    _latencies: list[float] = field(default_factory=list)  # since the last `take`

    def mark(self, now: float, wire: int, waiting: str | None) -> None:
        """The level changed (or may have) at `now`: close the span that held since."""
        span = max(now - self.at, 0.0)
        self.wire_s += self.wire * span
        self.short_s += self.missing * span
        if self.waiting is not None:
            self.waited[self.waiting] += span
        self.at, self.wire, self.waiting = max(now, self.at), wire, waiting
        self.peak = max(self.peak, wire)

    def short(self, now: float, missing: int) -> None:
        """From `now`, `missing` replicas of the engine are not up (ADR 0080)."""
        self.mark(now, self.wire, self.waiting)
        self.missing = missing

    def finished(self, latency: float, outcome: str) -> None:
        self.requests += 1
        if outcome in THROTTLING:
            self.throttled += 1
        if outcome == "ok":
            self._latencies.append(latency)

    def take(self, now: float) -> dict[str, float | int | None]:
        """The cumulative figures up to `now`; the peak and latencies start over."""
        self.mark(now, self.wire, self.waiting)
        figures: dict[str, float | int | None] = {
            "requests": self.requests,
            "throttled": self.throttled,
            "wire_s": self.wire_s,
            "peak": self.peak,
            "short_s": self.short_s,
            **{f"waited_{why}_s": seconds for why, seconds in self.waited.items()},
            "latency": statistics.median(self._latencies) if self._latencies else None,
        }
        self.peak = self.wire
        self._latencies.clear()
        return figures
