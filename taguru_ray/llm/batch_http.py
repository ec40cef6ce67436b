"""The calls both batch wires make, and the values they share (issue 49, ADR 0084).

What costs money is never sent twice blindly: a create is one try (`create_once`:
a 429, refused before anything was made, goes back to be tried again; a 5xx or a
broken connection is `Ambiguous`, and the caller looks for the batch it may have
made before creating again). A poll or a results read is one try too: the caller
backs off and tries again (the batch is still the provider's). Uploads and
listings, which cost nothing, run under the live client's transport policy (4
tries, full jitter, Retry-After). A 4xx is a `BatchApiError`. The API key's
headers go to the configured API host only (ADR 0085). A results file is streamed
(`Http.lines`), a line at a time through `batch_results.ResultsReader`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
from tenacity import AsyncRetrying

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_results import LineFailure, LineResult, ResultsReader, Unread, split_lines
from taguru_ray.llm.retry import RetryableStatus, parse_retry_after
from taguru_ray.llm.route import endpoint_url

CHUNK = 1 << 16  # a results file is read this many bytes at a time
# A listing is searched by time: a batch created this long before the driver's clock
# said "about to create" is not ours (clocks differ by seconds), nor one created this
# long after (the create's tries end well within it).
EARLY_S = 120.0
LATE_S = 3600.0
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


class Http:
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


async def create_once(http: Http, url: str, body: dict[str, Any]) -> dict[str, Any]:
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


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _excerpt(data: bytes, limit: int = 300) -> str:
    text = " ".join(data.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[:limit] + "…"
