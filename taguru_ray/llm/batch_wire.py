"""A provider's batch API on the wire: OpenAI's /v1/files + /v1/batches, Anthropic's
/v1/messages/batches (`--batch-api`, ADR 0068).

Each wire turns the run's `CompletionRequest` into a line body, hands a round's
lines over (OpenAI: a JSONL file uploaded with purpose=batch, then a batch over
it; Anthropic: the requests in the create call), reads a batch's status, and
streams its results back as one verdict per custom_id (`batch_results.py`): a
`Completion` — the value the live client returns, so the program judges a batch
answer as a live one — a `LineFailure` (the provider said the line has no
answer), or `Unread` (no verdict could be read).

What costs money is never sent twice blindly (issue 49, ADR 0078): a create is
one try (a 429, refused before anything was made, is tried again); a create
whose answer never came whole (a 5xx, a dropped connection) is `Ambiguous`, and
`find` looks for the batch it may have made — by the metadata and input file
(OpenAI) or by creation time and request count (Anthropic) — before anyone
creates again. A poll or a results read is one try too: the caller backs off
and tries again (the batch is still the provider's). Uploads and listings, which
cost nothing, run under the live client's transport policy (4 tries, full
jitter, Retry-After). A 4xx is a `BatchApiError`. The API key goes only to the
configured API host (ADR 0079): a URL the provider hands back naming another
host is not followed with it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from tenacity import AsyncRetrying

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_results import (
    LineFailure,
    LineResult,
    ResultsReader,
    Unread,
    split_lines,
)
from taguru_ray.llm.client import chat_body
from taguru_ray.llm.retry import RetryableStatus, parse_retry_after, transport_retrying
from taguru_ray.llm.route import endpoint_url
from taguru_ray.llm.scrub import Scrubber

__all__ = [
    "TRANSIENT",
    "Ambiguous",
    "AnthropicWire",
    "BatchApiError",
    "BatchWire",
    "Line",
    "LineFailure",
    "LineResult",
    "OpenAIWire",
    "Snapshot",
    "Unread",
    "base_url",
    "completion_of",
    "wire_for",
]

# Anthropic requires max_tokens; a run that sends none (off the ladder) asks for this.
ANTHROPIC_MAX_TOKENS = 8192
ANTHROPIC_VERSION = "2023-06-01"
FINISH_OF_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
FINISH_OF_STOP["refusal"] = "content_filter"
METADATA_KEY = "taguru_ray_batch"  # OpenAI: the record's key, so a rerun finds the batch
# Anthropic's listing is matched by time: a batch created this long before the driver's
# clock said "about to create" is not ours (clocks differ by seconds), nor one created
# this long after (the create's tries end well within it).
EARLY_S = 120.0
LATE_S = 3600.0
CHUNK = 1 << 16  # a results file is read this many bytes at a time
TRANSIENT: tuple[type[BaseException], ...] = (
    RetryableStatus,
    aiohttp.ClientError,
    TimeoutError,
)

Retrying = Callable[[], AsyncRetrying]


class BatchApiError(Exception):
    """The provider refused a batch call (a 4xx): the fix is in the message."""


class Ambiguous(Exception):
    """A create whose answer never came whole (a 5xx, a dropped connection): the batch
    may exist. Never created again before `find` has looked for it."""


@dataclass(frozen=True)
class Line:
    custom_id: str
    body: dict[str, Any]  # what the provider is asked, for this line

    def size(self) -> int:
        return len(compact_json(self.body).encode("utf-8")) + len(self.custom_id) + 96


@dataclass(frozen=True)
class Snapshot:
    """One read of a batch. The first that says it ended is trusted: its results are
    read from the files (or URL) it names, never from a later read (issue 49 item 4)."""

    batch_id: str
    status: str  # the provider's word
    ended: bool
    known: bool  # a status this tool knows; an unknown one is polled until it ends
    results_at: tuple[str, ...] = ()  # where its results are (paths or URLs)
    unrun_failed: bool = False  # a request absent from its results was never run
    detail: str = ""  # the provider's counts, for the progress line
    note: str | None = None  # said once: a results URL not followed, and why

    def absent(self) -> LineResult:
        """The verdict of a request its results do not name."""
        if self.unrun_failed:
            return LineFailure(f"the batch ended ({self.status}) before answering it", True)
        return Unread(f"absent from the results of batch {self.batch_id} ({self.status})")


class BatchWire(Protocol):
    api: str
    max_requests: int
    max_bytes: int

    def body(self, request: CompletionRequest) -> dict[str, Any]: ...

    async def upload(self, lines: list[Line]) -> str | None:
        """The lines as an uploaded file's id (OpenAI), or None (Anthropic: no file)."""
        ...

    async def create(self, record: BatchRecord, lines: list[Line]) -> str:
        """A batch over the lines (or the record's uploaded file), one try; its id.
        `Ambiguous` when the answer never came whole; a 429 is a RetryableStatus."""
        ...

    async def find(self, record: BatchRecord, taken: set[str]) -> str | None:
        """The provider's batch made from `record` (a create killed or answered
        ambiguously), none of `taken`; None when the provider holds none."""
        ...

    async def poll(self, batch_id: str) -> Snapshot:
        """One read of the batch (one try: TRANSIENT errors reach the caller)."""
        ...

    async def results(self, snapshot: Snapshot) -> ResultsReader:
        """The results a terminal `snapshot` names, streamed (one try)."""
        ...


def origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower().rsplit("@", 1)[-1]


class _Http:
    """The calls both wires make. The key's headers go to the configured origin only."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        base: str,
        headers: dict[str, str],
        retrying: Retrying,
    ) -> None:
        self.http = http
        self.base = base
        self.headers = headers
        self.retrying = retrying
        self.origin = origin(base)

    def target(self, url: str) -> str:
        return url if "://" in url else self.base + url

    def ours(self, url: str) -> bool:
        return origin(self.target(url)) == self.origin

    @asynccontextmanager
    async def open(self, method: str, url: str, **kwargs: Any) -> AsyncIterator[Any]:
        """One request, its status judged: a 429 or 5xx is a RetryableStatus, another
        4xx a BatchApiError; the response is yielded to be read."""
        target = self.target(url)
        headers = self.headers if origin(target) == self.origin else {}
        async with self.http.request(method, target, headers=headers, **kwargs) as response:
            if response.status == 429 or response.status >= 500:
                wait = parse_retry_after(response.headers.get("retry-after"))
                raise RetryableStatus(response.status, _excerpt(await response.read()), wait)
            if response.status >= 400:
                said = _excerpt(await response.read())
                raise BatchApiError(f"{method} {url}: HTTP {response.status}: {said}")
            yield response

    async def once(self, method: str, url: str, **kwargs: Any) -> bytes:
        async with self.open(method, url, **kwargs) as response:
            return bytes(await response.read())

    async def call(self, method: str, url: str, **kwargs: Any) -> bytes:
        """Under the transport policy: for calls that cost nothing (uploads, listings)."""
        form = kwargs.pop("form", None)  # a FormData is spent by one try: built per try
        async for attempt in self.retrying():
            with attempt:
                if form is not None:
                    kwargs["data"] = form()
                return await self.once(method, url, **kwargs)
        raise AssertionError("unreachable: the retry policy reraises")

    async def json(self, method: str, url: str, *, once: bool = False, **kwargs: Any) -> Any:
        data = await (self.once if once else self.call)(method, url, **kwargs)
        try:
            value = json.loads(data) if data else {}
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise BatchApiError(f"{method} {url}: the answer is not a JSON object")
        return value

    async def lines(self, url: str, reader: ResultsReader) -> None:
        """The file at `url` fed to `reader` a line at a time, never held whole."""
        async with self.open("GET", url) as response:
            pending = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                split_lines(pending, chunk, reader.feed)
            if pending:
                reader.feed(bytes(pending))


def base_url(transport: Transport) -> str:
    """The API's base (…/v1) from the endpoint (…/v1/chat/completions or …/v1)."""
    url = endpoint_url((transport.endpoints or (transport.url or "",))[0])
    return url.split("?", 1)[0].removesuffix("/chat/completions")


