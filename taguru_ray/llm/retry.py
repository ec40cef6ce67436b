"""The transport retry policy of seed 000, said once as tenacity values.

4 tries in all on 429, 5xx and transport errors (timeouts included on the
legacy path); between them a full-jitter exponential backoff, 1 s doubling to
a 30 s ceiling, so concurrent callers do not wake in lockstep. A 429 that
carries ``Retry-After`` in delta-seconds waits exactly that (clamped to 30 s):
the server's own instruction beats a guess. Any other 4xx fails at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import aiohttp
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

TRANSPORT_TRIES = 4
BACKOFF_CEILING_SECONDS = 30.0

_full_jitter = wait_random_exponential(multiplier=1, max=BACKOFF_CEILING_SECONDS)


class RetryableStatus(Exception):
    """A 429 or 5xx answer: worth another try."""

    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


class CompletionTimeout(Exception):
    """The completion ran past TAGURU_EXTRACT_TIMEOUT_SECS."""


def parse_retry_after(value: str | None, *, millis: bool = False) -> float | None:
    """Delta-seconds (``Retry-After``), or milliseconds with `millis` (``retry-after-ms``,
    which OpenAI and Azure send beside it, and which wins), in seconds capped at the 30 s
    ceiling: the pause it sets for every caller of the endpoint is capped with it. An
    HTTP-date, a negative or non-finite number (``inf``, ``nan``) or anything else is
    malformed and falls back to the backoff."""
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    if not math.isfinite(number) or number < 0:
        return None
    return min(number / 1000 if millis else number, BACKOFF_CEILING_SECONDS)


def _wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, RetryableStatus) and error.status == 429 and error.retry_after is not None:
        return min(error.retry_after, BACKOFF_CEILING_SECONDS)
    return _full_jitter(state)


def _retryable(error: BaseException) -> bool:
    return isinstance(error, (RetryableStatus, aiohttp.ClientError, CompletionTimeout))


def _retryable_but_timeouts(error: BaseException) -> bool:
    return _retryable(error) and not isinstance(error, CompletionTimeout)


def retry_cause(error: BaseException | None) -> str:
    """Why a try is tried again, as the metrics name it: ``http_<status>`` for a 429 or
    5xx, ``timeout``, or ``transport`` (the connection failed)."""
    if isinstance(error, RetryableStatus):
        return f"http_{error.status}"
    if isinstance(error, CompletionTimeout):
        return "timeout"
    return "transport"


def transport_retrying(
    *, retry_timeouts: bool = True, on_retry: Callable[[str], None] | None = None
) -> AsyncRetrying:
    """A fresh retrying controller for one completion attempt.

    Under the escalation ladder a timeout is not retried at the same size
    (taguru ADR 0020): the split is the retry, so the caller turns `retry_timeouts` off.
    `on_retry` hears the cause (`retry_cause`) of each try that is tried again.
    """

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None:
            on_retry(retry_cause(state.outcome.exception() if state.outcome else None))

    return AsyncRetrying(
        stop=stop_after_attempt(TRANSPORT_TRIES),
        wait=_wait,
        retry=retry_if_exception(_retryable if retry_timeouts else _retryable_but_timeouts),
        before_sleep=before_sleep,
        reraise=True,
    )
