"""The provider probe (BENCHMARK.md §1.5): what an endpoint says about its model.

Never fatal, ten seconds at most per request, once per fresh results
directory. Ollama's `/api/show` and `/api/tags` give the quantization, the
context window and the digest; an OpenAI-style `/v1/models` only confirms the
server answers. The key, when one is configured, travels as a Bearer header
and is never written.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

PROBE_TIMEOUT_SECONDS = 10.0
OPENAI_NOTE = "an OpenAI-style /v1/models list names no digest, quantization or context window"


def _origin(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _request(
    method: str, url: str, key: str | None, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_SECONDS) as response:
            raw = response.read(4 * 1024 * 1024)
            status = response.status
    except urllib.error.HTTPError as error:
        return error.code, None
    try:
        return status, json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return status, None


def probe(url: str, model: str, key: str | None) -> dict[str, Any]:
    """`{digest, quantization, context_window, provider_probe: {attempted, ok, note}}`."""
    facts: dict[str, Any] = {"digest": None, "quantization": None, "context_window": None}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        return {**facts, "provider_probe": _outcome([], False, "url is unparseable")}
    if not parts.scheme:
        return {**facts, "provider_probe": _outcome([], False, "url is unparseable")}
    origin = _origin(url)
    if origin is None:
        return {**facts, "provider_probe": _outcome([], False, "url has no host")}
    attempted = ["POST /api/show"]
    try:
        status, shown = _request("POST", f"{origin}/api/show", key, {"model": model})
        if status == 200 and isinstance(shown, dict):
            details = shown.get("details") if isinstance(shown.get("details"), dict) else {}
            facts["quantization"] = details.get("quantization_level")
            info = shown.get("model_info") if isinstance(shown.get("model_info"), dict) else {}
            facts["context_window"] = next(
                (v for k, v in info.items() if k.endswith("context_length") and _whole(v)), None
            )
            attempted.append("GET /api/tags")
            status, tags = _request("GET", f"{origin}/api/tags", key)
            listed = tags.get("models") if isinstance(tags, dict) else None
            for entry in listed if isinstance(listed, list) else []:
                if isinstance(entry, dict) and entry.get("name") == model:
                    facts["digest"] = entry.get("digest")
                    break
            return {**facts, "provider_probe": _outcome(attempted, True, None)}
        attempted.append("GET /v1/models")
        status, _ = _request("GET", f"{origin}/v1/models", key)
    except (OSError, ValueError) as error:  # refused, reset, a timeout, a bad host
        if len(attempted) == 1:
            attempted.append("GET /v1/models")
        reason = getattr(error, "reason", None) or error
        return {**facts, "provider_probe": _outcome(attempted, False, str(reason) or "failed")}
    if status == 200:
        return {**facts, "provider_probe": _outcome(attempted, True, OPENAI_NOTE)}
    note = f"{origin}/v1/models answered {status}"
    return {**facts, "provider_probe": _outcome(attempted, False, note)}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _outcome(attempted: list[str], ok: bool, note: str | None) -> dict[str, Any]:
    return {"attempted": attempted, "ok": ok, "note": note}
