"""What a provider says about its rate limits, read off a response's headers.

OpenAI sends, on every completion, how many requests and tokens are left in
its windows and when each window resets (``x-ratelimit-remaining-requests``,
``x-ratelimit-reset-requests``, and the ``-tokens`` pair); Azure OpenAI,
Groq, Together, Fireworks, OpenRouter and vLLM-fronting gateways copy the
names. With them admission control need not guess `--rpm`/`--tpm`: it stops
sending to an endpoint before the window runs out, instead of learning it
from a 429 (ADR 0039). Pure: the caller passes the headers and the wall clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import NamedTuple

REMAINING_REQUESTS = "x-ratelimit-remaining-requests"
REMAINING_TOKENS = "x-ratelimit-remaining-tokens"
RESET_REQUESTS = "x-ratelimit-reset-requests"
RESET_TOKENS = "x-ratelimit-reset-tokens"
RETRY_AFTER_MS = "retry-after-ms"

# Resets past this are a day's quota, not a minute's: an endpoint is paused at most
# this long on one answer's word, then asked again (the next answer says more).
LONGEST_PAUSE_SECONDS = 300.0
# A bare number this large is a Unix time, not a count of seconds (some gateways send
# the moment the window resets rather than the time until it does).
EPOCH_FLOOR = 1_000_000_000.0

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")


class Quota(NamedTuple):
    """What is left of an endpoint's windows after this request, and when each resets
    (seconds from now); None where the provider did not say."""

    requests: int | None
    requests_reset: float | None
    tokens: int | None
    tokens_reset: float | None


def read_quota(headers: Mapping[str, str], now_epoch: float) -> Quota | None:
    """The quota a response's headers state, or None when they state none (the common
    case for self-hosted servers, decided by one lookup)."""
    requests = _count(headers.get(REMAINING_REQUESTS))
    tokens = _count(headers.get(REMAINING_TOKENS))
    if requests is None and tokens is None:
        return None
    return Quota(
        requests,
        reset_seconds(headers.get(RESET_REQUESTS), now_epoch) if requests is not None else None,
        tokens,
        reset_seconds(headers.get(RESET_TOKENS), now_epoch) if tokens is not None else None,
    )


def reset_seconds(value: str | None, now_epoch: float) -> float | None:
    """Seconds until a window resets: OpenAI's Go-style durations (``1s``, ``6m0s``,
    ``20ms``, ``1h2m3.5s``), a bare number of seconds, or a Unix time; capped at
    LONGEST_PAUSE_SECONDS. Anything else is None: the window is then not waited on."""
    if value is None:
        return None
    text = value.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        seconds = _duration(text)
        if seconds is None:
            return None
    else:
        if seconds >= EPOCH_FLOOR:
            seconds -= now_epoch
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), LONGEST_PAUSE_SECONDS)


def _duration(text: str) -> float | None:
    total, at = 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        at = match.end()
    return total if at == len(text) and at > 0 else None


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        count = int(float(value.strip()))
    except (ValueError, OverflowError):
        return None
    return max(count, 0)
