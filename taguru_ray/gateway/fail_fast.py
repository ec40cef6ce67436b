"""Fail-fast: when an endpoint keeps refusing the run's requests the same way, stop.

A 401, 403 or 404 is no passing trouble: the key, the model or the URL is
wrong, and every request after it will be refused alike — each segment would
fail on its own, one line each, for as long as the corpus lasts. The gateway
sees every request's outcome (`actor.Gateway`), feeds it here, and stops the
run once an endpoint has answered STREAK identical refusals in a row with no
success since (ADR 0037).

Why three: one refusal may be a key rotated a moment ago or a proxy's hiccup,
and two can still be a coincidence of a busy second; three identical ones with
nothing succeeding between is a pattern, and it costs three requests. It is
also how many failures in a row rest an endpoint (`pool.FAILURES_BEFORE_REST`).
Counted per endpoint: with several, one whose key is wrong stops the run too —
its share of the segments would fail — and its line names it; a success
elsewhere says nothing about it. Anything else (a 429, a 5xx, a timeout, a
400 about one request's body) neither counts nor breaks a streak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STREAK = 3
REFUSALS = {"http_401": 401, "http_403": 403, "http_404": 404}


@dataclass
class FatalStreak:
    """Identical refusals in a row per endpoint; trips once, on the STREAK-th."""

    endpoints: int
    streak: int = STREAK
    tripped: bool = False
    _runs: list[tuple[int, int]] = field(init=False)  # per endpoint: (status, count)

    def __post_init__(self) -> None:
        self._runs = [(0, 0)] * self.endpoints

    def grow(self, endpoints: int) -> None:
        """Endpoints were added (a replica of the engine started): they are counted too."""
        self._runs += [(0, 0)] * max(endpoints - self.endpoints, 0)
        self.endpoints = max(self.endpoints, endpoints)

    def observe(self, endpoint: int, outcome: str) -> int | None:
        """Take one request's outcome at `endpoint`; the status that trips the run, the
        first time a streak reaches STREAK, else None."""
        if not 0 <= endpoint < self.endpoints:
            return None
        if outcome == "ok":
            self._runs[endpoint] = (0, 0)
            return None
        status = REFUSALS.get(outcome)
        if status is None:
            return None
        last, count = self._runs[endpoint]
        count = count + 1 if last == status else 1
        self._runs[endpoint] = (status, count)
        if count < self.streak or self.tripped:
            return None
        self.tripped = True
        return status
