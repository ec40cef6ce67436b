"""One check of a key's grant: every context a request names, wherever it names it.

A key holds a role (read ⊂ write ⊂ admin) on every context or on the contexts it
lists (auth.py reads them). A request names contexts in its path (``{name}``), in
its body (rename's ``to``, an import stream's batches, a cross-context read's
``contexts``), or names them all at once (``POST /flush`` answers with every
context written; a group may hold any context). `NAMED` says, per route, where
its contexts are; a route it does not list names every context, so a route added
later without an entry is refused to a scoped key (fail closed), and
`tests/test_serve_grants.py` holds every route the router serves to having one.
No route takes a context from a header or the query string; one that does gets
its reader here, beside the others.

`decide` is the one function that answers, before a handler runs and so before
anything is read from or written to the store: the role the route needs, then each
named context against the grant — 403 ``forbidden`` naming the first one outside
it, nothing applied. The middleware (app.py) reads the named contexts with
`contexts_named` (the body only for a key whose grant lists contexts and only on
a route that names contexts in it; aiohttp keeps the bytes for the handler) and
calls `decide`. A HEAD is held to what its GET needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from taguru_ray.context.importer import ImportRefusal, stream_contexts
from taguru_ray.serve.auth import Scope, required_role
from taguru_ray.serve.deadlines import read_body
from taguru_ray.serve.envelope import fail


class Every:
    """The contexts a server-wide route names: all of them, so a scoped key has no way in."""

    def __init__(self, why: str) -> None:
        self.why = why


# (the body's bytes) -> the contexts it names; a body a reader cannot read names none
# (its handler refuses it whole before anything applies).
BodyReader = Callable[[bytes], "list[str] | Every"]


@dataclass(frozen=True)
class Naming:
    path: bool = False  # the path's {name} is a context
    body: BodyReader | None = None  # contexts named in the body
    every: str | None = None  # a server-wide route: why it names every context


def _strings(raw: bytes, key: str) -> list[str]:
    """The strings of a JSON object body's `key` (a string, or a list holding strings)."""
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return []
    value = body.get(key) if isinstance(body, dict) else None
    values = value if isinstance(value, list) else [value]
    return [item for item in values if isinstance(item, str)]


def _rename_target(raw: bytes) -> list[str]:
    return _strings(raw, "to")


def _cross_context(raw: bytes) -> list[str] | Every:
    """A cross-context read's `contexts`; a group among its targets may hold any context."""
    if _strings(raw, "groups"):
        return Every(_GROUPS)
    return _strings(raw, "contexts")


def _import_stream(raw: bytes) -> list[str]:
    """The importer's own reading of the stream, so no header shape it accepts escapes."""
    try:
        return stream_contexts(raw)
    except ImportRefusal:
        return []  # the store parses the whole stream before it writes, and refuses it


_PATH = Naming(path=True)
_GROUPS = "a group may hold any context"
_CROSS = Naming(body=_cross_context)
NAMED: Mapping[tuple[str, str], Naming] = {
    ("GET", "/contexts"): Naming(),  # the listing: a scoped key sees its own (routes.py)
    ("POST", "/contexts/{name}/rename"): Naming(path=True, body=_rename_target),
    ("POST", "/import"): Naming(body=_import_stream),
    ("POST", "/flush"): Naming(every="flush is server-wide (it names every context written)"),
    ("POST", "/recall"): _CROSS,
    ("POST", "/query"): _CROSS,
    ("POST", "/sources/search"): _CROSS,
    **{(method, route): Naming(every=_GROUPS)
       for method in ("GET", "PUT", "PATCH", "DELETE", "POST")
       for route in ("/groups", "/groups/{name}", "/groups/{name}/rename",
                     "/groups/{name}/export")},
}  # fmt: skip
# Every other route under a context's path names that context and no other.
_CONTEXT_PREFIX = "/contexts/{name}"


def naming(method: str, route: str) -> Naming:
    """Where (method, route template) names contexts; a HEAD as its GET."""
    method = "GET" if method == "HEAD" else method
    found = NAMED.get((method, route))
    if found is not None:
        return found
    if route == _CONTEXT_PREFIX or route.startswith(_CONTEXT_PREFIX + "/"):
        return _PATH
    return Naming(every="the route is not one whose contexts this server knows")


async def decide(
    request: web.Request, key: str, scope: Scope, route: str, body_timeout: float
) -> None:
    """The one check: `ContextError` 403 unless the key's role covers the route and its
    grant covers every context the request names. Run before the handler: nothing
    applied. A HEAD needs what its GET needs."""
    method = request.method
    needed = required_role("GET" if method == "HEAD" else method, route)
    if scope.role < needed:
        raise fail(
            403,
            f"key '{key}' has role '{scope.role.label}', but {method} {route} needs "
            f"'{needed.label}'; nothing was applied",
        )
    if scope.contexts is None:  # every context is granted: nothing named can be outside
        return
    named = await contexts_named(request, route, body_timeout)
    if isinstance(named, Every):
        raise fail(
            403,
            f"key '{key}' is granted some contexts only, and {method} {route} reaches "
            f"every one ({named.why}); nothing was applied",
        )
    for context in named:
        if not scope.allows(context):
            raise fail(403, f"key '{key}' has no grant on context '{context}'; nothing was applied")


async def contexts_named(
    request: web.Request, route: str, body_timeout: float
) -> list[str] | Every:
    """The contexts the request names, path first, then its body's (read within the body
    deadline; aiohttp keeps the bytes for the handler); `Every` for a server-wide route."""
    found = naming(request.method, route)
    if found.every is not None:
        return Every(found.every)
    named: list[str] = []
    if found.path:
        named.append(request.match_info["name"])
    if found.body is not None:
        in_body = found.body(await read_body(request, body_timeout))
        if isinstance(in_body, Every):
            return in_body
        named += in_body
    return list(dict.fromkeys(named))
