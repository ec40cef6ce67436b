"""What the batch tests share: the transport policy with waits a test can afford."""

from __future__ import annotations

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_fixed

from taguru_ray.llm.batch_wire import TRANSIENT
from taguru_ray.llm.retry import TRANSPORT_TRIES


def fast_retrying() -> AsyncRetrying:
    """The live client's 4 tries on a 429, a 5xx or a broken connection, 10 ms apart."""
    return AsyncRetrying(
        stop=stop_after_attempt(TRANSPORT_TRIES),
        wait=wait_fixed(0.01),
        retry=retry_if_exception(lambda error: isinstance(error, TRANSIENT)),
        reraise=True,
    )
