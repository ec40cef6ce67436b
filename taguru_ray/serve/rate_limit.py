"""`TAGURU_RATE_LIMIT_PER_MIN`: one token bucket per key, as the reference meters.

Each key (its configured name; without auth, the caller's address) holds a
minute's allowance as capacity, refilled continuously, so a client may burst
its whole budget and then settle to the sustained rate. A request past it is
429 `rate_limited` with `Retry-After`: the whole seconds until a token exists
again. Probes (`/health`, `/live`, `/metrics`, `/version`) are never metered,
so an orchestrator's probe cannot be starved by the traffic it watches. The
clock is a parameter, so tests refill by arithmetic, never by sleeping.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class _Bucket:
    tokens: float
    refreshed: float


@dataclass
class RateLimiter:
    per_minute: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def disabled(self) -> bool:
        return self.per_minute <= 0

    def admit(self, key: str) -> int | None:
        """None when `key` may go on; else the seconds to wait (≥ 1)."""
        if self.disabled:
            return None
        now = self.clock()
        capacity = float(self.per_minute)
        per_second = capacity / 60.0
        with self._lock:
            bucket = self._buckets.setdefault(key, _Bucket(capacity, now))
            elapsed = max(0.0, now - bucket.refreshed)
            bucket.tokens = min(capacity, bucket.tokens + elapsed * per_second)
            bucket.refreshed = max(bucket.refreshed, now)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return max(1, math.ceil((1.0 - bucket.tokens) / per_second))
