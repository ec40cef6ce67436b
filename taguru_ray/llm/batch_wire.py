"""A provider's batch API on the wire: OpenAI's /v1/files + /v1/batches, Anthropic's
/v1/messages/batches (`--batch-api`, ADR 0068).

Each wire turns the run's `CompletionRequest` into a line body, hands a round's
lines over (OpenAI: a JSONL file uploaded with purpose=batch, then a batch over
it; Anthropic: the requests in the create call), says whether a batch has ended,
and reads its results back as one `Completion` per custom_id — the same value
the live client returns, so the extraction program judges a batch answer as it
judges a live one — or a `LineFailure` (the line errored, or the batch expired
before answering it). Every HTTP call runs under the transport policy of the
live client (4 tries, full jitter, Retry-After); a 4xx is a `BatchApiError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.client import chat_body
from taguru_ray.llm.retry import RetryableStatus, parse_retry_after, transport_retrying
from taguru_ray.llm.route import endpoint_url
from taguru_ray.llm.scrub import Scrubber

# Anthropic requires max_tokens; a run that sends none (off the ladder) asks for this.
ANTHROPIC_MAX_TOKENS = 8192
ANTHROPIC_VERSION = "2023-06-01"
FINISH_OF_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
FINISH_OF_STOP["refusal"] = "content_filter"


class BatchApiError(Exception):
    """The provider refused a batch call (a 4xx): the fix is in the message."""


@dataclass(frozen=True)
class Line:
    custom_id: str
    body: dict[str, Any]  # what the provider is asked, for this line

    def size(self) -> int:
        return len(compact_json(self.body).encode("utf-8")) + len(self.custom_id) + 96


@dataclass(frozen=True)
class LineFailure:
    """A line with no answer: it errored alone, or its batch ended (expired, failed,
    cancelled) before answering it."""

    why: str
    expired: bool = False


LineResult = Completion | LineFailure


class BatchWire(Protocol):
    api: str
    max_requests: int
    max_bytes: int

    def body(self, request: CompletionRequest) -> dict[str, Any]: ...

    async def upload(self, lines: list[Line]) -> str | None:
        """The lines as an uploaded file's id (OpenAI), or None (Anthropic: no file)."""
        ...

    async def create(self, lines: list[Line], file_id: str | None) -> str:
        """A batch over the lines (or the file uploaded of them); its id."""
        ...

    async def adopt(self, file_id: str) -> str | None:
        """The batch already created over `file_id` (a driver killed between create and
        its record), or None."""
        ...

    async def ended(self, batch_id: str) -> tuple[bool, str]:
        """(whether it has ended, the provider's status word)."""
        ...

    async def results(self, batch_id: str) -> dict[str, LineResult]: ...


class _Http:
    """The calls both wires make: JSON and bytes, under the transport policy."""

    def __init__(self, http: aiohttp.ClientSession, base: str, headers: dict[str, str]) -> None:
        self.http = http
        self.base = base
        self.headers = headers

    async def call(self, method: str, url: str, **kwargs: Any) -> bytes:
        target = url if "://" in url else self.base + url
        form = kwargs.pop("form", None)  # a FormData is spent by one try: built per try
        async for attempt in transport_retrying(retry_timeouts=True):
            with attempt:
                if form is not None:
                    kwargs["data"] = form()
                async with self.http.request(
                    method, target, headers=self.headers, **kwargs
                ) as response:
                    data = await response.read()
                    if response.status == 429 or response.status >= 500:
                        wait = parse_retry_after(response.headers.get("retry-after"))
                        raise RetryableStatus(response.status, _excerpt(data), wait)
                    if response.status >= 400:
                        raise BatchApiError(
                            f"{method} {url}: HTTP {response.status}: {_excerpt(data)}"
                        )
                    return data
        raise AssertionError("unreachable: the retry policy reraises")

    async def json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        data = await self.call(method, url, **kwargs)
        value = json.loads(data) if data else {}
        if not isinstance(value, dict):
            raise BatchApiError(f"{method} {url}: the answer is not a JSON object")
        return value


def base_url(transport: Transport) -> str:
    """The API's base (…/v1) from the endpoint (…/v1/chat/completions or …/v1)."""
    url = endpoint_url((transport.endpoints or (transport.url or "",))[0])
    return url.split("?", 1)[0].removesuffix("/chat/completions")


