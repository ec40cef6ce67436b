"""An async OpenAI-compatible chat-completions client on aiohttp.

One `complete` call is one extraction attempt: it may make up to four HTTP
tries under the transport policy (`retry.py`), each holding an in-flight
permit from the run's admission control while it is on the wire — a try
waiting out its backoff holds none. What comes back is a `Completion`, never
an exception: the caller classifies it into an attempt state.

Its length (over 400 lines) is one client's: the wire shapes, the statuses and
their retries, and the routes of endpoints that come and go with the run's own
replicas all meet in `_post`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import aiohttp

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.quota import RETRY_AFTER_MS, Quota, read_quota
from taguru_ray.llm.retry import (
    TRANSPORT_TRIES,
    CompletionTimeout,
    RetryableStatus,
    parse_retry_after,
    transport_retrying,
)
from taguru_ray.llm.route import Route, endpoint_url
from taguru_ray.llm.scrub import Scrubber

Seq = int | Awaitable[int]  # an attempt_seq, or one on its way
ABANDONED = "taguru-ray: the endpoint's replica is lost"  # `abandon`'s cancel message
LOST = "the replica behind this endpoint was lost"


@dataclass(frozen=True)
class Usage:
    """What a finished HTTP try reports back to admission control."""

    outcome: str  # ok | http_<status> | timeout | transport
    latency_seconds: float
    input_tokens: int = 0
    output_tokens: int = 0
    retry_after: float | None = None  # a 429's Retry-After: pauses the endpoint for everyone
    quota: Quota | None = None  # what the provider's x-ratelimit-* headers said is left


class Admission(Protocol):
    """Run-wide admission control: a permit per HTTP request on the wire.

    `acquire` returns (lease id, index of the endpoint to send to, and — when
    `want_seq`, on an attempt's first try — its run-wide `attempt_seq`, or an
    awaitable of it, so the attempt is numbered in issue order without a call
    of its own); it may raise `gateway.pool.Stopped` when the run is stopping.
    `priority` orders waiting requests, lowest first.
    """

    async def acquire(
        self, tokens: int, want_seq: bool, priority: int = 0
    ) -> tuple[int, int, Seq | None]: ...

    async def release(self, lease_id: int, usage: Usage) -> None: ...


class Unlimited:
    """Admission for tests and single-process use: never waits, always the first endpoint."""

    async def acquire(
        self, tokens: int, want_seq: bool, priority: int = 0
    ) -> tuple[int, int, Seq | None]:
        return 0, 0, None

    async def release(self, lease_id: int, usage: Usage) -> None:
        return None


class FatalStatus(Exception):
    """A 4xx other than 429: the request itself is wrong; retrying cannot help."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status


def open_session() -> aiohttp.ClientSession:
    """The HTTP session completions go through; call inside the event loop that uses it.

    No total timeout (each try is bounded by TAGURU_EXTRACT_TIMEOUT_SECS here) and
    no connection cap (admission control bounds what is on the wire). Proxies and
    netrc credentials come from the environment, read once per endpoint by
    `ChatClient` (`from_environment`): aiohttp's `trust_env` reads them again on
    every request, each time on a thread of its own.
    """
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=None),
    )


def chat_body(model: str, request: CompletionRequest) -> dict[str, Any]:
    """The chat-completions body of one request; a batch line carries the same bytes."""
    body: dict[str, Any] = {"model": model, "temperature": 0, "messages": request.messages}
    if request.response_format is not None:
        body["response_format"] = request.response_format
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


