"""A provider's rate limit, as OpenAI states it: fixed windows and x-ratelimit-* headers.

`--rate-limit-requests N` and `--rate-limit-tokens K` give the simulator a
window of `--rate-limit-window S` seconds (60 by default) that opens at the
first request: within it, N requests and K tokens (prompt plus the request's
`max_tokens`, or its prompt again without one, as providers reserve them).
Every completion answer carries what is left and when the window resets; a
request past either limit is a 429 with the same headers, `Retry-After` and
`retry-after-ms`, and never takes a slot. Pure given the caller's clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class QuotaWindow:
    """One endpoint's requests and tokens per fixed window (0 = that one unlimited)."""

    requests: int = 0
    tokens: int = 0
    window_seconds: float = 60.0
    _opened: float | None = None
    _requests_used: int = 0
    _tokens_used: int = 0

    @property
    def active(self) -> bool:
        return bool(self.requests or self.tokens)

    def admit(self, cost: int, now: float) -> bool:
        """Count a request of `cost` tokens if the window takes it; False: a 429."""
        if self._opened is None or now >= self._opened + self.window_seconds:
            self._opened, self._requests_used, self._tokens_used = now, 0, 0
        if self.requests and self._requests_used + 1 > self.requests:
            return False
        if self.tokens and self._tokens_used + cost > self.tokens:
            return False
        self._requests_used += 1
        self._tokens_used += cost
        return True

    def headers(self, now: float) -> dict[str, str]:
        """What is left of the window and when it resets, in OpenAI's header forms."""
        opened = now if self._opened is None else self._opened
        reset = _go_duration(max(opened + self.window_seconds - now, 0.0))
        headers: dict[str, str] = {}
        if self.requests:
            headers["x-ratelimit-limit-requests"] = str(self.requests)
            headers["x-ratelimit-remaining-requests"] = str(
                max(self.requests - self._requests_used, 0)
            )
            headers["x-ratelimit-reset-requests"] = reset
        if self.tokens:
            headers["x-ratelimit-limit-tokens"] = str(self.tokens)
            headers["x-ratelimit-remaining-tokens"] = str(max(self.tokens - self._tokens_used, 0))
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def retry_after(self, now: float) -> float:
        opened = now if self._opened is None else self._opened
        return max(opened + self.window_seconds - now, 0.0)

    def reset(self) -> None:
        self._opened, self._requests_used, self._tokens_used = None, 0, 0


def _go_duration(seconds: float) -> str:
    """OpenAI's reset form: ``20ms`` under a second, else ``6m0s`` / ``1.5s``."""
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{text}" if minutes else text
