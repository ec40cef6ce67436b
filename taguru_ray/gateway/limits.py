"""Adaptive concurrency (`--max-inflight auto`): find where throughput stops rising.

Self-hosted servers never say "slow down": vLLM queues without bound and
Ollama answers 503 only when its queue is full. An extract run is a batch job:
what counts is completions per second, not how long one request waits. So the
controller climbs the in-flight level while that buys throughput and holds
where it stops doing so (ADR 0016):

- **Slow start.** From 32 (where a run without `--max-inflight` sits), double
  per window of as many completions as the limit while the window's median
  latency stays within 10 % of the best seen: the server is not queueing yet.
  A rise past that ends it, near the knee. One window past 30 % on its own is
  forgiven (a busy client measures its own CPU queueing too, and that comes
  and goes); two in a row end slow start.
- **Probing.** Then a level is judged by the completions per second it
  yields, measured at the admission point over a window of twice the limit,
  once the requests the previous level admitted have finished. A probe up asks
  half again as many and is kept if throughput rose at least 5 %; a probe down
  asks a third fewer and is kept if throughput did not fall. Probes alternate,
  a few windows apart, so the level settles where the plateau starts: past it
  requests only queue at the server, short of it the server idles while a
  client turns a request round. A client that turns requests round slowly
  needs more in flight than the server has slots, and gets them. Slow start
  ending with latency doubled means its last step overshot: the first probe
  then goes down.
- **Overload.** A 429, 503 or timeout halves the limit at once.

The limit only grows while the run keeps it full, and the clock is the
caller's: this module does no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

START = 32  # where `auto` (the default) starts: every server takes that many
FLOOR = 1
CEILING = 4096  # the most a caller may allow (`ceiling`): a run's is its settings' (ADR 0047)
SLOW_START_EXIT = 1.1  # doubling stops once a window's median rises this far
HICCUP = 1.3  # a lone window this far above the best is client-side noise, once
STEP = 0.5  # a probe up asks this much more; a probe down, 1 / (1 + STEP) of the level
GAIN = 0.05  # a probe up is kept when completions/s rose at least this much
QUEUED = 2.0  # slow start ending with latency this far above the best probes down first
HOLD_WINDOWS = 3  # windows measured at a level after a probe failed, before the next
FULL = 0.9  # a probing window keeps at least this share of the limit in flight on average
MIN_WINDOW = 32  # completions a probing window measures at the least
OVERLOAD = {"http_429", "http_503", "timeout"}

UP, DOWN = 1, -1


@dataclass
class AdaptiveLimit:
    limit: int = START
    ceiling: int = CEILING  # the run's in-flight ceiling: --max-inflight auto's, per endpoint
    baseline: float | None = None  # the best window median seen: the unloaded latency
    slow_start: bool = True
    held: int | None = None  # the level probes are judged against, once probing
    held_rate: float | None = None  # its completions per second, last measured
    next_probe: int = UP  # the direction of the next probe (UP or DOWN)
    changes: deque[dict[str, float]] = field(default_factory=lambda: deque(maxlen=64))
    _trial: int = 0  # UP or DOWN while a probe's level is measured, else 0
    _holds: int = 0  # windows still to measure at the held level before probing
    _settling: int = 0  # completions of the previous level still to pass unjudged
    _hiccup: bool = False  # slow start forgave one slow window
    _samples: list[float] = field(default_factory=list)
    _first: float | None = None  # when the window's first completion came
    _last: float = 0.0
    _peak: int = 0  # the most in flight during the window
    _held_sum: int = 0  # in flight, summed over the window's completions

    def __post_init__(self) -> None:
        self.ceiling = min(max(self.ceiling, FLOOR), CEILING)
        self.limit = min(self.limit, self.ceiling)  # a ceiling under START starts there

    def observe(self, latency: float, outcome: str, in_flight: int, now: float) -> None:
        """One finished request: its latency, outcome, the in-flight level it saw, and
        the caller's clock when it finished."""
        if outcome in OVERLOAD:
            self.slow_start = False
            self._commit(max(FLOOR, self.limit // 2), latency, then=UP, holds=HOLD_WINDOWS)
            return
        if outcome != "ok":
            return
        if self._settling:
            self._settling -= 1
            self._peak = max(self._peak, in_flight)
            if not self._settling and self._trial == UP and self._peak < FULL * self.limit:
                # The old level's requests are done and the run never filled the new
                # one: more permits would sit unused, so the probe ends here.
                self._commit(self.held or self.limit, latency, then=DOWN, holds=HOLD_WINDOWS)
            elif not self._settling:
                self._peak = 0
            return
        self._samples.append(latency)
        self._first = now if self._first is None else self._first
        self._last = now
        self._peak = max(self._peak, in_flight)
        self._held_sum += in_flight
        if len(self._samples) < self._window():
            return
        median = statistics.median(self._samples)
        span = self._last - (self._first or self._last)
        rate = (len(self._samples) - 1) / span if span > 0 else None
        # Slow start's windows straddle a doubling: reaching the limit once is filling
        # it. A probing window is at one level: the run must keep it full throughout
        # (a narrow --segment-window cannot, and more permits would sit unused).
        mean = self._held_sum / len(self._samples)
        binding = self._peak >= 0.8 * self.limit if self.slow_start else mean >= FULL * self.limit
        self._samples.clear()
        self._first, self._peak, self._held_sum = None, 0, 0
        self.baseline = median if self.baseline is None else min(self.baseline, median)
        if self.slow_start:
            self._slow_start_window(median, binding, mean)
        else:
            self._probing_window(median, rate, binding)

    def _window(self) -> int:
        if self.slow_start:
            return max(self.limit, START)
        return max(2 * self.limit, MIN_WINDOW)

    def _slow_start_window(self, median: float, binding: bool, mean: float) -> None:
        rise = median / (self.baseline or median)
        if rise > HICCUP and not self._hiccup:
            self._hiccup = True
            return
        self._hiccup = False
        if rise > SLOW_START_EXIT:
            # Near or past the knee. A leap means the last doubling overshot it.
            self.slow_start = False
            self._commit(self.limit, median, then=DOWN if rise > QUEUED else UP, holds=0)
            return
        if binding:
            self._set(min(self.ceiling, self.limit * 2), median, None, settle=False)
            return
        if self.changes:
            # The run no longer fills what slow start offers (a CPU-bound client, a
            # narrow --segment-window): hold the level it did keep full, not a ceiling
            # its bursts would overrun, and let the probes judge it by throughput.
            self.slow_start = False
            level = max(FLOOR, min(self.limit, math.ceil(mean / FULL)))
            self._commit(level, median, then=DOWN, holds=HOLD_WINDOWS)

    def _probing_window(self, median: float, rate: float | None, binding: bool) -> None:
        if rate is None:
            return
        if self._trial:
            base = self.held_rate or rate
            if not binding:
                kept = False  # the run stopped filling the limit: the window says nothing
            elif self._trial == UP:
                kept = rate >= base * (1 + GAIN)
            else:  # fewer in flight for no less throughput: a shorter queue at the server
                kept = rate >= base
            if kept:  # measured here already: go on the same way at once
                self.held, self.held_rate, self._trial = self.limit, rate, 0
                self._probe(median, rate)
            else:
                back = self.held or self.limit
                self._commit(back, median, then=-self._trial, holds=HOLD_WINDOWS)
            return
        if not binding:
            return  # the run does not fill this level: nothing to learn, nothing to gain
        self.held_rate = rate
        if self._holds > 0:
            self._holds -= 1
            return
        self._probe(median, rate)

    def _probe(self, median: float, rate: float) -> None:
        """Try the next level the way `next_probe` points, from the held one."""
        step = max(1, round(self.limit * STEP))
        trial = self.limit + step if self.next_probe == UP else round(self.limit / (1 + STEP))
        trial = min(self.ceiling, max(FLOOR, trial))
        if trial == self.limit:  # at the floor or the ceiling: the other way next time
            self.next_probe, self._holds = -self.next_probe, HOLD_WINDOWS
            return
        self._trial = self.next_probe
        self._set(trial, median, rate)

    def _commit(self, level: int, latency: float, *, then: int, holds: int) -> None:
        """Hold `level` (its throughput measured anew before it is judged against); the
        next probe goes `then`, after `holds` windows."""
        self.held, self.held_rate = level, None
        self._trial, self.next_probe, self._holds = 0, then, holds
        self._set(level, latency, None)

    def _set(self, limit: int, latency: float, rate: float | None, settle: bool = True) -> None:
        # The requests the old level admitted finish first: they do not measure the new
        # one. Slow start does not wait for them: it doubles from an unloaded level.
        self._settling = self.limit if settle else 0
        self._samples.clear()
        self._first, self._peak, self._held_sum = None, 0, 0
        if limit != self.limit:
            change = {
                "from": self.limit,
                "to": limit,
                "latency_ms": round(latency * 1000, 1),
                "baseline_ms": round((self.baseline or latency) * 1000, 1),
            }
            if rate is not None:
                change["completions_per_s"] = round(rate, 1)
            self.changes.append(change)
            self.limit = limit
