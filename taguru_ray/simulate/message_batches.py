"""Anthropic's Message Batches on the simulator: /v1/messages/batches, in Anthropic's shapes.

POST takes `{"requests": [{"custom_id", "params"}]}` (params: a Messages API
body — `model`, `max_tokens`, `system`, `messages`); each request is answered
as a chat completion by the live route's machinery, turned into a Message.
GET …/{id} reports `processing_status` `in_progress` then `ended` with a
`results_url`, whose JSONL has one `result` per request: `succeeded` (the
message), `errored`, `expired`. At most MAX_REQUESTS requests and MAX_BYTES.
GET /v1/messages/batches lists them newest first (`limit`, `after_id`,
`before_id`; `first_id`, `last_id`, `has_more`), as Anthropic's API does. The
desk's scripted mischief (`batch_desk.MISCHIEF`) is played here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from taguru_ray.simulate.batch_desk import (
    STALL_S,
    UNKNOWN_STATUS,
    Answered,
    BatchDesk,
    jsonl,
    mangled,
)
from taguru_ray.simulate.batches import Authorized

MAX_REQUESTS = 100_000  # Anthropic's limits per batch
MAX_BYTES = 256 * 1024 * 1024
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


class MessageBatches:
    def __init__(self, desk: BatchDesk, authorized: Authorized) -> None:
        self.desk = desk
        self.authorized = authorized
        self.batches: dict[str, dict[str, Any]] = {}
        self.results: dict[str, bytes] = {}
        self._forgotten = desk.forgotten

    def _current(self) -> None:
        """The desk forgot everything (POST /batches/reset {"forget": true}): so do we."""
        if self._forgotten != self.desk.forgotten:
            self._forgotten = self.desk.forgotten
            self.batches.clear()
            self.results.clear()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/messages/batches", self.create),
            web.get("/v1/messages/batches", self.listing),
            web.get("/v1/messages/batches/{batch_id}", self.retrieve),
            web.get("/v1/messages/batches/{batch_id}/results", self.result_lines),
        ]

    async def create(self, request: web.Request) -> web.Response:
        self._current()
        headers = as_bearer(request.headers)
        if not self.authorized(headers):
            return _error(401, "authentication_error", "invalid x-api-key (simulated)")
        trick = self.desk.trick("create")
        if trick == "500":
            return _error(500, "api_error", "internal error (simulated): nothing was created")
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "invalid_request_error", "the request body is not JSON")
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: a non-empty array is required")
        if len(requests) > MAX_REQUESTS or len(raw) > MAX_BYTES:
            return _error(400, "invalid_request_error", "the batch is over the size limits")
        lines: list[tuple[str, bytes]] = []
        for number, item in enumerate(requests):
            cid = item.get("custom_id") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            if not isinstance(cid, str) or not isinstance(params, dict):
                return _error(400, "invalid_request_error", f"requests.{number}: bad request")
            if any(cid == seen for seen, _ in lines):
                return _error(400, "invalid_request_error", f"custom_id {cid!r} is repeated")
            lines.append((cid, json.dumps(chat_body(params)).encode("utf-8")))
        batch_id = self.desk.new_id("msgbatch_sim")
        created = datetime.now(UTC)
        batch: dict[str, Any] = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(lines),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "ended_at": None,
            "created_at": created.isoformat(),
            "expires_at": (created + timedelta(hours=24)).isoformat(),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
        }
        self.batches[batch_id] = batch
        origin = str(request.url.origin())
        expire = self.desk.accept([cid for cid, _ in lines])
        self.desk.start(lines, headers, expire, lambda done, _: self._done(batch, origin, done))
        if trick == "500_after_create":
            return _error(500, "api_error", "internal error (simulated): the batch was created")
        if trick == "stall_after_create":
            await asyncio.sleep(STALL_S)
        return web.json_response(batch)

    def _done(self, batch: dict[str, Any], origin: str, answered: list[Answered]) -> None:
        records = [_result(a) for a in answered]
        counts = batch["request_counts"]
        counts["processing"] = 0
        for record in records:
            counts[record["result"]["type"]] += 1
        self.results[batch["id"]] = jsonl(records)
        batch.update(
            processing_status="ended",
            ended_at=datetime.now(UTC).isoformat(),
            results_url=f"{origin}/v1/messages/batches/{batch['id']}/results",
        )

    async def retrieve(self, request: web.Request) -> web.Response:
        self._current()
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error(404, "not_found_error", "no such message batch")
        ended = batch["processing_status"] == "ended"
        trick = self.desk.trick("poll", ("500", "unknown_status", *(("flip",) if ended else ())))
        if trick == "500":
            return _error(500, "api_error", "internal error (simulated)")
        if trick == "unknown_status":
            return web.json_response({**batch, "processing_status": UNKNOWN_STATUS})
        if trick == "flip":  # a read behind the one before: running, no results named
            flipped = {**batch, "processing_status": "in_progress", "ended_at": None}
            return web.json_response({**flipped, "results_url": None})
        if ended and self.desk.trick("results", ("other_host",)) is not None:
            moved = str(batch["results_url"]).replace(request.host, _other(request.host), 1)
            return web.json_response({**batch, "results_url": moved})
        return web.json_response(batch)

    async def listing(self, request: web.Request) -> web.Response:
        """Newest first, `limit` (1–1000, 20) at a time, after `after_id` or before
        `before_id` (Anthropic's cursors)."""
        self._current()
        if self.desk.trick("list") == "500":
            return _error(500, "api_error", "internal error (simulated)")
        try:
            limit = int(request.query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            return _error(400, "invalid_request_error", "limit: from 1 to 1000")
        newest = list(reversed(self.batches.values()))
        ids = [b["id"] for b in newest]
        after, before = request.query.get("after_id"), request.query.get("before_id")
        if after is not None:
            newest = newest[ids.index(after) + 1 :] if after in ids else []
            page, more = newest[:limit], len(newest) > limit
        elif before is not None:
            newest = newest[: ids.index(before)] if before in ids else []
            page, more = newest[-limit:], len(newest) > limit
        else:
            page, more = newest[:limit], len(newest) > limit
        return web.json_response(
            {
                "data": page,
                "has_more": more,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
            }
        )

    async def result_lines(self, request: web.Request) -> web.Response:
        self._current()
        if "x-api-key" in request.headers:
            self.desk.key_hosts[request.host] += 1
        results = self.results.get(request.match_info["batch_id"])
        if results is None:
            return _error(404, "not_found_error", "the batch has not ended")
        trick = self.desk.trick("results", _RESULT_TRICKS)
        if trick == "500":
            return _error(500, "api_error", "internal error (simulated)")
        if trick is not None:
            results = mangled(results, trick, _failed_copy)
        return web.Response(body=results, content_type="application/binary")


_RESULT_TRICKS = ("500", "cut_line", "not_json", "bad_utf8", "json_array", "duplicate")


def _other(host: str) -> str:
    """The same server under another name: `localhost` for a loopback address."""
    name, _, port = host.rpartition(":")
    return f"localhost:{port}" if name and name != "localhost" else f"127.0.0.1:{port}"


def _failed_copy(line: dict[str, Any]) -> dict[str, Any]:
    return _result(Answered(str(line.get("custom_id")), status=500, error="failed"))


def as_bearer(headers: Mapping[str, str]) -> dict[str, str]:
    """Anthropic's x-api-key as the Bearer the live route checks."""
    kept = dict(headers)
    if "x-api-key" in headers:
        kept["Authorization"] = f"Bearer {headers['x-api-key']}"
    return kept


def chat_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages API body as the chat completion the live route answers."""
    messages = list(params.get("messages") or [])
    system = params.get("system")
    if isinstance(system, list):  # system as text blocks
        system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
    if isinstance(system, str) and system:
        messages = [{"role": "system", "content": system}, *messages]
    body: dict[str, Any] = {"model": params.get("model"), "messages": messages}
    if params.get("max_tokens") is not None:
        body["max_tokens"] = params["max_tokens"]
    return body


def _result(answered: Answered) -> dict[str, Any]:
    cid = answered.custom_id
    if answered.error == "batch_expired":
        return {"custom_id": cid, "result": {"type": "expired"}}
    if answered.status != 200 or answered.body is None:
        said = json.dumps(answered.body or {})[:300]
        error = {"type": "api_error", "message": f"HTTP {answered.status}: {said}"}
        errored = {"type": "errored", "error": {"type": "error", "error": error}}
        return {"custom_id": cid, "result": errored}
    choice = answered.body["choices"][0]
    usage = answered.body.get("usage") or {}
    message = {
        "id": f"msg_{cid}",
        "type": "message",
        "role": "assistant",
        "model": answered.body.get("model"),
        "content": [{"type": "text", "text": choice["message"].get("content") or ""}],
        "stop_reason": STOP_REASONS.get(choice.get("finish_reason"), "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }
    return {"custom_id": cid, "result": {"type": "succeeded", "message": message}}


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response(
        {"type": "error", "error": {"type": kind, "message": message}}, status=status
    )
