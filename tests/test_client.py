"""The chat client against the real simulator: transport retries, Retry-After, timeouts."""

from __future__ import annotations

import asyncio

from taguru_ray.llm.admission import PermitPool
from taguru_ray.llm.client import ChatClient, Completion, CompletionRequest, Usage, open_session
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

    async def acquire(self, tokens: int, want_seq: bool) -> tuple[int, int, int | None]:
        lease = await self.pool.acquire("test", tokens)
        return lease.lease_id, lease.endpoint, self.pool.next_attempt_seq() if want_seq else None

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
