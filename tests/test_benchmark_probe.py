"""The provider probe against real loopback HTTP servers: Ollama's /api/show and
/api/tags, an OpenAI-style /v1/models, a closed port, URLs with no host (BENCHMARK.md §5)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from taguru_ray.benchmark.probe import probe

OLLAMA_SHOW = {
    "details": {"quantization_level": "Q4_K_M"},
    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
}
OLLAMA_TAGS = {
    "models": [
        {"name": "llama3:8b", "digest": "d-llama"},
        {"name": "qwen2.5:7b", "digest": "d-qwen"},
    ]
}


def serve(routes: dict[tuple[str, str], tuple[int, Any]]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            if self.headers.get("Authorization") not in (None, "Bearer k"):
                self.send_error(401)  # the key travels as a Bearer header, or not at all
                return
            status, body = routes.get((method, self.path), (404, {"error": "not found"}))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def ollama() -> Iterator[str]:
    yield from serve(
        {("POST", "/api/show"): (200, OLLAMA_SHOW), ("GET", "/api/tags"): (200, OLLAMA_TAGS)}
    )


@pytest.fixture
def openai_500() -> Iterator[str]:
    yield from serve({("GET", "/v1/models"): (500, {"error": "boom"})})


@pytest.fixture
def openai_ok() -> Iterator[str]:
    yield from serve({("GET", "/v1/models"): (200, {"data": [{"id": "m"}]})})


def test_ollama_names_quantization_context_window_and_digest(ollama: str) -> None:
    facts = probe(f"{ollama}/v1/chat/completions", "qwen2.5:7b", "k")
    assert (facts["quantization"], facts["context_window"], facts["digest"]) == (
        "Q4_K_M",
        32768,
        "d-qwen",  # the matching tag among several
    )
    assert facts["provider_probe"] == {
        "attempted": ["POST /api/show", "GET /api/tags"],
        "ok": True,
        "note": None,
    }


def test_an_openai_server_is_probed_by_its_model_list(openai_ok: str, openai_500: str) -> None:
    fine = probe(f"{openai_ok}/v1/chat/completions", "m", None)["provider_probe"]
    assert fine["ok"] is True and fine["attempted"] == ["POST /api/show", "GET /v1/models"]
    failing = probe(f"{openai_500}/v1/chat/completions", "m", None)["provider_probe"]
    assert failing["ok"] is False
    assert "/v1/models answered" in failing["note"] and "500" in failing["note"]


def test_a_closed_port_or_a_url_without_a_host_is_noted_never_raised() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends
    closed = probe(f"http://127.0.0.1:{port}/v1/chat/completions", "m", None)["provider_probe"]
    assert closed["ok"] is False and closed["note"]
    for url in ("not a url", "data:text/plain,hello"):
        facts = probe(url, "m", None)
        assert facts["provider_probe"]["attempted"] == [] and not facts["provider_probe"]["ok"]
        assert facts["digest"] is None
