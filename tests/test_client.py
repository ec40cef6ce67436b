"""The chat client against the real simulator: transport retries, Retry-After, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.gateway.numbering import AttemptNumbers
from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import ChatClient, Route, Usage, open_session
from taguru_ray.simulate.harness import SimulatorProcess

REQUEST = CompletionRequest(
    [
        {"role": "system", "content": "extract"},
        {"role": "user", "content": "Segment 'a.md':\n\n[0] Ray runs on Kubernetes."},
    ]
)


class PoolAdmission:
    def __init__(self, limit: int) -> None:
        self.pool = PermitPool(["unused"], limit)
        self.numbers = AttemptNumbers()

    async def acquire(
        self, tokens: int, want_seq: bool, priority: int = 0
    ) -> tuple[int, int, int | None]:
        lease = await self.pool.acquire("test", tokens, priority)
        return lease.lease_id, lease.endpoint, self.numbers.next() if want_seq else None

    async def release(self, lease_id: int, usage: Usage) -> None:
        await self.pool.release(lease_id, usage)


def complete(
    url: str,
    *,
    timeout: float = 30,
    api_key: str | None = None,
    admission: PoolAdmission | None = None,
) -> Completion:
    async def go() -> Completion:
        async with open_session() as http:
            client = ChatClient(
                http, url, "taguru-sim", api_key=api_key, timeout_secs=timeout, admission=admission
            )
            return await client.complete(REQUEST)

    return asyncio.run(go())


def test_a_clean_answer_carries_text_finish_reason_and_usage(simulator: SimulatorProcess) -> None:
    admission = PoolAdmission(4)
    completion = complete(simulator.chat_url, admission=admission)
    assert completion.outcome == "answer" and completion.finish_reason == "stop"
    assert '"Ray"' in (completion.text or "") and completion.input_tokens
    assert completion.transport_retries == 0
    stats = admission.pool.stats()
    assert stats["in_flight"] == 0 and stats["outcomes"] == {"ok": 1}


def test_429_with_retry_after_is_retried_until_it_clears(simulator: SimulatorProcess) -> None:
    simulator.set_script([{"fault": "429", "times": 2, "retry_after": 0}])
    completion = complete(simulator.base_url, admission=PoolAdmission(4))  # a base URL too
    assert completion.outcome == "answer" and completion.transport_retries == 2
    assert completion.attempt_seq == 1  # numbered once, at its first try
    assert simulator.stats()["by_outcome"] == {"429": 2, "ok": 1}


def test_four_5xx_answers_exhaust_the_budget(simulator: SimulatorProcess) -> None:
    simulator.set_script([{"fault": "503", "times": 4}])
    completion = complete(simulator.chat_url)
    assert completion.outcome == "transport" and completion.status == 503
    assert completion.error is not None and completion.error.endswith("(after 4 tries)")
    assert simulator.stats()["requests"] == 4


def test_other_4xx_fail_at_once(simulator: SimulatorProcess) -> None:
    completion = complete(simulator.root_url + "/nowhere/chat/completions")
    assert completion.outcome == "transport" and completion.status == 404
    assert completion.transport_retries == 0


def test_a_stall_past_the_timeout_is_retried_then_reported(simulator: SimulatorProcess) -> None:
    simulator.set_script([{"fault": "stall", "times": 1, "stall_seconds": 30}])
    completion = complete(simulator.chat_url, timeout=0.5)
    assert completion.outcome == "answer" and completion.transport_retries == 1
    simulator.set_script([{"fault": "stall", "stall_seconds": 30}])
    completion = complete(simulator.chat_url, timeout=0.3)
    assert completion.outcome == "timeout"
    assert completion.error is not None and "TAGURU_EXTRACT_TIMEOUT_SECS" in completion.error


def test_proxies_and_netrc_come_from_the_environment_once_per_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine gpu-1 login user password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "gpu-2")
    proxied = Route.from_environment("http://gpu-1:8000/v1/chat/completions", api_key=False)
    bypassed = Route.from_environment("http://gpu-2:8000/v1/chat/completions", api_key=False)
    keyed = Route.from_environment("http://gpu-1:8000/v1/chat/completions", api_key=True)
    assert str(proxied.proxy) == "http://proxy.internal:3128"
    assert proxied.auth is not None and proxied.auth.login == "user"
    assert bypassed.proxy is None and bypassed.auth is None
    assert keyed.auth is None  # the Bearer key is the credential; netrc is not mixed in


def test_a_request_goes_through_the_proxy_the_environment_names(
    simulator: SimulatorProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The simulator stands in for the proxy: it serves the absolute-form request it is
    # sent, for a model host that does not resolve.
    monkeypatch.setenv("HTTP_PROXY", simulator.root_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    completion = complete("http://model.invalid:8000/v1", admission=PoolAdmission(4))
    assert completion.outcome == "answer", completion.error


def on_loopback(
    respond: Callable[[web.Request], Awaitable[web.StreamResponse]], api_key: str | None = None
) -> Completion:
    """One completion against a real HTTP server on loopback answering with `respond`."""

    async def go() -> Completion:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", respond)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = runner.addresses[0][1]
        try:
            async with open_session() as http:
                url = f"http://127.0.0.1:{port}/v1"
                client = ChatClient(http, url, "m", api_key=api_key, timeout_secs=30)
                return await client.complete(REQUEST)
        finally:
            await runner.cleanup()

    return asyncio.run(go())


def serve_once(body: bytes) -> Completion:
    """A server that answers every request with `body`."""

    async def respond(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, content_type="application/json")

    return on_loopback(respond)


def test_a_body_past_the_cap_is_refused_unread_and_never_retried() -> None:
    huge = b'{"choices":[{"message":{"content":"' + b"x" * (5 * 1024 * 1024) + b'"}}]}'
    completion = serve_once(huge)
    assert completion.outcome == "transport" and completion.transport_retries == 0
    assert completion.error is not None and "more than 4 MiB is read from no endpoint" in (
        completion.error
    )


def test_a_body_nested_too_deeply_is_one_clear_failure() -> None:
    completion = serve_once(b"[" * 200_000 + b"]" * 200_000)
    assert completion.outcome == "transport"
    assert completion.error is not None and "nested too deeply" in completion.error


def echoing_server(status: int) -> tuple[Completion, dict[str, str]]:
    """A server that echoes the request's headers in its answer (as some proxies do)."""
    seen: dict[str, str] = {}

    async def respond(request: web.Request) -> web.Response:
        await request.read()
        seen.update(request.headers)
        echoed = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
        if status != 200:
            return web.Response(status=status, text=f"bad request, headers were {echoed}")
        content = f"I saw {request.headers.get('Authorization', '')} and nothing else"
        body = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
        return web.json_response(body)

    return on_loopback(respond, api_key="sk-test-SECRET-1234"), seen


def test_an_echoed_key_never_leaves_the_client() -> None:
    failed, seen = echoing_server(400)
    assert seen["Authorization"] == "Bearer sk-test-SECRET-1234"  # it was sent...
    assert failed.outcome == "transport" and failed.error is not None
    assert "SECRET" not in failed.error  # ...and never carried on
    assert "Authorization: Bearer «redacted credential»" in failed.error
    answered, _ = echoing_server(200)
    assert answered.text == "I saw Bearer «redacted credential» and nothing else"
