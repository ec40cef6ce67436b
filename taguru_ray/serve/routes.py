"""One handler per route: parse the request, make one store call, wrap its answer.

Handlers raise `ContextError` for a refusal; the error middleware (app.py)
answers it. `POST /import` is refused on a read-only server (a dry run writes
nothing and is answered); a context-scoped key may import only streams whose
every batch (in any header shape the importer reads) names one of its contexts,
which the grant check (grants.py) holds it to before the handler runs.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from taguru_ray import __version__
from taguru_ray.context.errors import Namespace
from taguru_ray.serve import requests
from taguru_ray.serve.deadlines import read_body
from taguru_ray.serve.envelope import bare, fail, ok
from taguru_ray.serve.evidence_request import evidence as evidence_request
from taguru_ray.serve.state import SCOPE, STARTED, STATE
from taguru_ray.serve.unsupported import add_unsupported_routes
from taguru_ray.serve.write_routes import add_write_routes


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/health", health)
    router.add_get("/version", version)
    router.add_get("/contexts", list_contexts)
    router.add_get("/contexts/{name}", get_context)
    router.add_get("/contexts/{name}/embeddings", embeddings)
    router.add_get("/contexts/{name}/sources", sources)
    router.add_post("/contexts/{name}/sources/search", search)
    router.add_post("/contexts/{name}/resolve", resolve_concept)
    router.add_post("/contexts/{name}/resolve_label", resolve_label)
    router.add_post("/contexts/{name}/query", query)
    router.add_post("/contexts/{name}/citations", citations)
    router.add_post("/contexts/{name}/evidence", evidence)
    router.add_post("/import", import_stream)
    add_write_routes(router)
    add_unsupported_routes(router)


async def health(request: web.Request) -> web.Response:
    return bare({"status": "ok", "version": __version__})


async def version(request: web.Request) -> web.Response:
    # The reference's keys; only what this server speaks is listed as supported.
    return bare(
        {
            "batch_formats": [1],
            "communities_formats": [],
            "http_contract": {"current": 1, "supported": [1]},
            "image_formats": [],
            "mcp_contract": {"current": 0, "supported": []},
            "mcp_protocol": {"supported": []},
            "schema_formats": [1],
            "server": __version__,
        }
    )


async def list_contexts(request: web.Request) -> web.Response:
    state = request.app[STATE]
    page = requests.page(request.query)
    found = await state.call(state.store.contexts)
    entries = list(found["contexts"])
    total = found.get("total", len(entries))
    scope = request.get(SCOPE)
    if scope is not None and scope.contexts is not None:  # a scoped key sees its own only
        entries = [entry for entry in entries if scope.allows(entry["name"])]
        total = len(entries)
    if page.after is not None:
        entries = [entry for entry in entries if entry["name"] > page.after]
    return ok({**found, "contexts": entries[: page.limit], "total": total}, request[STARTED])


async def get_context(request: web.Request) -> web.Response:
    state = request.app[STATE]
    result = await state.call(state.store.context, request.match_info["name"])
    return ok(result, request[STARTED])


async def embeddings(request: web.Request) -> web.Response:
    state = request.app[STATE]
    result = await state.call(state.store.embeddings, request.match_info["name"])
    return ok(result, request[STARTED])


async def sources(request: web.Request) -> web.Response:
    state = request.app[STATE]
    page = requests.page(request.query)
    result = await state.call(
        state.store.sources,
        request.match_info["name"],
        limit=page.limit,
        after=page.after,
        prefix=page.prefix,
    )
    return ok(result, request[STARTED])


async def search(request: web.Request) -> web.Response:
    state = request.app[STATE]
    wanted = requests.search(await _json(request))
    result = await state.call(
        state.store.search,
        request.match_info["name"],
        wanted.query,
        limit=wanted.limit,
        semantic_floor=wanted.semantic_floor,
        tags=wanted.tags,
        since=wanted.since,
        until=wanted.until,
    )
    return ok(result, request[STARTED])


async def resolve_concept(request: web.Request) -> web.Response:
    return await _resolve(request, "concept")


async def resolve_label(request: web.Request) -> web.Response:
    return await _resolve(request, "label")


async def _resolve(request: web.Request, namespace: Namespace) -> web.Response:
    state = request.app[STATE]
    wanted = requests.resolve(await _json(request))
    result = await state.call(
        state.store.resolve,
        request.match_info["name"],
        wanted.cue,
        namespace=namespace,
        limit=wanted.limit,
        dice_floor=wanted.dice_floor,
        semantic_floor=wanted.semantic_floor,
    )
    return ok(result, request[STARTED])


async def query(request: web.Request) -> web.Response:
    state = request.app[STATE]
    wanted = requests.query(await _json(request))
    result = await state.call(
        state.store.query,
        request.match_info["name"],
        subject=wanted.subject,
        label=wanted.label,
        object=wanted.object,
        limit=wanted.limit,
        since=wanted.since,
        until=wanted.until,
    )
    return ok(result, request[STARTED])


async def citations(request: web.Request) -> web.Response:
    state = request.app[STATE]
    wanted = requests.citation(await _json(request))
    result = await state.call(
        state.store.citation, request.match_info["name"], wanted.source, wanted.paragraph
    )
    return ok(result, request[STARTED])


async def evidence(request: web.Request) -> web.Response:
    state = request.app[STATE]
    wanted = evidence_request(await _json(request))
    result = await state.call(state.store.evidence, request.match_info["name"], wanted)
    return ok(result, request[STARTED])


async def import_stream(request: web.Request) -> web.Response:
    state = request.app[STATE]
    dry_run = requests.dry_run(request.query)
    if not state.config.writable and not dry_run:
        raise fail(
            403,
            "this server is read-only: start it with `taguru-ray serve --writable` to accept "
            "POST /import (or import with `taguru-ray import --store`); nothing was applied",
        )
    data = await read_body(request, state.config.body_timeout)  # held to the grant (grants.py)
    async with state.import_lock:
        result = await state.call(state.store.import_stream, data, dry_run=dry_run)
    return ok(result, request[STARTED])


async def _json(request: web.Request) -> dict[str, Any]:
    raw = await read_body(request, request.app[STATE].config.body_timeout)
    return requests.json_object(raw, request.headers.get("Content-Type", ""))