class ChatClient:
    """Completions with one model against one or several endpoints (admission picks).

    On aiohttp rather than httpx (ADR 0015): the client's own CPU per request is
    what bounds a worker on a small machine, and aiohttp spends about a third of
    httpx's (0.17 vs 0.58 ms per request at 32 in flight, measured here).

    Endpoints may be added while it runs — the run's own replicas, `--engine` —
    each under a new index for good: a grant naming an index it has no route for
    has it `learn` the URLs of all of them. `abandon` ends the requests on the
    wire to an endpoint whose replica is lost, as a broken connection would, so
    the transport policy asks them again elsewhere at once (a lost node's socket
    would otherwise hang until the timeout, which the ladder answers with a split).
    """

    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str | list[str],
        model: str,
        *,
        api_key: str | None,
        timeout_secs: float,
        admission: Admission | None = None,
        clock: Callable[[], float] = time.monotonic,
        key_header: str = "auto",
        learn: Callable[[], Awaitable[list[str]]] | None = None,
    ) -> None:
        self._http = http
        self._api_key = api_key
        self._key_header = key_header
        self._routes: list[Route] = []
        self._headers: list[dict[str, str]] = []
        self._extend([url] if isinstance(url, str) else list(url))
        self._model = model
        self._learn = learn
        self._wire: dict[int, set[asyncio.Task[Any]]] = {}  # requests on the wire, by endpoint
        self._abandoned: set[int] = set()
        self._scrub = Scrubber.of(api_key)  # what an endpoint echoes never carries it on
        self._timeout = timeout_secs or None
        self._admission = admission or Unlimited()
        self._clock = clock
        # Hears the cause of each HTTP try that is tried again (`retry.retry_cause`):
        # a worker counts them for Prometheus.
        self.on_retry: Callable[[str], None] | None = None

    def _extend(self, urls: list[str]) -> None:
        """Routes and headers for `urls`, the next endpoint indices."""
        api_key = self._api_key
        for url in urls:
            route = Route.from_environment(endpoint_url(url), api_key=bool(api_key))
            headers = {"Content-Type": "application/json"}
            style = route.key_header if self._key_header == "auto" else self._key_header
            if api_key and style == "api-key":
                headers["api-key"] = api_key
            elif api_key:
                headers["Authorization"] = f"Bearer {api_key}"
            self._routes.append(route)
            self._headers.append(headers)

    @classmethod
    def of(
        cls,
        http: aiohttp.ClientSession,
        transport: Transport,
        admission: Admission | None = None,
        learn: Callable[[], Awaitable[list[str]]] | None = None,
    ) -> ChatClient:
        """The client a run's `Transport` settings describe; `learn` answers the URLs of
        endpoints added since (the run's own replicas)."""
        return cls(
            http,
            list(transport.endpoints),
            transport.model,
            api_key=transport.api_key,
            timeout_secs=transport.timeout_secs,
            admission=admission,
            key_header=transport.api_key_header,
            learn=learn,
        )

    async def _route(self, endpoint: int) -> tuple[Route, dict[str, str]]:
        if endpoint >= len(self._routes) and self._learn is not None:
            urls = await self._learn()
            if len(urls) > len(self._routes):
                self._extend(urls[len(self._routes) :])
        return self._routes[endpoint], self._headers[endpoint]

    def abandon(self, endpoint: int) -> int:
        """Endpoint `endpoint`'s replica is lost: its requests on the wire end now as a
        broken connection (retried elsewhere), and so does any sent to it later. How
        many were on the wire."""
        self._abandoned.add(endpoint)
        tasks = self._wire.pop(endpoint, set())
        for task in tasks:
            task.cancel(ABANDONED)
        return len(tasks)

    async def complete(self, request: CompletionRequest) -> Completion:
        body = chat_body(self._model, request)
        started = self._clock()
        tries = 0
        numbered: list[Seq] = []  # this call's attempt_seq, set by its first try
        try:
            retrying = transport_retrying(
                retry_timeouts=request.retry_timeouts, on_retry=self.on_retry
            )
            async for attempt in retrying:
                with attempt:
                    tries += 1
                    payload = await self._post(body, request, numbered)
        except FatalStatus as error:
            return self._failed("transport", str(error), tries, started, error.status, numbered)
        except CompletionTimeout:
            limit = f"{self._timeout:g} s" if self._timeout else "the time budget"
            message = f"timed out after {limit} (TAGURU_EXTRACT_TIMEOUT_SECS)"
            if tries > 1:
                message += f" on each of {tries} tries"
            return self._failed("timeout", message, tries, started, None, numbered)
        except RetryableStatus as error:
            message = f"{error} (after {tries} tries)"
            return self._failed("transport", message, tries, started, error.status, numbered)
        except aiohttp.ClientError as error:
            message = (
                f"{type(error).__name__}: {error or 'connection failed'} (after {tries} tries)"
            )
            return self._failed("transport", message, tries, started, None, numbered)
        return self._answer(payload, tries, started, numbered)

    async def _post(
        self, body: dict[str, Any], request: CompletionRequest, numbered: list[Seq]
    ) -> dict[str, Any]:
        # Compact and UTF-8 as sent by the OpenAI clients (and by httpx's json=).
        data = compact_json(body).encode("utf-8")
        tokens = _estimate_tokens(request)
        lease, endpoint, seq = await self._admission.acquire(tokens, not numbered, request.priority)
        if seq is not None:
            numbered.append(seq)
        began = self._clock()
        usage = Usage("transport", 0.0)
        task = asyncio.current_task()
        try:
            route, headers = await self._route(endpoint)
            if endpoint in self._abandoned:
                raise aiohttp.ClientConnectionError(LOST)
            if task is not None:
                self._wire.setdefault(endpoint, set()).add(task)
            async with (
                asyncio.timeout(self._timeout),
                self._http.post(
                    route.url,
                    data=data,
                    headers=headers,
                    proxy=route.proxy,
                    proxy_auth=route.proxy_auth,
                    auth=route.auth,
                ) as response,
            ):
                status = response.status
                headers = response.headers
                quota = read_quota(headers, time.time())
                raw = await _read_capped(response)
            usage = Usage(f"http_{status}", self._clock() - began, quota=quota)
            text = raw.decode("utf-8", errors="replace")
            if status == 429 or status >= 500:
                retry_after = parse_retry_after(headers.get(RETRY_AFTER_MS), millis=True)
                if retry_after is None:
                    retry_after = parse_retry_after(headers.get("retry-after"))
                if status == 429:
                    usage = Usage(
                        "http_429", usage.latency_seconds, retry_after=retry_after, quota=quota
                    )
                raise RetryableStatus(status, _excerpt(self._scrub(text)), retry_after)
            if status >= 400:
                raise FatalStatus(status, _excerpt(self._scrub(text)))
            try:
                payload = json.loads(text)
            except ValueError:
                raise FatalStatus(status, "the body is not JSON") from None
            except RecursionError:
                raise FatalStatus(status, "the body is JSON nested too deeply to read") from None
            if not isinstance(payload, dict):
                raise FatalStatus(status, "the body is not a JSON object")
            tokens = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
            usage = Usage(
                "ok",
                self._clock() - began,
                _int(tokens.get("prompt_tokens")) or 0,
                _int(tokens.get("completion_tokens")) or 0,
                quota=quota,
            )
            return payload
        except TimeoutError:
            usage = Usage("timeout", self._clock() - began)
            raise CompletionTimeout() from None
        except asyncio.CancelledError as cancel:
            if ABANDONED not in cancel.args or task is None:
                raise
            task.uncancel()  # ours, not the caller's: the try fails as a broken connection
            usage = Usage("transport", self._clock() - began)
            raise aiohttp.ClientConnectionError(LOST) from None
        finally:
            if task is not None:
                self._wire.get(endpoint, set()).discard(task)
            await self._admission.release(lease, usage)
            if numbered and not isinstance(numbered[0], int):
                numbered[0] = await numbered[0]  # numbered while the request was out

    def route(self, endpoint: int) -> tuple[Route, dict[str, str]]:
        """How requests reach endpoint `endpoint`: its route and headers, the key's among
        them — for the preflight, which must ask as the completions will."""
        return self._routes[endpoint], self._headers[endpoint]

    def _failed(
        self,
        outcome: Literal["timeout", "transport"],
        error: str,
        tries: int,
        started: float,
        status: int | None = None,
        numbered: list[Seq] | None = None,
    ) -> Completion:
        return Completion(
            outcome=outcome,
            transport_retries=max(tries - 1, 0),
            elapsed_seconds=self._clock() - started,
            error=self._scrub(error),
            status=status,
            attempt_seq=_seq(numbered),
        )

    def _answer(
        self, payload: dict[str, Any], tries: int, started: float, numbered: list[Seq]
    ) -> Completion:
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else {}
        choice = choice if isinstance(choice, dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = message.get("content")
        refusal = message.get("refusal")
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return Completion(
            outcome="answer",
            text=self._scrub.secrets_in(content) if isinstance(content, str) else None,
            finish_reason=choice.get("finish_reason")
            if isinstance(choice.get("finish_reason"), str)
            else None,
            refusal=self._scrub.secrets_in(refusal)
            if isinstance(refusal, str) and refusal
            else None,
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            total_tokens=_int(usage.get("total_tokens")),
            transport_retries=tries - 1,
            elapsed_seconds=self._clock() - started,
            attempt_seq=_seq(numbered),
        )


def _seq(numbered: list[Seq] | None) -> int | None:
    """The attempt's number: resolved by the end of its first try (`_post`)."""
    return numbered[0] if numbered and isinstance(numbered[0], int) else None


def _estimate_tokens(request: CompletionRequest) -> int:
    """Tokens a request may cost, for --tpm: its input (about 4 bytes a token) plus its
    output cap, or half the input again when it sends none."""
    sent = sum(len(m.get("content", "").encode("utf-8")) for m in request.messages)
    return sent // 4 + (request.max_tokens if request.max_tokens else sent // 8)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# The most of a response body read, well above what any answer needs (a 32 000-token
# answer is about 128 KiB): a body past it is refused as sent, never read whole and
# never replayed into a corrective turn (a 10 MB answer once cost 7.9 M input tokens).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    declared = response.content_length
    if declared is not None:
        if declared > MAX_RESPONSE_BYTES:
            raise FatalStatus(response.status, _too_big(f"declares {declared} bytes"))
        return await response.read()  # the length is known and within the cap: one read
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise FatalStatus(response.status, _too_big("ran past the cap"))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_big(how: str) -> str:
    return (
        f"the response body {how}: more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB is "
        "read from no endpoint — lower --max-output-tokens or check the server"
    )


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


__all__ = [
    "TRANSPORT_TRIES",
    "Admission",
    "ChatClient",
    "Completion",
    "CompletionRequest",
    "Route",
    "Unlimited",
    "Usage",
    "endpoint_url",
    "open_session",
]
