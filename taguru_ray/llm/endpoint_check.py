"""What an endpoint's answers say about the run's settings: one line naming the fix.

Pure. The preflight (`llm/preflight.py`) hands in what ``GET …/models`` brought
back — a status and a body, or why no answer came — and gets the line that
stops the run, or None. The gateway hands in a refusal that keeps repeating
during a run (`gateway/fail_fast.py`) and gets its line (ADR 0037).

A line names the setting to change by the flag or variable the settings table
declares (`Blame`), and shows an endpoint only as ``scheme://host[:port]``
(`mask_url`): never its userinfo, path or query, where a key may sit. Only what
surely stops every request is a verdict — a refused key (401/403), a URL with
no API behind it (404), a model the endpoint does not list, no connection at
all; a 429, a 5xx or a body of another shape is left to the run, which retries.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from taguru_ray.contract.settings.groups import Transport
from taguru_ray.contract.settings.knob import knobs_of
from taguru_ray.remote.address import mask_url

SHOWN_MODELS = 5  # listed models a line names before "and N more"
EXAMPLE_BASE = "http://HOST:PORT/v1"

# Why no answer came (`Reply.failure`).
REFUSED = "refused"
UNRESOLVED = "dns"
TIMED_OUT = "timeout"
TLS = "tls"
PROXY = "proxy"
FAILED = "failed"


@dataclass(frozen=True)
class Blame:
    """The settings a verdict points at, by the flag or variable the user set them with,
    and what the run asks for."""

    endpoint: str  # --endpoint, or TAGURU_EXTRACT_URL when the run's one endpoint came from it
    key: str  # TAGURU_EXTRACT_API_KEY
    model: str  # TAGURU_EXTRACT_MODEL
    model_name: str  # the model the run asks for
    key_set: bool  # whether requests carry a key

    @classmethod
    def of(cls, transport: Transport) -> Blame:
        named = {d.name: d.knob.flag or d.knob.env or d.name for d in knobs_of(Transport)}
        from_url = transport.url is not None and transport.endpoints == (transport.url,)
        return cls(
            endpoint=named["url"] if from_url else named["endpoints"],
            key=named["api_key"],
            model=named["model"],
            model_name=transport.model,
            key_set=bool(transport.api_key),
        )


@dataclass(frozen=True)
class Reply:
    """What ``GET …/models`` brought back: a status and body, or why nothing came."""

    status: int | None = None
    body: bytes = b""
    failure: str | None = None  # REFUSED, UNRESOLVED, TIMED_OUT, TLS, PROXY or FAILED
    detail: str = ""  # the OS's or the library's words for a failure, never a URL


def verdict(
    url: str, reply: Reply, blame: Blame, *, judge_listing: bool = True, timeout: float = 10.0
) -> str | None:
    """The line that stops the run before its first request, or None when the endpoint
    at `url` may serve it. `judge_listing`: whether a 404 or the model list can speak
    for this URL (not for an Azure deployment URL, whose models live elsewhere)."""
    host = mask_url(url)
    if reply.failure is not None:
        return _unreachable(host, reply, blame, timeout)
    if reply.status in (401, 403):
        return refused_key(host, reply.status, blame, "on GET /models")
    if reply.status == 404 and judge_listing:
        hint = "" if "/v1" in urlsplit(url).path else "; its path has no /v1"
        return (
            f"{host}: no OpenAI-compatible API at this URL (HTTP 404 on GET /models{hint}) — "
            f"fix {blame.endpoint}: it names the API's base URL, e.g. {EXAMPLE_BASE}"
        )
    if reply.status == 200 and judge_listing:
        listed = listed_models(reply.body)
        if listed and not serves(blame.model_name, listed):
            return (
                f"{host} does not serve the model {blame.model_name!r} — set {blame.model} to "
                f"one it lists: {_some(listed)}"
            )
    return None


def refused_key(host: str, status: int, blame: Blame, when: str) -> str:
    """A 401 or 403: the key (or its absence) is what to fix."""
    if not blame.key_set:
        return (
            f"{host}: the endpoint wants an API key (HTTP {status} {when}) and none is set — "
            f"export {blame.key}"
        )
    if status == 401:
        return (
            f"{host}: the API key was refused (HTTP 401 {when}) — set {blame.key} to a key "
            "this endpoint accepts"
        )
    return (
        f"{host}: the API key is not allowed here (HTTP 403 {when}) — set {blame.key} to a "
        "key with access to this endpoint and model"
    )


def repeated_line(url: str, status: int, count: int, blame: Blame) -> str:
    """The fail-fast line: `count` requests in a row to `url` answered `status` (401,
    403 or 404) and none succeeded since."""
    host = mask_url(url)
    said = f"{count} requests in a row, none succeeded since"
    tail = "; rerun to resume — chunk checkpoints are kept"
    if status in (401, 403):
        return refused_key(host, status, blame, f"on {said}") + tail
    return (
        f"{host}: the model {blame.model_name!r} or the URL is not known there (HTTP {status} "
        f"on {said}) — check {blame.model} and {blame.endpoint}{tail}"
    )


def listed_models(body: bytes) -> list[str]:
    """The ids of an OpenAI-style model list (``{"data": [{"id": …}, …]}``); empty when
    the body is of another shape, which then says nothing about the model."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return []
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return []
    return [e["id"] for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)]


def serves(model: str, listed: Sequence[str]) -> bool:
    """Whether `model` is among `listed`: by name; an untagged name as its ``:latest``
    (Ollama lists ``qwen3:latest`` for ``qwen3``); a listed name with ``*`` as a pattern
    (a proxy's wildcard route, the simulator's "any name")."""
    wanted = {model, _latest(model)}
    return any(
        name in wanted
        or _latest(name) in wanted
        or ("*" in name and fnmatch.fnmatchcase(model, name))
        for name in listed
    )


def _latest(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _some(listed: Sequence[str]) -> str:
    shown = ", ".join(name[:80] for name in listed[:SHOWN_MODELS])
    more = len(listed) - SHOWN_MODELS
    return shown + (f" and {more} more" if more > 0 else "")


def _unreachable(host: str, reply: Reply, blame: Blame, timeout: float) -> str:
    detail = f" ({reply.detail})" if reply.detail else ""
    fix = f"start the server, or fix {blame.endpoint}"
    if reply.failure == REFUSED:
        return f"{host}: connection refused — {fix}"
    if reply.failure == UNRESOLVED:
        return f"{host}: the host name does not resolve{detail} — fix {blame.endpoint}"
    if reply.failure == TIMED_OUT:
        return f"{host}: no answer within {timeout:g} s — {fix} (or a firewall drops the traffic)"
    if reply.failure == TLS:
        return (
            f"{host}: the TLS handshake failed{detail} — check http:// against https:// in "
            f"{blame.endpoint}, and the server's certificate"
        )
    if reply.failure == PROXY:
        return (
            f"{host}: the proxy HTTPS_PROXY / HTTP_PROXY names could not be reached{detail} — "
            "fix the proxy, or list the host in NO_PROXY"
        )
    return f"{host}: the connection failed{detail} — {fix}"
