"""The progress line says what pauses the run and for how long: a 429's Retry-After, a
provider's rate-limit window, a rested endpoint, --rpm/--tpm. Literals and a fake clock."""

from __future__ import annotations

import asyncio
import io

from taguru_ray.engine.progress import Progress
from taguru_ray.gateway.paused import RATE, RETRY_AFTER, WINDOW, Hold, Paused, paused, words
from taguru_ray.gateway.pool import PermitPool
from taguru_ray.llm.client import Usage
from taguru_ray.llm.quota import Quota


def test_nothing_paused_says_nothing() -> None:
    assert paused([Hold(0.0, 0.0, RETRY_AFTER)], 10.0) is None
    assert paused([], 10.0, Hold(9.0, 5.0, RATE)) is None  # the rate window has opened
    assert words(None) is None and words({"why": "mystery"}) is None


def test_the_pause_that_ends_last_is_named_with_the_endpoints_it_holds() -> None:
    holds = [Hold(22.0, 10.0, RETRY_AFTER), Hold(15.0, 12.0, WINDOW), Hold(0.0, 0.0, WINDOW)]
    assert paused(holds, 14.0) == Paused(RETRY_AFTER, 12.0, 8.0, 2, 3)


def test_the_run_s_own_rate_window_holds_every_endpoint() -> None:
    found = paused([Hold(12.0, 10.0, RETRY_AFTER)], 11.0, Hold(40.0, 11.0, RATE))
    assert found == Paused(RATE, 29.0, 29.0, 0, 1)
    assert words(found.record()) == "paused by --rpm/--tpm's sliding minute, resumes in 29s"


def test_the_words_say_why_how_long_and_when_it_resumes() -> None:
    every = Paused(RETRY_AFTER, 12.0, 7.2, 1, 1).record()
    assert words(every) == "paused by a 429 (Retry-After 12s), resumes in 8s"
    some = Paused(WINDOW, 60.0, 75.0, 1, 2).record()
    assert (
        words(some)
        == "1 of 2 endpoints paused by the provider's rate-limit window, resumes in 1m15s"
    )
    assert words(Paused("rest", 15.0, 0.2, 1, 1).record()) == (
        "paused by failures (endpoint rested 15s), resumes in 1s"
    )


def test_the_progress_line_carries_the_pause() -> None:
    progress = Progress("lines", 4, io.StringIO(), clock=lambda: 0.0)
    stats = {"paused": Paused(RETRY_AFTER, 12.0, 8.0, 1, 1).record()}
    line = progress.status(1, 1, 0, 0, stats, "3 in flight (peak 4, limit 8) · bound: endpoint")
    assert "bound: endpoint · paused by a 429 (Retry-After 12s), resumes in 8s · 0 tok" in line
    assert "paused" not in progress.status(1, 1, 0, 0, {"paused": None})


def test_the_pool_reports_a_429_pause_then_its_end() -> None:
    async def scenario() -> list[object]:
        clock = {"now": 100.0}
        p = PermitPool(["http://a"], 4, clock=lambda: clock["now"])
        lease = await p.acquire("w", 10)
        await p.release(lease.lease_id, Usage("http_429", 0.01, retry_after=12))
        seen: list[object] = [p.stats()["paused"]]
        clock["now"] += 4
        seen.append(p.stats()["paused"])
        clock["now"] += 8
        seen.append(p.stats()["paused"])
        return seen

    first, later, after = asyncio.run(scenario())
    assert first == {"why": "429", "length_s": 12.0, "left_s": 12.0, "endpoints": 1, "of": 1}
    assert later == {**first, "left_s": 8.0}
    assert after is None


def test_the_pool_reports_a_spent_provider_window() -> None:
    async def scenario() -> object:
        clock = {"now": 0.0}
        p = PermitPool(["http://a"], 4, clock=lambda: clock["now"])
        lease = await p.acquire("w", 10)
        await p.release(lease.lease_id, Usage("ok", 0.1, 5, 5, quota=Quota(0, 6.0, None, None)))
        waiting = asyncio.create_task(p.acquire("w", 10))  # finds the window spent
        await asyncio.sleep(0.01)
        clock["now"] = 2.0
        found = p.stats()["paused"]
        waiting.cancel()
        return found

    assert asyncio.run(scenario()) == {
        "why": "window",
        "length_s": 6.0,
        "left_s": 4.0,
        "endpoints": 1,
        "of": 1,
    }


def test_the_pool_reports_its_rpm_window_while_requests_wait_on_it() -> None:
    async def scenario() -> tuple[object, object]:
        clock = {"now": 0.0}
        p = PermitPool(["http://a"], 4, rpm=1, clock=lambda: clock["now"])
        await p.acquire("w", 10)
        clock["now"] = 20.0
        waiting = asyncio.create_task(p.acquire("w", 10))
        await asyncio.sleep(0.01)
        held = p.stats()["paused"]
        waiting.cancel()
        await asyncio.sleep(0.01)
        return held, p.stats()["paused"]

    held, gone = asyncio.run(scenario())
    assert held == {"why": "rate", "length_s": 40.0, "left_s": 40.0, "endpoints": 0, "of": 1}
    assert gone is None  # no one waits on it any more
