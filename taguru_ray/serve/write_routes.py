"""The write routes of a context, `POST /flush`, and the operations probes.

Each handler parses its body (write_requests.py), makes one store call (the
store's `ContextWrites`), and notes the context dirty for `POST /flush`. A server
started with `--store` and no `--writable` refuses every write 403 before the
body is read, as it refuses `POST /import`. The role a key needs and
every context a request names (rename's ``to`` too) are checked before any of
this (grants.py), so a read key meets 403 even on a context that does not exist.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from taguru_ray.serve import requests, write_requests
from taguru_ray.serve.deadlines import read_body
from taguru_ray.serve.envelope import fail, ok
from taguru_ray.serve.metrics import CONTENT_TYPE
from taguru_ray.serve.state import STARTED, STATE


def add_write_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/live", live)
    router.add_get("/metrics", metrics)
    router.add_post("/flush", flush)
    router.add_put("/contexts/{name}", create)
    router.add_patch("/contexts/{name}", update)
    router.add_delete("/contexts/{name}", delete)
    router.add_post("/contexts/{name}/rename", rename)
    router.add_post("/contexts/{name}/associations", associations)
    router.add_post("/contexts/{name}/sources", store_passages)
    router.add_post("/contexts/{name}/sources/lookup", lookup)
    router.add_post("/contexts/{name}/sources/retract", retract)


async def live(request: web.Request) -> web.Response:
    # Pure liveness, as the reference's: 200 for as long as the process answers.
    return web.Response(text="ok", content_type="text/plain")


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    names = await state.call(state.store.context_names)
    body = state.metrics.render(len(names))
    return web.Response(body=body.encode("utf-8"), headers={"Content-Type": CONTENT_TYPE})


async def flush(request: web.Request) -> web.Response:
    """The contexts written since the last flush, by name. Every write here commits
    before it is answered, so flushing persists nothing more; the names are what a
    Taguru client expects to learn."""
    state = request.app[STATE]
    _writable(request)  # a context-scoped key never reaches here: it names every context
    flushed, state.dirty = sorted(state.dirty), set()
    return ok(flushed, request[STARTED])


async def create(request: web.Request) -> web.Response:
    write_requests.context_name(request.match_info["name"])
    _writable(request)
    raw = await read_body(request, request.app[STATE].config.body_timeout)
    body = requests.json_object(raw, request.headers.get("Content-Type", "")) if raw else {}
    return await _apply(request, "create_context", write_requests.meta(body))


async def update(request: web.Request) -> web.Response:
    _writable(request)
    return await _apply(request, "update_context", write_requests.meta(await _json(request)))


async def delete(request: web.Request) -> web.Response:
    _writable(request)
    return await _apply(request, "delete_context")


async def rename(request: web.Request) -> web.Response:
    _writable(request)
    to = write_requests.rename(await _json(request))
    result = await _apply(request, "rename_context", to)
    request.app[STATE].dirty.add(to)
    return result


async def associations(request: web.Request) -> web.Response:
    _writable(request)
    raw = await read_body(request, request.app[STATE].config.body_timeout)
    ops = write_requests.associations(
        requests.json_value(raw, request.headers.get("Content-Type", ""))
    )
    return await _apply(request, "add_associations", ops)


async def store_passages(request: web.Request) -> web.Response:
    _writable(request)
    return await _apply(request, "store_passages", write_requests.passages(await _json(request)))


async def lookup(request: web.Request) -> web.Response:
    state = request.app[STATE]
    sources = write_requests.lookup(await _json(request))
    result = await state.call(state.store.lookup_passages, request.match_info["name"], sources)
    return ok(result, request[STARTED])


async def retract(request: web.Request) -> web.Response:
    """``POST …/sources/retract`` (``?dry_run=true``: what it would remove, nothing written,
    answered by a read-only server too, as the reference previews it)."""
    dry_run = requests.dry_run(request.query)
    if dry_run:
        state = request.app[STATE]
        source = write_requests.source(await _json(request))
        result = await state.call(
            state.store.retract_source, request.match_info["name"], source, dry_run=True
        )
        return ok(result, request[STARTED])
    _writable(request)
    return await _apply(request, "retract_source", write_requests.source(await _json(request)))


async def _apply(request: web.Request, method: str, *args: Any) -> web.Response:
    state = request.app[STATE]
    name = request.match_info["name"]
    result = await state.call(getattr(state.store, method), name, *args)
    if method == "delete_context" or method == "rename_context":
        state.dirty.discard(name)
    else:
        state.dirty.add(name)
    return ok(result, request[STARTED])


def _writable(request: web.Request) -> None:
    if not request.app[STATE].config.writable:
        raise fail(
            403,
            f"this server is read-only: {request.method} {request.path} writes — start it "
            "with `taguru-ray serve --writable` (or with TAGURU_DATA_DIR and no --store); "
            "nothing was applied",
        )


async def _json(request: web.Request) -> dict[str, Any]:
    raw = await read_body(request, request.app[STATE].config.body_timeout)
    return requests.json_object(raw, request.headers.get("Content-Type", ""))
