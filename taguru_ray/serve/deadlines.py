"""How long a client may take to send a request: a head deadline and a body deadline.

Without them a client that sends half a head, or a body one byte a minute, holds a
connection (and, mid-body, a handler) open forever. Both are said once here, with
why each is what it is; `ServeConfig` carries them so a test can shorten them.

- The head: from the moment a connection opens, or the moment the previous answer on
  a kept-alive connection was sent, the next request head must have arrived within
  `HEADER_READ_SECONDS`, else the connection is closed without an answer (there is no
  request to answer), as hyper's `header_read_timeout` closes the reference's.
  aiohttp's `keepalive_timeout` bounds the heads after the first (data arriving does
  not extend it, so a head dripped byte by byte is cut off too); `HeadDeadline`
  bounds the first, which older aiohttp releases leave unbounded.
- The body: a handler that reads a body must have all of it within
  `BODY_READ_SECONDS`, else it answers 408 `timeout` and the connection closes
  (aiohttp drains the unread rest for at most its lingering time, 10 s, first).
"""

from __future__ import annotations

import asyncio
import logging
import re

from aiohttp import web

from taguru_ray.serve.envelope import fail

# hyper's http1 header_read_timeout default, which the reference server runs with: a
# real client sends its head in one write right after connecting; a stalled head is
# an idle or hostile client.
HEADER_READ_SECONDS = 30.0
# The default body cap (8 MiB) arrives in this time at about 1.1 Mbit/s; a client
# slower than that is stalling, and it holds a handler while it does.
BODY_READ_SECONDS = 60.0

_HEAD_END = re.compile(rb"\n\r?\n")  # a head's end, CRLF or the bare LF lenient parsers take
_log = logging.getLogger(__name__)


async def read_body(request: web.Request, seconds: float) -> bytes:
    """The whole body, or 408 `timeout` when it has not all arrived within `seconds`."""
    try:
        return await asyncio.wait_for(request.read(), seconds)
    except TimeoutError:
        raise fail(
            408,
            f"the request body did not arrive within {seconds:g} s; nothing was applied",
            "timeout",
        ) from None


class HeadDeadline(asyncio.Protocol):
    """One connection's aiohttp protocol, closed if its first request head has not all
    arrived within `seconds` of the connection opening. Every protocol call is passed
    on unchanged; this only watches the bytes for the end of the first head."""

    def __init__(self, inner: asyncio.Protocol, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds
        self._timer: asyncio.TimerHandle | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._tail = b""  # the last bytes seen, so a head end split across reads is found

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._timer = asyncio.get_running_loop().call_later(self._seconds, self._expire)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._timer is not None:
            if _HEAD_END.search(self._tail + data):
                self._stop_timer()
            else:
                self._tail = data[-2:]
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        _log.debug("closed a connection whose request head did not arrive within %g s",
                   self._seconds)  # fmt: skip
        if self._transport is not None:
            self._transport.close()
