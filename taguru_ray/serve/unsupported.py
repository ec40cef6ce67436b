"""Taguru routes this server knows and does not serve: 501 with a code and a line.

A Taguru client calling the graph engine's reads (recall, explore, paths,
communities, …) against `taguru-ray serve` must learn that this server lacks
them — not that the path is wrong (a bare 404 reads as a typo or a missing
context). Each answers 501 `not_implemented` naming the route and what to use
instead; `embeddings/refresh` answers the reference's own 501
`embeddings_unconfigured` when no provider is set. The README's route table
lists the same routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from taguru_ray.serve.envelope import fail

GRAPH = "the embedded store has no graph engine"
GROUPS = "the embedded store has no groups"
AUDITS = "the embedded store runs no audits or maintenance"
# (method, route, why) — why this server does not answer it.
UNSUPPORTED: tuple[tuple[str, str, str], ...] = (
    ("POST", "/contexts/{name}/recall", GRAPH),
    ("POST", "/contexts/{name}/explore", GRAPH),
    ("POST", "/contexts/{name}/paths", GRAPH),
    ("POST", "/contexts/{name}/activate", GRAPH + " route (evidence runs activation inside)"),
    ("POST", "/contexts/{name}/describe", GRAPH),
    ("POST", "/contexts/{name}/unreachable_from", GRAPH),
    ("GET", "/contexts/{name}/communities", GRAPH + " (no communities artifacts)"),
    ("POST", "/contexts/{name}/communities/search", GRAPH + " (no communities artifacts)"),
    ("GET", "/contexts/{name}/labels", GRAPH + " listing"),
    ("GET", "/contexts/{name}/changes", "the embedded store keeps no change feed"),
    ("GET", "/contexts/{name}/aliases", "aliases are written by import only"),
    ("POST", "/contexts/{name}/aliases", "aliases are written by import only"),
    ("DELETE", "/contexts/{name}/aliases", "aliases are written by import only"),
    ("POST", "/contexts/{name}/associations/retract", "retract a whole source instead"),
    ("GET", "/contexts/{name}/export", "export reads a Taguru server's images"),
    ("POST", "/contexts/{name}/sources/search/explain", "search explanations are not kept"),
    ("POST", "/contexts/{name}/vocabulary/audit", AUDITS),
    ("POST", "/contexts/{name}/drift/audit", AUDITS),
    ("POST", "/contexts/{name}/compact", AUDITS),
    ("POST", "/contexts/{name}/promote", AUDITS),
    ("POST", "/recall", GRAPH),
    ("POST", "/query", "cross-context reads need groups; " + GROUPS),
    ("POST", "/sources/search", "cross-context reads need groups; " + GROUPS),
    ("GET", "/groups", GROUPS),
    ("GET", "/groups/{name}", GROUPS),
    ("PUT", "/groups/{name}", GROUPS),
    ("PATCH", "/groups/{name}", GROUPS),
    ("DELETE", "/groups/{name}", GROUPS),
)


def add_unsupported_routes(router: web.UrlDispatcher) -> None:
    for method, route, why in UNSUPPORTED:
        router.add_route(method, route, _answer(method, route, why))
    router.add_post("/contexts/{name}/embeddings/refresh", _embeddings_refresh)


def _answer(
    method: str, route: str, why: str
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.Response:
        raise fail(
            501,
            f"taguru-ray serve does not implement {method} {route}: {why} — "
            "send it to a Taguru server",
            "not_implemented",
        )

    return handler


async def _embeddings_refresh(request: web.Request) -> web.Response:
    raise fail(
        501,
        "no embedding provider is configured (set TAGURU_EMBED_URL and TAGURU_EMBED_MODEL; "
        "`taguru-ray import` embeds what it writes)",
        "embeddings_unconfigured",
    )
