import asyncio
from types import SimpleNamespace

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.llm.client import ChatClient, Route, endpoint_url, open_session
from taguru_ray.llm.retry import RetryableStatus, _retryable, _wait, parse_retry_after


class _Outcome:
    def __init__(self, error: BaseException) -> None:
        self._error = error

    def exception(self) -> BaseException:
        return self._error


def state(error: BaseException, attempt: int) -> SimpleNamespace:
    return SimpleNamespace(outcome=_Outcome(error), attempt_number=attempt)


def test_retry_after_delta_seconds_is_used_verbatim_and_clamped_to_30() -> None:
    assert _wait(state(RetryableStatus(429, "", 7.0), 1)) == 7.0
    assert _wait(state(RetryableStatus(429, "", 120.0), 1)) == 30.0


def test_http_date_retry_after_falls_back_to_the_backoff() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert parse_retry_after("3") == 3.0


def test_backoff_is_full_jitter_doubling_from_one_second() -> None:
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (7, 30.0)):
        waits = [_wait(state(RetryableStatus(500, "", None), attempt)) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling / 2  # randomised across the whole range


def test_429_5xx_and_transport_errors_retry_other_errors_do_not() -> None:
    assert _retryable(RetryableStatus(503, "", None))
    assert _retryable(aiohttp.ServerDisconnectedError())
    assert _retryable(aiohttp.ClientPayloadError("cut off"))
    assert not _retryable(ValueError("400"))


def test_endpoint_url_accepts_a_base_url() -> None:
    assert endpoint_url("http://h/v1") == "http://h/v1/chat/completions"
    assert endpoint_url("http://h/v1/chat/completions/") == "http://h/v1/chat/completions"


def test_a_huge_or_non_finite_retry_after_is_capped_or_malformed() -> None:
    assert parse_retry_after("100000") == 30.0  # the README's promise: 30 s at most
    for malformed in ("inf", "Infinity", "nan", "-1", "1e400"):
        assert parse_retry_after(malformed) is None, malformed


def test_an_endpoint_url_keeps_its_query_when_completed() -> None:
    azure = (
        "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01"
    )
    assert endpoint_url(azure) == azure
    assert (
        endpoint_url("https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01")
        == azure
    )
    assert endpoint_url("http://h/v1/?a=1") == "http://h/v1/chat/completions?a=1"


def test_azure_openai_hosts_get_the_key_as_an_api_key_header() -> None:
    azure = "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=1"
    assert Route(azure).key_header == "api-key"
    assert Route("http://127.0.0.1:8000/v1/chat/completions").key_header == "Authorization"


@pytest.mark.parametrize(
    ("style", "host", "sent"),
    [
        ("auto", "127.0.0.1", ("Authorization", "Bearer k-1")),
        ("api-key", "127.0.0.1", ("api-key", "k-1")),  # an Azure deployment behind a gateway
        ("bearer", "127.0.0.1", ("Authorization", "Bearer k-1")),
    ],
)
def test_the_key_header_style_is_chosen_by_setting(
    style: str, host: str, sent: tuple[str, str]
) -> None:
    """What a real server receives under --api-key-header."""
    seen: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.json_response(
            {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
        )

    async def scenario() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", handler)
        async with TestServer(app, host=host) as server, open_session() as http:
            client = ChatClient(
                http,
                str(server.make_url("/v1")),
                "m",
                api_key="k-1",
                timeout_secs=5,
                key_header=style,
            )
            await client.complete(CompletionRequest([{"role": "user", "content": "x"}]))

    asyncio.run(scenario())
    header, value = sent
    assert seen[0][header] == value
    other = "api-key" if header == "Authorization" else "Authorization"
    assert other not in seen[0]
