"""The wire envelope of every answer (EVALUATE.md §1.0), said once.

Success: `{"result": …, "status": "ok", "time": secs}`. Refusal:
`{"status": "error", "code", "error", "time"}` plus the refusal's extras (an
import's `issues`, `integrity`, …). `/health` and `/version` are the two bare
answers. Every body is UTF-8 JSON with non-ASCII written raw, as serde writes
it; the time is the handler's own elapsed seconds.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from taguru_ray.context.errors import ContextError

JSON_TYPE = "application/json"

# The code a refusal carries when nothing more specific was said, by HTTP status.
CODE_BY_STATUS = {
    400: "malformed_request",
    401: "unauthorized",
    403: "forbidden",
    404: "unknown_path",
    405: "method_not_allowed",
    408: "timeout",
    409: "conflict",
    413: "payload_too_large",
    415: "malformed_request",
    422: "malformed_request",
    429: "rate_limited",
    500: "internal",
    501: "not_implemented",
    502: "embeddings_failed",
    503: "overloaded",
}


def dumps(body: Any) -> str:
    """Compact JSON, non-ASCII raw; NaN/Infinity refused (JSON has no spelling for them)."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def bare(body: Any, status: int = 200) -> web.Response:
    """An answer outside the envelope (`/health`, `/version`)."""
    return web.Response(status=status, text=dumps(body), content_type=JSON_TYPE)


def ok(result: Any, started: float) -> web.Response:
    return bare({"result": result, "status": "ok", "time": elapsed(started)})


def refusal(error: ContextError, started: float) -> web.Response:
    body: dict[str, Any] = {
        "status": "error",
        "code": error.code or CODE_BY_STATUS.get(error.status, "internal"),
        "error": error.message,
        "time": elapsed(started),
    }
    extra = dict(error.extra)
    retry_after = extra.pop("retry_after", None)  # a header, not a body field
    for key, value in extra.items():
        body.setdefault(key, value)
    response = bare(body, status=error.status)
    if error.status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def fail(status: int, message: str, code: str | None = None) -> ContextError:
    """A refusal to raise from request handling; the error middleware answers it."""
    return ContextError(status, code or CODE_BY_STATUS.get(status, "internal"), message)


def elapsed(started: float) -> float:
    return round(time.monotonic() - started, 6)
