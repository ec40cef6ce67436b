"""Anthropic's Message Batches on the wire: a round's requests in the create call
(`/v1/messages/batches`), the Messages API's shapes (ADR 0070), its results
streamed from the configured host (ADR 0085) as one verdict per custom_id
(`batch_http.py`; ADR 0068, 0078).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import aiohttp

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_http import (
    EARLY_S,
    LATE_S,
    Http,
    Line,
    Retrying,
    Snapshot,
    as_int,
    base_url,
    create_once,
    number,
    origin,
)
from taguru_ray.llm.batch_results import LineFailure, ResultsReader
from taguru_ray.llm.retry import transport_retrying
from taguru_ray.llm.scrub import Scrubber

# Anthropic requires max_tokens; a run that sends none (off the ladder) asks for this.
ANTHROPIC_MAX_TOKENS = 8192
ANTHROPIC_VERSION = "2023-06-01"
FINISH_OF_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
FINISH_OF_STOP["refusal"] = "content_filter"


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
        self._http = Http(http, base_url(transport), headers, retrying)
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
        created = await create_once(self._http, "/messages/batches", {"requests": requests})
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
                total = sum(map(number, counts.values())) if isinstance(counts, dict) else -1
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
            detail = f"{number(counts.get('processing')):.0f} request(s) processing"
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
        inputs, outputs = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
        return Completion(
            outcome="answer",
            text=self._scrub.secrets_in(text),
            finish_reason=FINISH_OF_STOP.get(str(reason), reason),
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=(inputs or 0) + (outputs or 0) if inputs is not None else None,
        )


def _epoch(value: Any) -> float:
    """An ISO 8601 time (Anthropic's created_at) as seconds since the epoch; 0 if none."""
    if not isinstance(value, str):
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
