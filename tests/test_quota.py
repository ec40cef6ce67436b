"""Provider rate-limit headers: parsed, heeded by admission before a 429, and simulated."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import ChatClient, Unlimited, Usage, open_session
from taguru_ray.llm.quota import Quota, read_quota, reset_seconds
from taguru_ray.llm.retry import parse_retry_after
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.simulate.quota import QuotaWindow
from tests.support import CONTEXT, Cli

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 300.0),  # 360 s, capped at the longest pause
        ("20ms", 0.02),
        ("1m2.5s", 62.5),
        ("2m59.56s", 179.56),
        ("30", 30.0),
        ("0.5", 0.5),
        (str(NOW + 12), 12.0),  # a Unix time
        ("1h", 300.0),
        ("soon", None),
        ("1x", None),
        ("", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_reset_forms(value: str, seconds: float | None) -> None:
    assert reset_seconds(value, NOW) == (pytest.approx(seconds) if seconds is not None else None)


def test_headers_give_a_quota_only_when_they_state_one() -> None:
    assert read_quota({"content-type": "application/json"}, NOW) is None
    assert read_quota(
        {
            "x-ratelimit-remaining-requests": "59",
            "x-ratelimit-reset-requests": "1s",
            "x-ratelimit-remaining-tokens": "149000",
            "x-ratelimit-reset-tokens": "6ms",
        },
        NOW,
    ) == Quota(59, 1.0, 149000, 0.006)
    assert read_quota({"x-ratelimit-remaining-tokens": "-3"}, NOW) == Quota(None, None, 0, None)
    assert read_quota({"x-ratelimit-remaining-requests": "many"}, NOW) is None


def test_retry_after_ms() -> None:
    assert parse_retry_after("1500", millis=True) == 1.5
    assert parse_retry_after("90000", millis=True) == 30.0  # the ceiling
    assert parse_retry_after(None, millis=True) is None
    assert parse_retry_after("-1", millis=True) is None
    assert parse_retry_after("later", millis=True) is None


def _quota(requests: int | None, reset: float, tokens: int | None = None) -> Usage:
    return Usage("ok", 0.1, 10, 10, quota=Quota(requests, reset, tokens, reset))


def test_a_spent_request_window_pauses_the_endpoint_until_it_resets() -> None:
    async def scenario() -> tuple[bool, int]:
        clock = {"now": 100.0}
        p = PermitPool(["http://a"], 8, clock=lambda: clock["now"])
        first = await p.acquire("w", 10)
        await p.release(first.lease_id, _quota(0, 0.3))
        waiting = asyncio.create_task(p.acquire("w", 10))
        await asyncio.sleep(0.05)
        held = not waiting.done()
        clock["now"] += 0.3  # the window resets
        await asyncio.wait_for(waiting, 1)
        return held, p.endpoints[0].issued

    assert asyncio.run(scenario()) == (True, 2)


def test_requests_granted_since_a_report_are_spent_from_it() -> None:
    async def scenario() -> list[bool]:
        clock = {"now": 0.0}
        p = PermitPool(["http://a"], 8, clock=lambda: clock["now"])
        first = await p.acquire("w", 10)
        others = [await p.acquire("w", 10) for _ in range(2)]  # granted after `first`
        await p.release(first.lease_id, _quota(3, 5.0))  # 3 left, 2 of them taken since
        third = await asyncio.wait_for(p.acquire("w", 10), 1)  # the last one
        fourth = asyncio.create_task(p.acquire("w", 10))
        await asyncio.sleep(0.05)
        held = not fourth.done()
        fourth.cancel()
        return [bool(others), third.endpoint == 0, held]

    assert asyncio.run(scenario()) == [True, True, True]


def test_a_token_window_holds_a_request_it_cannot_take() -> None:
    async def scenario() -> bool:
        clock = {"now": 0.0}
        p = PermitPool(["http://a"], 8, clock=lambda: clock["now"])
        first = await p.acquire("w", 100)
        await p.release(first.lease_id, _quota(None, 5.0, tokens=150))
        small = await asyncio.wait_for(p.acquire("w", 100), 1)
        big = asyncio.create_task(p.acquire("w", 100))  # 50 left
        await asyncio.sleep(0.05)
        held = not big.done()
        big.cancel()
        return small.endpoint == 0 and held

    assert asyncio.run(scenario())


def test_a_lapsed_window_is_forgotten_and_other_endpoints_carry_on() -> None:
    async def scenario() -> list[int]:
        clock = {"now": 0.0}
        p = PermitPool(["http://a", "http://b"], 8, clock=lambda: clock["now"])
        first = await p.acquire("w", 10)
        await p.release(first.lease_id, _quota(0, 1.0))
        during = [(await p.acquire("w", 10)).endpoint for _ in range(2)]
        clock["now"] = 1.5
        after = await p.acquire("w", 10)
        return [*during, after.endpoint, p.endpoints[0].quota is None]

    assert asyncio.run(scenario()) == [1, 1, 0, True]


def test_no_permit_is_kept_near_the_end_of_a_quota() -> None:
    async def scenario() -> tuple[int, int]:
        p = PermitPool(["http://a"], 4)
        lease = await p.acquire("w", 10)
        await p.release(lease.lease_id, _quota(100, 30.0))
        plenty = p.keep("w")
        lease = await p.acquire("w", 10)
        await p.release(lease.lease_id, _quota(5, 30.0))  # fewer than 2 limits' worth
        return plenty, p.keep("w")

    assert asyncio.run(scenario()) == (4, 0)


def test_the_simulated_window_counts_requests_and_tokens() -> None:
    window = QuotaWindow(requests=2, tokens=1000, window_seconds=10.0)
    assert window.admit(100, 0.0) and window.admit(100, 1.0)
    assert window.headers(1.0) == {
        "x-ratelimit-limit-requests": "2",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "9s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "800",
        "x-ratelimit-reset-tokens": "9s",
    }
    assert not window.admit(100, 9.9)
    assert window.retry_after(9.9) == pytest.approx(0.1)
    assert window.headers(9.99)["x-ratelimit-reset-requests"] == "10ms"
    assert window.admit(100, 10.0)  # a new window
    tokens = QuotaWindow(tokens=300, window_seconds=60.0)
    assert tokens.admit(200, 0.0) and not tokens.admit(200, 1.0)
    assert (
        QuotaWindow(requests=1, window_seconds=100.0).headers(0.0)["x-ratelimit-reset-requests"]
        == "1m40s"
    )


def test_a_run_against_a_rate_limited_provider_waits_for_its_windows_and_sees_no_429(
    ray_address: str, tmp_path: Path
) -> None:
    """The provider allows 4 requests per 1.5 s window and says so in its headers: the
    run spreads 10 completions over three windows, and no request meets a 429."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(10):
        text = f"# Doc {n}\n\nThe Service {n} writes to Store {n}.\n"
        (corpus / f"doc{n:02d}.md").write_text(text)
    with SimulatorProcess(
        "--rate-limit-requests", "4", "--rate-limit-window", "1.5", "--slots", "4"
    ) as provider:
        cli = Cli(ray_address, provider)
        out = tmp_path / "out"
        result = cli.extract(
            str(corpus), "--out", str(out), "--context", CONTEXT, "--max-inflight", "2"
        )
        stats = provider.stats()
    assert result.returncode == 0, result.stderr
    assert len(list(out.glob("*.jsonl"))) == 10
    assert "rate_limited" not in stats["by_outcome"]
    assert stats["requests"] == 10
    # The simulator answers 429 to any request before its window resets: none came. And
    # ten requests at four a window took three windows (arrivals are stamped a few
    # milliseconds after admission, so the span is checked with that slack).
    starts = [at for at, _ in stats["arrivals"]]
    assert starts[-1] - starts[0] >= 2 * 1.5 - 0.1, stats["arrivals"]


