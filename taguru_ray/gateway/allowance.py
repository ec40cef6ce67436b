"""What an endpoint's quota headers leave the run to send before its windows reset."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Allowance:
    """What an endpoint's quota headers leave this run to send before its windows reset:
    their last word, less what was granted since (None: that window was not stated)."""

    requests: int | None
    requests_until: float
    tokens: int | None
    tokens_until: float

    def spend(self, tokens: int) -> None:
        if self.requests is not None:
            self.requests -= 1
        if self.tokens is not None:
            self.tokens -= tokens

    def exhausted(self, tokens: int) -> float | None:
        """When the window that cannot take one more request of `tokens` resets, or None
        when both can."""
        ends = []
        if self.requests is not None and self.requests <= 0:
            ends.append(self.requests_until)
        if self.tokens is not None and self.tokens < tokens:
            ends.append(self.tokens_until)
        return max(ends) if ends else None

    def low(self, requests: int, tokens: int) -> bool:
        """Whether fewer than `requests` requests (or `tokens` tokens) are left: every
        request then goes through the pool, which counts them."""
        return (self.requests is not None and self.requests < requests) or (
            self.tokens is not None and self.tokens < tokens
        )

    def lapsed(self, now: float) -> bool:
        return now >= max(self.requests_until, self.tokens_until)
