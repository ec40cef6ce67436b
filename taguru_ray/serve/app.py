"""Taguru's HTTP surface over an embedded context store, on aiohttp.

Each handler parses its request (requests.py), makes one `ContextStore` call
in a thread pool — readers run concurrently, imports one at a time under a
lock — and wraps the answer in the envelope (envelope.py). Two middlewares
frame every request: the outer one turns every refusal into the error
envelope (a `ContextError` verbatim; aiohttp's 404/405/413 into `unknown_path`,
`method_not_allowed`, `payload_too_large`; a client hanging up mid-request into
a debug log line, since nobody is left to answer; anything unexpected into a 500
`internal` and one stderr line, never a traceback), the inner one holds the
request to its bearer key (auth.py) and its grant (grants.py: the role and every
context the request names, before any handler runs). A request head and body each have a
deadline (deadlines.py); a head that is not HTTP is refused in the envelope before
any middleware (connection.py).

Read-only by default: `POST /import` is refused 403 unless the server was
started writable (`--writable`), and even then needs an admin key when keys are
configured. A dry run (`?dry_run=true`) writes nothing, so it is answered on a
read-only server too.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from taguru_ray.context.api import ContextStore
from taguru_ray.context.errors import ContextError
from taguru_ray.serve.auth import EXEMPT_PATHS, presented_token
from taguru_ray.serve.connection import protocol_factory
from taguru_ray.serve.envelope import fail, refusal
from taguru_ray.serve.grants import decide
from taguru_ray.serve.routes import add_routes
from taguru_ray.serve.state import KEY_NAME, SCOPE, STARTED, STATE, ServeConfig, ServerState

SHUTDOWN_GRACE_SECONDS = 1.0
_log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def create_app(store: ContextStore, config: ServeConfig | None = None) -> web.Application:
    config = config or ServeConfig()
    app = web.Application(
        middlewares=[_errors, _auth, _throttle], client_max_size=config.max_body_bytes
    )
    state = ServerState(store, config)
    app[STATE] = state
    add_routes(app.router)

    async def _shutdown(_: web.Application) -> None:
        state.executor.shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(_shutdown)
    return app


async def serve(
    store: ContextStore,
    host: str,
    port: int,
    *,
    config: ServeConfig,
    on_ready: Callable[[str, int], None],
    stop: asyncio.Event,
) -> None:
    """Listen on host:port, call `on_ready(host, bound_port)` once connections are
    accepted, serve until `stop` is set. Raises OSError when the address cannot be bound
    (binding our own socket is how `--port 0` learns its port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    runner = web.AppRunner(create_app(store, config), shutdown_timeout=SHUTDOWN_GRACE_SECONDS)
    await runner.setup()
    assert runner.server is not None  # set by setup()
    listener = None
    try:
        # Our own listener rather than a SockSite: each connection's protocol is ours
        # (connection.py: a malformed head answered in the envelope, the head deadlines).
        listener = await asyncio.get_running_loop().create_server(
            protocol_factory(runner.server, config), sock=sock
        )
        on_ready(host, sock.getsockname()[1])
        await stop.wait()
    finally:
        if listener is not None:
            listener.close()  # no new connections; cleanup closes the open ones
        await runner.cleanup()
        sock.close()


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.monotonic()
    request[STARTED] = started
    response = await _answer(request, handler, started)
    request.app[STATE].metrics.count(request, response.status)
    return response


async def _answer(request: web.Request, handler: Handler, started: float) -> web.StreamResponse:
    try:
        return await handler(request)
    except ContextError as exc:
        return refusal(exc, started)
    except web.HTTPException as exc:
        return refusal(_from_http(exc, request), started)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if isinstance(exc, ConnectionError) and _hung_up(request):
            # Routine (a client gave up, or a slow one was cut off), and nobody is left to
            # read an answer: a debug line, not an error line per disconnect.
            _log.debug("client disconnected during %s %s: %s", request.method, request.path, exc)
            return refusal(fail(400, "the client disconnected mid-request"), started)
        print(
            f"taguru-ray serve: internal error answering {request.method} {request.path}: "
            f"{type(exc).__name__}: {exc}",
            file=sys.stderr,
            flush=True,
        )
        return refusal(fail(500, f"internal error ({type(exc).__name__})", "internal"), started)


def _hung_up(request: web.Request) -> bool:
    """Whether the request's own connection is gone (a ConnectionError from elsewhere, an
    embedding provider refusing a connection, is an internal error, not a hang-up)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def _from_http(exc: web.HTTPException, request: web.Request) -> ContextError:
    if exc.status == 404:
        return fail(404, f"no route for {request.method} {request.path}", "unknown_path")
    if exc.status == 405:
        return fail(405, f"{request.method} is not supported on {request.path}")
    if exc.status == 413:
        limit = request.app[STATE].config.max_body_bytes
        return fail(
            413,
            f"the request body is past the limit of {limit} bytes (TAGURU_MAX_BODY_BYTES)",
        )
    return fail(exc.status, exc.reason)


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    keyring = request.app[STATE].config.keyring
    if keyring.disabled or request.path in EXEMPT_PATHS:
        return await handler(request)
    token = presented_token(request.headers.getall("Authorization", []))
    name = None if token is None else keyring.authenticate(token)
    if name is None:
        raise fail(401, "missing or invalid bearer token (send Authorization: Bearer <token>)")
    scope = keyring.scope_of(name)
    resource = request.match_info.route.resource
    if resource is not None:  # an unmatched path answers 404/405 below, not 403
        # The one check of the grant: the route's role, every context it names (grants.py).
        await decide(
            request, name, scope, resource.canonical, request.app[STATE].config.body_timeout
        )
    request[SCOPE] = scope
    request[KEY_NAME] = name
    return await handler(request)


@web.middleware
async def _throttle(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Inside auth, as in the reference: a key spends its own budget (a wrong token
    costs nothing); without auth the caller's address is the key."""
    limiter = request.app[STATE].limiter
    if limiter.disabled or request.path in EXEMPT_PATHS:
        return await handler(request)
    key = request.get(KEY_NAME) or f"peer:{request.remote}"
    wait = limiter.admit(key)
    if wait is None:
        return await handler(request)
    raise ContextError(
        429,
        "rate_limited",
        f"key '{key}' is over its request budget ({limiter.per_minute} per minute) — "
        f"retry in {wait}s",
        {"retry_after": wait},
    )
