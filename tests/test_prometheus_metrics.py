"""What the Prometheus metrics count, without Ray: a retried try's cause, and the segments
the driver reports (the exported names themselves are checked by a run in
tests/test_grafana_dashboard.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from taguru_ray.engine import run_metrics
from taguru_ray.engine.run_metrics import SegmentMeter
from taguru_ray.engine.scan import Tally
from taguru_ray.llm import metrics
from taguru_ray.llm.client import Usage
from taguru_ray.llm.retry import (
    TRANSPORT_TRIES,
    CompletionTimeout,
    RetryableStatus,
    retry_cause,
    transport_retrying,
)


def test_a_retry_cause_names_the_status_a_timeout_or_the_transport() -> None:
    assert retry_cause(RetryableStatus(429, "", 0.0)) == "http_429"
    assert retry_cause(RetryableStatus(503, "", None)) == "http_503"
    assert retry_cause(CompletionTimeout()) == "timeout"
    assert retry_cause(aiohttp.ClientConnectionError()) == "transport"


def test_each_try_tried_again_is_heard_once_with_its_cause_and_the_last_is_not() -> None:
    heard: list[str] = []

    async def attempt() -> None:
        async for trying in transport_retrying(on_retry=heard.append):
            with trying:
                raise RetryableStatus(429, "", 0.0)  # Retry-After 0: no wait between tries

    with pytest.raises(RetryableStatus):
        asyncio.run(attempt())
    assert heard == ["http_429"] * (TRANSPORT_TRIES - 1)


def test_the_driver_sends_what_each_outcome_gained_and_the_total(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(run_metrics.metrics, "GAUGE_REFRESH_S", float("inf"))  # no refresh
    monkeypatch.setattr(
        run_metrics.metrics, "segments", lambda total, **labels: sent.append(("total", total))
    )
    monkeypatch.setattr(
        run_metrics.metrics,
        "segments_done",
        lambda outcome, count, **labels: sent.append((outcome, count, labels["run_id"])),
    )
    tally = Tally(total=5)
    meter = SegmentMeter("r1", "m", tally.total)
    tally.written, tally.unchanged = 2, 1
    meter.update(tally)
    meter.update(tally)  # nothing gained: nothing sent
    tally.written, tally.failed = 3, 1
    meter.update(tally)
    assert sent == [
        ("total", 5),
        ("written", 2, "r1"),
        ("unchanged", 1, "r1"),
        ("written", 1, "r1"),
        ("failed", 1, "r1"),
    ]


class FakeMetric:
    """Records what Ray's metric would have been handed, in `calls`."""

    def __init__(self, name: str, calls: list[tuple[Any, ...]]) -> None:
        self.name = name
        self.calls = calls

    def inc(self, value: float = 1.0, tags: dict[str, str] | None = None) -> None:
        self.calls.append((self.name, "inc", value, tags))

    def set(self, value: float, tags: dict[str, str] | None = None) -> None:
        self.calls.append((self.name, "set", value, tags))

    def observe(self, value: float, tags: dict[str, str] | None = None) -> None:
        self.calls.append((self.name, "observe", value, tags))


def fake_metrics(monkeypatch: pytest.MonkeyPatch, *names: str) -> list[tuple[Any, ...]]:
    """Ray's metrics `names` replaced by fakes; what they are handed, in order."""
    calls: list[tuple[Any, ...]] = []
    fakes = {name: FakeMetric(name, calls) for name in names}
    monkeypatch.setattr(metrics, "_metrics", lambda: fakes)
    return calls


def test_requests_are_gathered_and_handed_to_ray_in_one_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gateway's tally: a latency sample per try at once, the counters and gauges
    only at a flush, summed."""
    calls = fake_metrics(monkeypatch, "requests", "latency", "tokens", "cost", "in_flight", "limit")
    tally = metrics.RequestTally()
    tally.add(Usage("ok", 0.2, 100, 20))
    tally.add(Usage("ok", 0.3, 50, 10))
    tally.add(Usage("transport", 0.0))  # failed before an answer: not timed
    assert calls == [
        ("latency", "observe", 0.2, {"outcome": "ok"}),
        ("latency", "observe", 0.3, {"outcome": "ok"}),
    ]
    calls.clear()
    tally.usd = 0.25
    tally.flush(3, 32)
    assert calls == [
        ("requests", "inc", 2, {"outcome": "ok"}),
        ("requests", "inc", 1, {"outcome": "transport"}),
        ("tokens", "inc", 150, {"direction": "input"}),
        ("tokens", "inc", 30, {"direction": "output"}),
        ("cost", "inc", 0.25, None),
        ("in_flight", "set", 3, None),
        ("limit", "set", 32, None),
    ]
    calls.clear()
    tally.flush(0, 32)  # nothing gathered since: only the gauges
    assert calls == [("in_flight", "set", 0, None), ("limit", "set", 32, None)]


def test_a_workers_attempts_moves_and_retries_reach_ray_summed_once_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = fake_metrics(monkeypatch, "attempts", "moves", "retries")
    now = [100.0]
    tally = metrics.EventTally(clock=lambda: now[0])
    tally.attempt("accepted", "extract")
    tally.attempt("accepted", "extract")
    tally.move("split")
    tally.transport_retry("http_429")
    assert calls == []  # within the second: gathered, not handed over
    now[0] += metrics.FLUSH_S
    tally.attempt("rejected", "repair")  # the first event after the second hands all over
    assert calls == [
        ("attempts", "inc", 2, {"state": "accepted", "stage": "extract"}),
        ("moves", "inc", 1, {"move": "split"}),
        ("retries", "inc", 1, {"cause": "http_429"}),
        ("attempts", "inc", 1, {"state": "rejected", "stage": "repair"}),
    ]
    calls.clear()
    tally.move("demote")
    tally.flush()  # the run's end: whatever is left, at once
    assert calls == [("moves", "inc", 1, {"move": "demote"})]
    calls.clear()
    tally.flush()
    assert calls == []
