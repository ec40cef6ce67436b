"""A wrong --address fails within a bounded time with one line, never a hang.

ray.init() retries an address for many minutes when something other than a Ray head
answers there (a web server, the dashboard's port, a silent listener); the driver greets
the port first and names the fix. A closed port is tests/test_ray_start.py's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from taguru_ray.engine import driver
from taguru_ray.errors import StartupError
from tests.support import CONTEXT, REPO


@pytest.fixture
def web_server() -> Iterator[int]:
    """An HTTP/1.1 server on a loopback port: something answers, but not a Ray head."""

    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_a_web_server_at_the_address_is_one_line_and_no_hang(
    web_server: int, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Ray runs on Kubernetes.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "RAY_"))}
    env.update(TAGURU_EXTRACT_URL="http://127.0.0.1:9/v1", TAGURU_EXTRACT_MODEL="m")
    env["PYTHONPATH"] = str(REPO)
    address = f"127.0.0.1:{web_server}"
    command = [sys.executable, "-m", "taguru_ray", "extract", "--address", address]
    result = subprocess.run(
        [*command, "--context", CONTEXT, "--out", str(tmp_path / "out"), str(docs)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,  # ray.init() alone would retry this address for over ten minutes
    )
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"taguru: extract: --address {address}: something answers there, ")
    assert "not a Ray head" in line and "6379" in line
    assert not list((tmp_path / "out").glob("*.jsonl"))


def test_a_listener_that_never_answers_is_refused_after_the_bound(
    silent_listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "JOIN_TIMEOUT_S", 0.5)
    with pytest.raises(StartupError, match="something answers there, but not a Ray head"):
        driver._reachable(f"127.0.0.1:{silent_listener}")


def test_the_dashboards_http_address_is_named_as_such() -> None:
    with pytest.raises(StartupError) as refused:
        driver._reachable("http://127.0.0.1:8265")
    message = str(refused.value)
    assert "expected HOST:PORT (or ray://HOST:PORT)" in message
    assert "dashboard's, for `ray job submit`" in message and "\n" not in message


def test_a_closed_port_says_refused_without_a_timeout_it_never_waited() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(StartupError) as refused:
        driver._reachable(f"127.0.0.1:{port}")
    assert "no Ray head answers there (Connection refused)" in str(refused.value)


@pytest.mark.ray
def test_a_real_ray_head_passes_the_greeting(ray_address: str) -> None:
    host, port = ray_address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as connection:
        assert driver._answers_http2(connection)  # the session's GCS speaks gRPC
    assert driver._reachable(ray_address) is None


def test_with_ray_tls_the_greeting_is_skipped(
    web_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A TLS port would take the plaintext greeting for garbage: only the connect is checked.
    monkeypatch.delenv("RAY_USE_TLS", raising=False)
    with pytest.raises(StartupError, match="not a Ray head"):
        driver._reachable(f"127.0.0.1:{web_server}")
    monkeypatch.setenv("RAY_USE_TLS", "1")
    assert driver._reachable(f"127.0.0.1:{web_server}") is None
