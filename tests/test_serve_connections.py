"""Slow, vanishing and malformed clients (issue 37, item 16): a request head and a
request body each have a deadline, a client that hangs up is a debug line, and a head
that is not HTTP is refused in the envelope with a debug line — never an error line
or a traceback.

Each test runs `serve` itself (the function `taguru-ray serve` runs) on loopback with
deadlines of a fraction of a second, and talks raw HTTP/1.1 over asyncio streams so a
head or a body can be left half sent. Waits are generous (60 s) and nothing asserts how
long anything took: a deadline that never fires fails by the wait running out.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from taguru_ray.serve import ServeConfig, serve
from tests.serve_fake import FakeStore

SEARCH = b"/contexts/corpus-c/sources/search"
WAIT = 60.0  # generous: the deadlines under test are well under a second
# The deadline under test is short; every other one is generous, so a prompt step never
# races a deadline on a busy machine.
SHORT_HEAD = ServeConfig(header_timeout=0.3, body_timeout=WAIT)
SHORT_BODY = ServeConfig(header_timeout=WAIT, body_timeout=0.3)

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@asynccontextmanager
async def serving(config: ServeConfig) -> AsyncIterator[Callable[[], Awaitable[Streams]]]:
    """`serve` on a free loopback port; yields a function opening a connection to it."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[int] = loop.create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(
        serve(
            FakeStore(),
            "127.0.0.1",
            0,
            config=config,
            on_ready=lambda _host, port: ready.set_result(port),
            stop=stop,
        )
    )
    await asyncio.wait({ready, task}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
    port = ready.result()

    async def connect() -> Streams:
        return await asyncio.open_connection("127.0.0.1", port)

    try:
        yield connect
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT)


def head(method: str, path: bytes, length: int | None = None) -> bytes:
    lines = [f"{method} ".encode() + path + b" HTTP/1.1", b"Host: test"]
    if length is not None:
        lines += [b"Content-Type: application/json", f"Content-Length: {length}".encode()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def response(reader: asyncio.StreamReader) -> tuple[int, dict[str, Any]]:
    """One response: its status and its JSON body (read by Content-Length)."""
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    status_line, *fields = raw.decode("latin-1").split("\r\n")
    headers = dict(f.split(": ", 1) for f in fields if f)
    length = int(headers["Content-Length"])
    body = await asyncio.wait_for(reader.readexactly(length), WAIT)
    return int(status_line.split()[1]), json.loads(body)


async def rest(reader: asyncio.StreamReader) -> bytes:
    """Everything the server still sends before it closes the connection (a server that
    never closes it fails the test when WAIT runs out)."""
    try:
        return await asyncio.wait_for(reader.read(), WAIT)
    except ConnectionResetError:
        return b""


def test_a_head_that_never_completes_is_closed_at_the_header_deadline() -> None:
    async def scenario() -> bytes:
        async with serving(SHORT_HEAD) as connect:
            reader, writer = await connect()
            writer.write(b"POST /import HTTP/1.1\r\nHost: test\r\n")  # and nothing more
            await writer.drain()
            return await rest(reader)

    assert asyncio.run(scenario()) == b""  # closed, nothing answered


def test_the_next_head_on_a_kept_alive_connection_has_the_same_deadline() -> None:
    async def scenario() -> bytes:
        async with serving(SHORT_HEAD) as connect:
            reader, writer = await connect()
            # A whole request, then the next one's head half sent, in one write.
            writer.write(head("GET", b"/health") + b"GET /health HTTP/1.1\r\nHost:")
            await writer.drain()
            return await rest(reader)

    # Closed after at most the first answer (none, if the machine stalled past the
    # deadline before the first head was read: closing then is right too).
    answered = asyncio.run(scenario())
    assert answered.count(b"HTTP/1.1 ") <= 1
    assert answered == b"" or answered.startswith(b"HTTP/1.1 200")


def test_a_body_that_stops_arriving_is_answered_408_timeout_and_closed() -> None:
    async def scenario() -> tuple[int, dict[str, Any], bool]:
        async with serving(SHORT_BODY) as connect:
            reader, writer = await connect()
            writer.write(head("POST", SEARCH, length=1000) + b'{"query": ')
            await writer.drain()
            status, body = await response(reader)
            return status, body, await rest(reader)

    status, body, after = asyncio.run(scenario())
    assert (status, body["status"], body["code"]) == (408, "error", "timeout")
    assert "did not arrive" in body["error"]
    assert after == b""  # and the connection closed


def test_a_body_sent_with_its_head_is_untouched_by_the_body_deadline() -> None:
    async def scenario() -> list[int]:
        async with serving(SHORT_BODY) as connect:
            reader, writer = await connect()
            statuses = []
            for _ in range(3):  # one kept-alive connection, answered each time
                writer.write(head("POST", SEARCH, length=15) + b'{"query": "q"} ')
                statuses.append((await response(reader))[0])
            return statuses

    assert asyncio.run(scenario()) == [200, 200, 200]


def test_a_client_hanging_up_mid_body_is_a_debug_line_not_an_error(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> None:
        async with serving(ServeConfig()) as connect:
            writers = []
            for _ in range(20):
                _, writer = await connect()
                writer.write(head("POST", SEARCH, length=1000) + b'{"query": ')
                await writer.drain()
                writers.append(writer)
            # A round trip on another connection: by its answer every handler above is
            # waiting for its body.
            reader, writer = await connect()
            writer.write(head("GET", b"/health"))
            await response(reader)
            for hung_up in writers:
                hung_up.transport.abort()
            writer.write(head("GET", b"/health"))  # and by this one, each has seen its end
            await response(reader)

    with caplog.at_level(logging.DEBUG):
        asyncio.run(scenario())
    assert capfd.readouterr().err == ""
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    hung = [r for r in caplog.records if r.name.startswith("taguru_ray.serve")]
    assert len(hung) == 20 and all(r.levelno == logging.DEBUG for r in hung)
    assert all("disconnected" in r.getMessage() for r in hung)


@pytest.mark.parametrize(
    "sent",
    [
        b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n",
        b"GET /\x01 HTTP/1.1\r\nHost: test\r\n\r\n",
        b"FOO / HTTP/1.1\r\nHost: test\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: test\r\n\r\nFOO / HTTP/1.1\r\n\r\n",  # second
        b"GET /health HTTP/1.1\r\nHost: test\r\nX-Long: " + b"x" * 20_000 + b"\r\n\r\n",
    ],
)
def test_a_malformed_head_is_refused_in_the_envelope_and_logged_at_debug_only(
    sent: bytes, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> bytes:
        async with serving(ServeConfig()) as connect:
            reader, writer = await connect()
            writer.write(sent)
            await writer.drain()
            return await rest(reader)

    with caplog.at_level(logging.DEBUG):
        answered = asyncio.run(scenario())
    refusal = answered[answered.rindex(b"HTTP/1."):]  # the last answer on the connection
    head, _, body = refusal.partition(b"\r\n\r\n")
    assert head.split()[1] == b"400" and b"application/json" in head, refusal
    envelope = json.loads(body)
    assert (envelope["status"], envelope["code"]) == ("error", "malformed_request")
    assert envelope["error"].startswith("malformed request head")
    assert capfd.readouterr().err == ""
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
