"""OpenAI's Batch API on the simulator: /v1/files and /v1/batches, in OpenAI's shapes.

A JSONL file uploaded with `purpose=batch` (multipart), one request a line
(`custom_id`, `method`, `url`, `body`), becomes a batch on POST /v1/batches; the
batch goes `validating` → `in_progress` → `completed` (or `expired`, or
`failed` when the file breaks a rule: a bad line, a repeated custom_id, more
than MAX_REQUESTS lines or MAX_BYTES). Answers land in `output_file_id` (status
200) and `error_file_id` (any other status, a line that failed alone, an
expired line as `batch_expired`), read with GET /v1/files/{id}/content. GET
/v1/batches lists them newest first, with the `metadata` each was created with.
The desk's scripted mischief (`batch_desk.MISCHIEF`) is played here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import BodyPartReader, web

from taguru_ray.simulate.batch_desk import (
    STALL_S,
    UNKNOWN_STATUS,
    Answered,
    BatchDesk,
    jsonl,
    mangled,
    now,
)

MAX_REQUESTS = 50_000  # OpenAI's limits per batch
MAX_BYTES = 200 * 1024 * 1024
TERMINAL = ("completed", "expired", "failed", "cancelled")
CHAT = "/v1/chat/completions"

Authorized = Callable[[Mapping[str, str]], bool]


class OpenAIBatches:
    def __init__(self, desk: BatchDesk, authorized: Authorized) -> None:
        self.desk = desk
        self.authorized = authorized
        self.batches: dict[str, dict[str, Any]] = {}
        self.names: dict[str, str] = {}  # file id -> its filename
        self.outputs: set[str] = set()  # the files of answers (mischief is played on these)
        self._forgotten = desk.forgotten

    def _current(self) -> None:
        """The desk forgot everything (POST /batches/reset {"forget": true}): so do we."""
        if self._forgotten != self.desk.forgotten:
            self._forgotten = self.desk.forgotten
            self.batches.clear()
            self.names.clear()
            self.outputs.clear()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/files", self.upload),
            web.get("/v1/files/{file_id}", self.file),
            web.get("/v1/files/{file_id}/content", self.content),
            web.post("/v1/batches", self.create),
            web.get("/v1/batches", self.listing),
            web.get("/v1/batches/{batch_id}", self.retrieve),
        ]

    def _file_object(self, file_id: str) -> dict[str, Any]:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(self.desk.files[file_id]),
            "created_at": now(),
            "filename": self.names.get(file_id, file_id),
            "purpose": "batch",
        }

    async def upload(self, request: web.Request) -> web.Response:
        self._current()
        if not self.authorized(request.headers):
            return _error(401, "Incorrect API key provided (simulated)")
        purpose, data, filename = None, None, "batch.jsonl"
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "purpose":
                purpose = (await part.read()).decode("utf-8")
            elif part.name == "file":
                filename = part.filename or filename
                data = bytes(await part.read())
        if purpose != "batch" or data is None:
            return _error(400, "a file and purpose=batch are required")
        file_id = self.desk.new_id("file-sim")
        self.desk.files[file_id] = data
        self.names[file_id] = filename
        return web.json_response(self._file_object(file_id))

    async def file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.desk.files:
            return _error(404, f"No such File object: {file_id}")
        return web.json_response(self._file_object(file_id))

    async def content(self, request: web.Request) -> web.Response:
        self._current()
        file_id = request.match_info["file_id"]
        if file_id not in self.desk.files:
            return _error(404, f"No such File object: {file_id}")
        data = self.desk.files[file_id]
        if file_id in self.outputs:
            if "Authorization" in request.headers:
                self.desk.key_hosts[request.host] += 1
            trick = self.desk.trick("results", tuple(t for t in _RESULT_TRICKS))
            if trick == "500":
                return _error(500, "The server had an error (simulated)")
            if trick is not None:
                data = mangled(data, trick, _failed_copy)
        return web.Response(body=data, content_type="application/jsonl")

    async def create(self, request: web.Request) -> web.Response:
        self._current()
        if not self.authorized(request.headers):
            return _error(401, "Incorrect API key provided (simulated)")
        trick = self.desk.trick("create")
        if trick == "500":
            return _error(500, "The server had an error (simulated): nothing was created")
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "the request body is not JSON")
        file_id = body.get("input_file_id") if isinstance(body, dict) else None
        if file_id not in self.desk.files:
            return _error(400, f"input_file_id {file_id!r} names no uploaded file")
        if body.get("endpoint") != CHAT or body.get("completion_window") != "24h":
            return _error(400, f"endpoint must be {CHAT} and completion_window 24h")
        batch_id = self.desk.new_id("batch_sim")
        batch: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": CHAT,
            "errors": None,
            "input_file_id": file_id,
            "completion_window": "24h",
            "status": "in_progress",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now(),
            "in_progress_at": now(),
            "expires_at": now() + 86_400,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[batch_id] = batch
        lines = _lines(self.desk.files[file_id])
        if isinstance(lines, str):
            batch.update(
                status="failed",
                failed_at=now(),
                errors={"object": "list", "data": [{"code": "invalid_file", "message": lines}]},
            )
            return web.json_response(batch)
        batch["request_counts"]["total"] = len(lines)
        expire = self.desk.accept([cid for cid, _ in lines])
        self.desk.start(
            lines, request.headers, expire, lambda done, expired: self._done(batch, done, expired)
        )
        if trick == "500_after_create":
            return _error(500, "The server had an error (simulated): the batch was created")
        if trick == "stall_after_create":
            await asyncio.sleep(STALL_S)
        return web.json_response(batch)

    def _done(self, batch: dict[str, Any], answered: list[Answered], expired: bool) -> None:
        ok = [a for a in answered if a.status == 200 and a.body is not None]
        bad = [a for a in answered if not (a.status == 200 and a.body is not None)]
        if ok:
            batch["output_file_id"] = self._store([_output_line(a) for a in ok])
        if bad:
            batch["error_file_id"] = self._store([_error_line(a) for a in bad])
        batch["request_counts"].update(completed=len(ok), failed=len(bad))
        if expired:
            batch.update(status="expired", expired_at=now())
        else:
            batch.update(status="completed", completed_at=now())

    def _store(self, records: list[dict[str, Any]]) -> str:
        file_id = self.desk.new_id("file-sim")
        self.desk.files[file_id] = jsonl(records)
        self.outputs.add(file_id)
        return file_id

    async def retrieve(self, request: web.Request) -> web.Response:
        self._current()
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error(404, f"No such Batch: {request.match_info['batch_id']}")
        ended = batch["status"] in TERMINAL
        trick = self.desk.trick("poll", ("500", "unknown_status", *(("flip",) if ended else ())))
        if trick == "500":
            return _error(500, "The server had an error (simulated)")
        if trick == "unknown_status":
            return web.json_response({**batch, "status": UNKNOWN_STATUS})
        if trick == "flip":  # a read behind the one before: running, no results named
            flipped = {**batch, "status": "in_progress", "completed_at": None}
            return web.json_response({**flipped, "output_file_id": None, "error_file_id": None})
        return web.json_response(batch)

    async def listing(self, request: web.Request) -> web.Response:
        """Newest first, `limit` at a time after the id `after` (OpenAI's cursor)."""
        self._current()
        if self.desk.trick("list") == "500":
            return _error(500, "The server had an error (simulated)")
        newest = list(reversed(self.batches.values()))
        after = request.query.get("after")
        if after is not None:
            ids = [b["id"] for b in newest]
            newest = newest[ids.index(after) + 1 :] if after in ids else []
        limit = int(request.query.get("limit", "20"))
        page = newest[:limit]
        return web.json_response(
            {
                "object": "list",
                "data": page,
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
                "has_more": len(newest) > limit,
            }
        )


def _lines(data: bytes) -> list[tuple[str, bytes]] | str:
    """(custom_id, body) per line, or why the file is refused whole (OpenAI validates it
    before anything runs)."""
    if len(data) > MAX_BYTES:
        return f"the file is over {MAX_BYTES} bytes"
    lines: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for number, text in enumerate(data.decode("utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            return f"line {number} is not JSON"
        cid = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(cid, str) or line.get("url") != CHAT or line.get("method") != "POST":
            return f"line {number} needs custom_id, method POST and url {CHAT}"
        if cid in seen:
            return f"line {number}: custom_id {cid!r} is repeated"
        seen.add(cid)
        lines.append((cid, json.dumps(line.get("body")).encode("utf-8")))
    if len(lines) > MAX_REQUESTS:
        return f"more than {MAX_REQUESTS} requests"
    return lines


_RESULT_TRICKS = ("500", "cut_line", "not_json", "bad_utf8", "json_array", "duplicate")


def _failed_copy(line: dict[str, Any]) -> dict[str, Any]:
    return _error_line(Answered(str(line.get("custom_id")), status=500, error="failed"))


def _output_line(answered: Answered) -> dict[str, Any]:
    return {
        "id": f"batch_req_{answered.custom_id}",
        "custom_id": answered.custom_id,
        "response": {"status_code": 200, "request_id": "", "body": answered.body},
        "error": None,
    }


def _error_line(answered: Answered) -> dict[str, Any]:
    if answered.error == "batch_expired":
        return {
            "id": f"batch_req_{answered.custom_id}",
            "custom_id": answered.custom_id,
            "response": None,
            "error": {"code": "batch_expired", "message": "the batch expired (simulated)"},
        }
    body = answered.body or {"error": {"message": "the line failed (simulated)"}}
    return {
        "id": f"batch_req_{answered.custom_id}",
        "custom_id": answered.custom_id,
        "response": {"status_code": answered.status or 500, "request_id": "", "body": body},
        "error": None,
    }


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "invalid_request_error"}}
    return web.json_response(body, status=status)