def test_the_client_waits_what_retry_after_ms_says() -> None:
    """A 429 carrying retry-after-ms (and a coarser Retry-After) is retried after the
    milliseconds, and its pause reaches admission control."""
    released: list[Usage] = []

    class Recording(Unlimited):
        async def release(self, lease_id: int, usage: Usage) -> None:
            released.append(usage)

    async def scenario() -> str:
        # A window of seconds (the second request must land inside it on a busy machine), not
        # a whole one: Retry-After says 3 where retry-after-ms says at most 2 500.
        with SimulatorProcess("--rate-limit-requests", "1", "--rate-limit-window", "2.5") as sim:
            async with open_session() as http:
                client = ChatClient(
                    http,
                    sim.chat_url,
                    "taguru-sim",
                    api_key=None,
                    timeout_secs=10,
                    admission=Recording(),
                )
                request = CompletionRequest([{"role": "user", "content": "[1] Ray runs."}])
                first = await client.complete(request)
                second = await client.complete(request)
                return f"{first.outcome} {second.outcome}"

    assert asyncio.run(scenario()) == "answer answer"
    limited = [usage for usage in released if usage.outcome == "http_429"]
    assert limited and all(0 < (usage.retry_after or 0) <= 2.5 for usage in limited)
    assert released[0].quota == Quota(0, pytest.approx(2.5, abs=0.5), None, None)
