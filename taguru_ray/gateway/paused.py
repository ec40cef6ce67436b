"""Why the run is paused now, and until when: the progress line's words (issue 39).

The pool pauses an endpoint on a 429's Retry-After (every caller of it), on
its provider's rate-limit window once the quota headers say it is spent
(ADR 0039), and rests one that keeps failing; `--rpm`/`--tpm` hold every
request while their sliding minute is full. A person watching a run that
stopped moving needs to know which of these it is and for how long, not a
throughput that fell to zero. Pure: the pool hands in its state and clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Why an endpoint is paused, as the pool records it.
RETRY_AFTER = "429"  # a 429 said how long (Retry-After / retry-after-ms)
WINDOW = "window"  # the provider's x-ratelimit-* window is spent until its reset
REST = "rest"  # it kept failing and is left alone a while
RATE = "rate"  # --rpm/--tpm: the run's own sliding minute is full
ENGINE = "engine"  # no replica of the run's own engine is up (--engine): one is starting

_WHY = {
    RETRY_AFTER: "a 429 (Retry-After {length})",
    WINDOW: "the provider's rate-limit window",
    REST: "failures (endpoint rested {length})",
    RATE: "--rpm/--tpm's sliding minute",
}


@dataclass(frozen=True)
class Hold:
    """One endpoint's pause as the pool keeps it: until when, since when, and why."""

    until: float
    since: float
    why: str


@dataclass(frozen=True)
class Paused:
    """What holds the run back now: why, for how long in all, how long is left, and how
    many of its endpoints are paused (0 for `RATE`, which holds them all)."""

    why: str
    length: float
    left: float
    endpoints: int
    of: int

    def record(self) -> dict[str, Any]:
        return {
            "why": self.why,
            "length_s": round(self.length, 3),
            "left_s": round(self.left, 3),
            "endpoints": self.endpoints,
            "of": self.of,
        }


def paused(holds: Sequence[Hold], now: float, rate: Hold | None = None) -> Paused | None:
    """The pause that matters now, or None when nothing is paused.

    The run's own `rate` hold stops every endpoint, so it wins when it lasts longer;
    otherwise the endpoint pause that ends last is the one named, with how many
    endpoints are paused at all."""
    active = [hold for hold in holds if hold.until > now]
    last_endpoint = max((hold.until for hold in active), default=now)
    if rate is not None and rate.until > now and rate.until >= last_endpoint:
        return Paused(RATE, rate.until - rate.since, rate.until - now, 0, len(holds))
    if not active:
        return None
    last = max(active, key=lambda hold: hold.until)
    return Paused(last.why, last.until - last.since, last.until - now, len(active), len(holds))


def words(record: dict[str, Any] | None) -> str | None:
    """The progress line's part for a `Paused.record()`, or None when none is given:
    ``paused by a 429 (Retry-After 12s), resumes in 8s``; ``waiting 40s for a replica
    of the engine`` while none is up."""
    if isinstance(record, dict) and record.get("why") == ENGINE:
        waited = _seconds(float(record.get("length_s", 0.0)))
        return f"waiting {waited} for a replica of the engine (none is up)"
    if not isinstance(record, dict) or record.get("why") not in _WHY:
        return None
    why = _WHY[record["why"]].format(length=_seconds(float(record.get("length_s", 0.0))))
    left = _seconds(float(record.get("left_s", 0.0)))
    count, of = int(record.get("endpoints", 0)), int(record.get("of", 0))
    who = "paused" if count in (0, of) else f"{count} of {of} endpoints paused"
    return f"{who} by {why}, resumes in {left}"


def _seconds(value: float) -> str:
    """Whole seconds, rounded up: a pause of 0.4 s left reads 1s, never 0s."""
    whole = max(int(-(-value // 1)), 1)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"