class OpenAIWire:
    api = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, http: aiohttp.ClientSession, transport: Transport) -> None:
        headers = {"Authorization": f"Bearer {transport.api_key}"} if transport.api_key else {}
        self._http = _Http(http, base_url(transport), headers)
        self._model = transport.model
        self._scrub = Scrubber.of(transport.api_key)

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        return chat_body(self._model, request)

    async def upload(self, lines: list[Line]) -> str | None:
        text = "".join(
            compact_json(
                {
                    "custom_id": x.custom_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": x.body,
                }
            )
            + "\n"
            for x in lines
        ).encode("utf-8")

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", text, filename="taguru-ray-round.jsonl")
            return data

        uploaded = await self._http.json("POST", "/files", form=form)
        return str(uploaded["id"])

    async def create(self, lines: list[Line], file_id: str | None) -> str:
        created = await self._http.json(
            "POST",
            "/batches",
            json={
                "input_file_id": file_id,
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
            },
        )
        return str(created["id"])

    async def adopt(self, file_id: str) -> str | None:
        """Pages through /v1/batches (newest first) for one over `file_id`."""
        after: str | None = None
        while True:
            query = "?limit=100" + (f"&after={after}" if after else "")
            page = await self._http.json("GET", f"/batches{query}")
            for batch in page.get("data") or []:
                if batch.get("input_file_id") == file_id:
                    return str(batch["id"])
            if not page.get("has_more") or not page.get("data"):
                return None
            after = str(page["data"][-1]["id"])

    async def ended(self, batch_id: str) -> tuple[bool, str]:
        batch = await self._http.json("GET", f"/batches/{batch_id}")
        status = str(batch.get("status"))
        return status in ("completed", "expired", "failed", "cancelled"), status

    async def results(self, batch_id: str) -> dict[str, LineResult]:
        batch = await self._http.json("GET", f"/batches/{batch_id}")
        found: dict[str, LineResult] = {}
        for key in ("output_file_id", "error_file_id"):
            if batch.get(key):
                data = await self._http.call("GET", f"/files/{batch[key]}/content")
                for text in data.decode("utf-8").splitlines():
                    if text.strip():
                        line = json.loads(text)
                        found[str(line.get("custom_id"))] = self._line(line)
        return found

    def _line(self, line: Mapping[str, Any]) -> LineResult:
        error = line.get("error")
        response = line.get("response")
        if isinstance(error, dict) and error.get("code") == "batch_expired":
            return LineFailure("the batch expired before answering it", expired=True)
        if not isinstance(response, dict) or response.get("status_code") != 200:
            status = response.get("status_code") if isinstance(response, dict) else None
            why = json.dumps(error if error else (response or {}).get("body"))[:300]
            return LineFailure(self._scrub(f"HTTP {status}: {why}"))
        return completion_of(response.get("body") or {}, self._scrub)


class AnthropicWire:
    api = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, http: aiohttp.ClientSession, transport: Transport) -> None:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if transport.api_key:
            headers["x-api-key"] = transport.api_key
        self._http = _Http(http, base_url(transport), headers)
        self._model = transport.model
        self._scrub = Scrubber.of(transport.api_key)

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        """The Messages API params: the system prompt apart; no response_format (Anthropic
        has none: the answer contract's prompt and checks hold the shape)."""
        system = "".join(m["content"] for m in request.messages if m["role"] == "system")
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens or ANTHROPIC_MAX_TOKENS,
            "temperature": 0,
            "messages": [m for m in request.messages if m["role"] != "system"],
        }
        if system:
            params["system"] = system
        return params

    async def upload(self, lines: list[Line]) -> str | None:
        return None

    async def create(self, lines: list[Line], file_id: str | None) -> str:
        requests = [{"custom_id": x.custom_id, "params": x.body} for x in lines]
        created = await self._http.json("POST", "/messages/batches", json={"requests": requests})
        return str(created["id"])

    async def adopt(self, file_id: str) -> str | None:
        return None  # no file to find a batch by

    async def ended(self, batch_id: str) -> tuple[bool, str]:
        batch = await self._http.json("GET", f"/messages/batches/{batch_id}")
        status = str(batch.get("processing_status"))
        return status == "ended", status

    async def results(self, batch_id: str) -> dict[str, LineResult]:
        batch = await self._http.json("GET", f"/messages/batches/{batch_id}")
        data = await self._http.call("GET", str(batch["results_url"]))
        found: dict[str, LineResult] = {}
        for text in data.decode("utf-8").splitlines():
            if text.strip():
                line = json.loads(text)
                found[str(line.get("custom_id"))] = self._line(line.get("result") or {})
        return found

    def _line(self, result: Mapping[str, Any]) -> LineResult:
        kind = result.get("type")
        if kind in ("expired", "canceled"):
            return LineFailure(f"the batch ended ({kind}) before answering it", expired=True)
        if kind != "succeeded":
            return LineFailure(self._scrub(json.dumps(result.get("error"))[:300]))
        message = result.get("message") or {}
        text = "".join(
            b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text"
        )
        usage = message.get("usage") or {}
        reason = message.get("stop_reason")
        inputs, outputs = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        return Completion(
            outcome="answer",
            text=self._scrub.secrets_in(text),
            finish_reason=FINISH_OF_STOP.get(str(reason), reason),
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=(inputs or 0) + (outputs or 0) if inputs is not None else None,
        )


def completion_of(payload: Mapping[str, Any], scrub: Scrubber) -> Completion:
    """A chat completion body as the live client reads it (`ChatClient._answer`)."""
    choices = payload.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    choice: Mapping[str, Any] = first if isinstance(first, dict) else {}
    said = choice.get("message")
    message: Mapping[str, Any] = said if isinstance(said, dict) else {}
    content, refusal = message.get("content"), message.get("refusal")
    counted = payload.get("usage")
    usage: Mapping[str, Any] = counted if isinstance(counted, dict) else {}
    finish = choice.get("finish_reason")
    return Completion(
        outcome="answer",
        text=scrub.secrets_in(content) if isinstance(content, str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
        refusal=scrub.secrets_in(refusal) if isinstance(refusal, str) and refusal else None,
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        total_tokens=_int(usage.get("total_tokens")),
    )


def wire_for(http: aiohttp.ClientSession, transport: Transport) -> BatchWire:
    if transport.batch_api == "anthropic":
        return AnthropicWire(http, transport)
    return OpenAIWire(http, transport)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _excerpt(data: bytes, limit: int = 300) -> str:
    text = " ".join(data.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[:limit] + "…"
