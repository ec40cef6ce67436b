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