async def _create_once(http: _Http, url: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST a create: a 429 (nothing made) goes back to the caller to wait and try again;
    a 5xx or a broken connection is Ambiguous (the batch may have been made)."""
    try:
        return dict(await http.json("POST", url, once=True, json=body))
    except RetryableStatus as error:
        if error.status == 429:
            raise
        raise Ambiguous(f"POST {url} answered HTTP {error.status}") from error
    except (TimeoutError, aiohttp.ClientError) as error:
        raise Ambiguous(f"POST {url}: {type(error).__name__}: {error}") from error


class OpenAIWire:
    api = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024
    TERMINAL = ("completed", "expired", "failed", "cancelled")
    RUNNING = ("validating", "in_progress", "finalizing", "cancelling")

    def __init__(
        self,
        http: aiohttp.ClientSession,
        transport: Transport,
        retrying: Retrying = transport_retrying,
    ) -> None:
        headers = {"Authorization": f"Bearer {transport.api_key}"} if transport.api_key else {}
        self._http = _Http(http, base_url(transport), headers, retrying)
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

    async def create(self, record: BatchRecord, lines: list[Line]) -> str:
        body = {
            "input_file_id": record.input_file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "metadata": {METADATA_KEY: record.key},
        }
        created = await _create_once(self._http, "/batches", body)
        return str(created["id"])

    async def find(self, record: BatchRecord, taken: set[str]) -> str | None:
        """Pages through /v1/batches (newest first) for one carrying the record's key in
        its metadata, or made over its uploaded file."""
        after: str | None = None
        while True:
            query = "?limit=100" + (f"&after={after}" if after else "")
            page = await self._http.json("GET", f"/batches{query}")
            batches = [b for b in page.get("data") or [] if isinstance(b, dict)]
            for batch in batches:
                metadata = batch.get("metadata")
                keyed = isinstance(metadata, dict) and metadata.get(METADATA_KEY) == record.key
                filed = record.input_file_id and batch.get("input_file_id") == record.input_file_id
                if (keyed or filed) and str(batch.get("id")) not in taken:
                    return str(batch["id"])
            if not page.get("has_more") or not batches:
                return None
            oldest = batches[-1].get("created_at")
            if record.created_after and _number(oldest) < record.created_after - EARLY_S:
                return None  # older than the record: the listing holds no more of ours
            after = str(batches[-1]["id"])

    async def poll(self, batch_id: str) -> Snapshot:
        batch = await self._http.json("GET", f"/batches/{batch_id}", once=True)
        status = str(batch.get("status"))
        files = tuple(
            f"/files/{batch[key]}/content"
            for key in ("output_file_id", "error_file_id")
            if isinstance(batch.get(key), str) and batch[key]
        )
        counts = batch.get("request_counts")
        detail = ""
        if isinstance(counts, dict):
            done = _number(counts.get("completed")) + _number(counts.get("failed"))
            detail = f"{done:.0f} of {_number(counts.get('total')):.0f} request(s) done"
        return Snapshot(
            batch_id=batch_id,
            status=status,
            ended=status in self.TERMINAL,
            known=status in self.TERMINAL or status in self.RUNNING,
            results_at=files,
            unrun_failed=status in ("expired", "failed", "cancelled"),
            detail=detail,
        )

    async def results(self, snapshot: Snapshot) -> ResultsReader:
        reader = ResultsReader(self._line)
        for path in snapshot.results_at:
            await self._http.lines(path, reader)
        return reader

    def _line(self, line: Mapping[str, Any]) -> Completion | LineFailure:
        error = line.get("error")
        response = line.get("response")
        if isinstance(error, dict) and error.get("code") == "batch_expired":
            return LineFailure("the batch expired before answering it", expired=True)
        if not isinstance(response, dict) or response.get("status_code") != 200:
            status = response.get("status_code") if isinstance(response, dict) else None
            why = json.dumps(error if error else (response or {}).get("body"))[:300]
            return LineFailure(self._scrub(f"HTTP {status}: {why}"))
        body = response.get("body")
        if not isinstance(body, dict):
            raise TypeError("a 200 line whose body is not an object")
        return completion_of(body, self._scrub)


class AnthropicWire:
    api = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024
    RUNNING = ("in_progress", "canceling")

    def __init__(
        self,
        http: aiohttp.ClientSession,
        transport: Transport,
        retrying: Retrying = transport_retrying,
    ) -> None:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if transport.api_key:
            headers["x-api-key"] = transport.api_key
        self._http = _Http(http, base_url(transport), headers, retrying)
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

    async def create(self, record: BatchRecord, lines: list[Line]) -> str:
        requests = [{"custom_id": x.custom_id, "params": x.body} for x in lines]
        created = await _create_once(self._http, "/messages/batches", {"requests": requests})
        return str(created["id"])

    async def find(self, record: BatchRecord, taken: set[str]) -> str | None:
        """A batch of as many requests as the record, created from just before the
        record's time on, none of `taken`: Anthropic's listing shows no metadata and no
        request ids. An ended candidate is taken unless its results name a request the
        record does not; of those still running, the first created after the record."""
        since = record.created_after or 0.0
        candidates: list[tuple[float, dict[str, Any]]] = []
        after: str | None = None
        while True:
            query = "?limit=100" + (f"&after_id={after}" if after else "")
            page = await self._http.json("GET", f"/messages/batches{query}")
            batches = [b for b in page.get("data") or [] if isinstance(b, dict)]
            older = False
            for batch in batches:
                made = _epoch(batch.get("created_at"))
                older = older or made < since - EARLY_S
                counts = batch.get("request_counts")
                total = sum(map(_number, counts.values())) if isinstance(counts, dict) else -1
                fits = since - EARLY_S <= made <= since + LATE_S
                if fits and total == len(record.custom_ids) and str(batch["id"]) not in taken:
                    candidates.append((made, batch))
            if older or not page.get("has_more") or not batches:
                break
            after = str(batches[-1]["id"])
        running: list[str] = []
        for _, batch in sorted(candidates, key=lambda pair: pair[0]):
            snapshot = self._snapshot(batch)
            if not snapshot.ended:
                running.append(snapshot.batch_id)
                continue
            named = set((await self.results(snapshot)).found)
            if named <= set(record.custom_ids):  # a damaged line may hide one; none foreign
                return snapshot.batch_id
        return running[0] if running else None

    async def poll(self, batch_id: str) -> Snapshot:
        batch = await self._http.json("GET", f"/messages/batches/{batch_id}", once=True)
        return self._snapshot(batch, batch_id)

    def _snapshot(self, batch: Mapping[str, Any], batch_id: str | None = None) -> Snapshot:
        batch_id = batch_id or str(batch.get("id"))
        status = str(batch.get("processing_status"))
        counts = batch.get("request_counts")
        detail = ""
        if isinstance(counts, dict):
            detail = f"{_number(counts.get('processing')):.0f} request(s) processing"
        url, note = batch.get("results_url"), None
        documented = f"/messages/batches/{batch_id}/results"
        if isinstance(url, str) and url and not self._http.ours(url):
            shown = "://".join(origin(url)) if "://" in url else "a relative URL"
            note = (
                f"batch {batch_id}: its results_url names {shown}, not the configured API "
                f"host: read from {documented} there instead (the API key goes to that "
                "host only)"
            )
            url = documented
        return Snapshot(
            batch_id=batch_id,
            status=status,
            ended=status == "ended",
            known=status == "ended" or status in self.RUNNING,
            results_at=(url if isinstance(url, str) and url else documented,),
            detail=detail,
            note=note,
        )

    async def results(self, snapshot: Snapshot) -> ResultsReader:
        reader = ResultsReader(self._line)
        for url in snapshot.results_at:
            await self._http.lines(url, reader)
        return reader

    def _line(self, line: Mapping[str, Any]) -> Completion | LineFailure:
        result = line.get("result")
        if not isinstance(result, dict):
            raise TypeError("a line with no result object")
        kind = result.get("type")
        if kind in ("expired", "canceled"):
            return LineFailure(f"the batch ended ({kind}) before answering it", expired=True)
        if kind != "succeeded":
            return LineFailure(self._scrub(json.dumps(result.get("error"))[:300]))
        message = result.get("message")
        if not isinstance(message, dict):
            raise TypeError("a succeeded line with no message")
        text = "".join(
            b.get("text", "")
            for b in message.get("content") or []
            if isinstance(b, dict) and b.get("type") == "text"
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


def wire_for(
    http: aiohttp.ClientSession, transport: Transport, retrying: Retrying = transport_retrying
) -> BatchWire:
    if transport.batch_api == "anthropic":
        return AnthropicWire(http, transport, retrying)
    return OpenAIWire(http, transport, retrying)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _epoch(value: Any) -> float:
    """An ISO 8601 time (Anthropic's created_at) as seconds since the epoch; 0 if none."""
    if not isinstance(value, str):
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _excerpt(data: bytes, limit: int = 300) -> str:
    text = " ".join(data.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[:limit] + "…"
