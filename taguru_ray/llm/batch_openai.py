"""OpenAI's Batch API on the wire: a round's lines uploaded as a JSONL file
(purpose=batch), a batch over it (`/v1/batches`, its record's key in `metadata`,
so a rerun finds it again by listing), its output and error files streamed back
as one verdict per custom_id (`batch_http.py`; ADR 0068, 0078).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import compact_json
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_http import (
    EARLY_S,
    Http,
    Line,
    Retrying,
    Snapshot,
    as_int,
    base_url,
    create_once,
    number,
)
from taguru_ray.llm.batch_results import LineFailure, ResultsReader
from taguru_ray.llm.client import chat_body
from taguru_ray.llm.retry import transport_retrying
from taguru_ray.llm.scrub import Scrubber

METADATA_KEY = "taguru_ray_batch"  # the record's key, so a rerun finds the batch


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
        self._http = Http(http, base_url(transport), headers, retrying)
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
        created = await create_once(self._http, "/batches", body)
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
            if record.created_after and number(oldest) < record.created_after - EARLY_S:
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
            done = number(counts.get("completed")) + number(counts.get("failed"))
            detail = f"{done:.0f} of {number(counts.get('total')):.0f} request(s) done"
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
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        total_tokens=as_int(usage.get("total_tokens")),
    )
