"""One Taguru server's routes as calls: the envelope unwrapped, errors as `RemoteError`.

Every reply is timed (integer wall-clock milliseconds, what `evaluate` records per
call). A success is ``200 {"status": "ok", "result": …}``; a 200 without
``result`` is a failure, as the reference client reads it. A failure keeps the
HTTP status and the server's ``code`` (a 404 ``no_source`` is not a 404
``no_paragraph``), and its message is ``{url} answered {status}: {error}``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from taguru_ray.contract.server_variables import client_token

TIMEOUT_SECONDS = 35.0
HEALTH_PROBE_SECONDS = 4.0
MESSAGE_BYTES = 200


class RemoteError(Exception):
    """A call that did not answer a result: ``status`` None for a transport failure."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        code: str | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.body = body or {}  # the error envelope (an import refusal's `issues`, …)

    def cut(self) -> str:
        return cut_message(self.message)


@dataclass(frozen=True)
class Reply:
    result: Any
    latency_ms: int


def cut_message(text: str, limit: int = MESSAGE_BYTES) -> str:
    """At most `limit` bytes of UTF-8, cut on a character boundary, ``…`` when cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + "…"


class TaguruClient:
    """Calls to the server at `base` (from `remote.address.base_url`)."""

    def __init__(self, base: str, token: str | None, timeout: float = TIMEOUT_SECONDS) -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.timeout = timeout

    @classmethod
    def from_environment(cls, base: str, environ: Mapping[str, str]) -> TaguruClient:
        return cls(base, client_token(environ))

    # -- the routes ------------------------------------------------------------

    def health(self, timeout: float | None = None) -> dict[str, Any]:
        """``GET /health``: its body is not enveloped (``{"status", "version"}``)."""
        status, body = self._send("GET", "/health", None, timeout=timeout)
        if status != 200:
            raise self._failure("/health", status, body)
        parsed = _json(body)
        return parsed if isinstance(parsed, dict) else {}

    def context(self, name: str) -> Reply:
        return self.call("GET", _context(name))

    def embeddings(self, name: str) -> Reply:
        return self.call("GET", _context(name, "embeddings"))

    def sources_page(self, name: str, after: str | None, limit: int = 1000) -> Reply:
        query = {"limit": str(limit)} | ({"after": after} if after is not None else {})
        return self.call("GET", _context(name, "sources") + "?" + urlencode(query))

    def search(self, name: str, body: Mapping[str, Any]) -> Reply:
        return self.call("POST", _context(name, "sources/search"), body)

    def resolve(self, name: str, cue: str, limit: int, label: bool = False) -> Reply:
        route = "resolve_label" if label else "resolve"
        return self.call("POST", _context(name, route), {"cue": cue, "limit": limit})

    def query(self, name: str, subject: str, label: str, object_: str, limit: int = 1) -> Reply:
        body = {"subject": subject, "label": label, "object": object_, "limit": limit}
        return self.call("POST", _context(name, "query"), body)

    def citation(self, name: str, source: str, paragraph: int) -> Reply:
        body = {"source": source, "paragraph": paragraph}
        return self.call("POST", _context(name, "citations"), body)

    def evidence(self, name: str, body: Mapping[str, Any]) -> Reply:
        return self.call("POST", _context(name, "evidence"), body)

    def retract_source(self, name: str, source: str, dry_run: bool = False) -> Reply:
        """``POST /contexts/{name}/sources/retract``: the source's attributions and passage
        withdrawn; ``{associations_touched, passage_removed}`` (zero and false when the
        context held no such source)."""
        route = "sources/retract" + ("?dry_run=true" if dry_run else "")
        return self.call("POST", _context(name, route), {"source": source})

    def import_stream(self, data: bytes, dry_run: bool = False) -> Reply:
        """``POST /import`` of one batch stream (JSONL bytes, sent as they are)."""
        path = "/import" + ("?dry_run=true" if dry_run else "")
        return self.call("POST", path, data, content_type="application/x-ndjson")

    # -- the transport ---------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | bytes | None = None,
        content_type: str = "application/json",
    ) -> Reply:
        started = time.monotonic()
        status, raw = self._send(method, path, body, content_type=content_type)
        latency_ms = int((time.monotonic() - started) * 1000)
        if status != 200:
            raise self._failure(path, status, raw)
        parsed = _json(raw)
        if not isinstance(parsed, dict) or "result" not in parsed:
            raise RemoteError(
                f"{self.base}{path} answered 200 without a result: {_text(raw)}", 200, None
            )
        return Reply(parsed["result"], latency_ms)

    def _send(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | bytes | None,
        timeout: float | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, bytes]:
        url = self.base + path
        data = body if isinstance(body, bytes) or body is None else _encode(body)
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            raise RemoteError(f"{url} could not be reached: {reason}") from None

    def _failure(self, path: str, status: int, raw: bytes) -> RemoteError:
        parsed = _json(raw)
        code = None
        detail = _text(raw)
        if isinstance(parsed, dict):
            code = parsed.get("code") if isinstance(parsed.get("code"), str) else None
            if isinstance(parsed.get("error"), str):
                detail = parsed["error"]
        body = parsed if isinstance(parsed, dict) else None
        return RemoteError(f"{self.base}{path} answered {status}: {detail}", status, code, body)


def _context(name: str, route: str = "") -> str:
    return f"/contexts/{quote(name, safe='')}" + (f"/{route}" if route else "")


def _encode(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").strip()
