"""One connection's protocol: aiohttp's request handler, answering a head that is not
HTTP in the envelope, wrapped in the first head's deadline (deadlines.py).

aiohttp answers a head it cannot parse (a bad header line, a control character in the
path, an unknown method, a line past its cap) itself, before any middleware: with a
text/plain 400 and an error log line carrying a traceback. On an open port that is
routine traffic, not a server fault, so `EnvelopedHandler` answers it as every other
refusal is answered — the JSON envelope, `malformed_request` — and logs it at debug
level. Any other error aiohttp reports this way is a server fault and keeps aiohttp's
own answer and log line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from taguru_ray.serve.deadlines import HeadDeadline
from taguru_ray.serve.envelope import fail, refusal
from taguru_ray.serve.state import ServeConfig

_log = logging.getLogger(__name__)


class EnvelopedHandler(web.RequestHandler):
    """aiohttp's per-connection request handler; only a malformed head's answer differs."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not isinstance(exc, HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        if request.writer.output_size > 0:  # as aiohttp: an answer is under way already
            raise ConnectionError("an answer was sent already; the connection is broken")
        # aiohttp's message echoes the offending bytes on the lines after the first.
        what = (message or exc.message or "").splitlines()[0].rstrip(":") or "unreadable"
        _log.debug("refused a malformed request head from %s: %s", request.remote, what)
        answer = refusal(fail(status, f"malformed request head: {what}"), time.monotonic())
        answer.force_close()  # the rest of the stream cannot be trusted to frame a request
        return answer


def protocol_factory(manager: web.Server, config: ServeConfig) -> Callable[[], asyncio.Protocol]:
    """What the listener calls per connection: an `EnvelopedHandler` of the app's server
    (`runner.server`), in the first head's deadline. Idle kept-alive connections, and
    the heads after the first, are bounded by aiohttp's keepalive_timeout."""

    def make() -> asyncio.Protocol:
        loop = asyncio.get_running_loop()
        handler = EnvelopedHandler(
            manager, loop=loop, access_log=None, keepalive_timeout=config.header_timeout
        )
        return HeadDeadline(handler, config.header_timeout)

    return make
