"""What a person watching the run sees: a progress bar, or plain periodic lines.

On a terminal one status line redraws in place on stderr (report lines are
printed above it); anywhere else — a CI log, `ray job logs` — the same status
is a plain line every so often. Either way: segments done / failed / skipped of
the total, completions in flight lately (mean and peak), the in-flight limit and
what held the run there (ADR 0048), tokens so far and
per second, the cost so far when the run has a price, and an ETA from the
rate segments have been finishing at. While a 429's Retry-After, a provider's
rate-limit window, a rested endpoint or --rpm/--tpm holds requests back, the
line says which and when it resumes (`gateway/paused.py`): a run at zero
tokens per second is then waiting, not stuck.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from taguru_ray.errors import MESSAGE_PREFIX
from taguru_ray.gateway.paused import words
from taguru_ray.text.terminal import printable, raw

# Under the prefix every stderr line of extract carries: a script that reads
# "extract: …" lines off stdout never mistakes progress for the summary.
PREFIX = f"{MESSAGE_PREFIX}progress: "
LINES_EVERY_SECONDS = 15.0
BAR_EVERY_SECONDS = 1.0
CLEAR = "\r\x1b[K"


def mode_for(setting: str, stream: TextIO) -> str:
    """`auto` is a bar on a terminal and plain lines elsewhere."""
    if setting != "auto":
        return setting
    return "bar" if stream.isatty() else "lines"


def _human(count: float) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.1f}k"
    return f"{count:.0f}"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


@dataclass
class Progress:
    mode: str  # bar | lines | off
    total: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.monotonic
    every: float | None = None  # seconds between updates; None: the mode's own
    started: float = field(init=False)
    _last_tokens: int = 0
    _last_time: float = field(init=False)
    _last_line: float = field(init=False)
    _drawn: bool = False
    interval: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self._last_time = self._last_line = self.clock()
        default = BAR_EVERY_SECONDS if self.mode == "bar" else LINES_EVERY_SECONDS
        self.interval = default if self.every is None else self.every

    def status(
        self,
        done: int,
        written: int,
        failed: int,
        skipped: int,
        stats: dict[str, Any],
        paced: str | None = None,
        engine: str | None = None,
    ) -> str:
        """The status line; `paced` (the pacing part's words: what the run kept in flight
        lately and what held it) stands in for the gateway's instant count when given;
        `engine` says which of the run's own replicas is not up (`--engine`)."""
        now = self.clock()
        tokens = int(stats.get("input_tokens", 0)) + int(stats.get("output_tokens", 0))
        span = max(now - self._last_time, 1e-6)
        rate = (tokens - self._last_tokens) / span
        self._last_tokens, self._last_time = tokens, now
        extracted = written + failed
        elapsed = now - self.started
        remaining = self.total - done
        eta = (
            f"ETA {_duration(elapsed / extracted * remaining)}"
            if extracted and remaining
            else "ETA —"
        )
        cost = stats.get("cost_usd")
        spent = f" · ${cost:.4f}" if isinstance(cost, (int, float)) else ""
        flight = paced or f"{stats.get('in_flight', 0)} in flight (limit {stats.get('limit', '?')})"
        held = words(stats.get("paused"))
        pause = f" · {held}" if held else ""
        pause += f" · {engine}" if engine else ""
        return (
            f"{PREFIX}{done}/{self.total} segment(s) ({written} written, {failed} failed, "
            f"{skipped} skipped) · {flight}{pause} · {_human(tokens)} tok, {_human(rate)} tok/s"
            f"{spent} · {eta}"
        )

    def due(self) -> bool:
        return self.mode != "off" and self.clock() - self._last_line >= self.interval

    def show(self, line: str) -> None:
        self._last_line = self.clock()
        if self.mode == "bar":
            raw(self.stream).write(CLEAR + printable(line))  # its own sequence, unguarded
            self._drawn = True
        elif self.mode == "lines":
            self.stream.write(line + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Lift the bar before another line prints, so lines never mix with it."""
        if self._drawn:
            raw(self.stream).write(CLEAR)
            self.stream.flush()
            self._drawn = False
