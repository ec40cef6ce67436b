"""Ray metrics for Prometheus: what a person watches on a cluster's dashboard.

Recorded where the fact is known — the gateway for requests, their latency, permits,
tokens and cost, the workers for attempt states, ladder moves and transport retries,
the driver for the run's segments — and exported by Ray's metrics agent on every node
(`ray metrics launch-prometheus`, or any Prometheus scraping the nodes). Ray prefixes
each name with ``ray_`` and a counter's with ``_total`` too: ``taguru_ray_requests``
is scraped as ``ray_taguru_ray_requests_total`` (`cluster/grafana-dashboard.json`).

Every series carries the run's `run_id` and `model`: a process running a run's actor
names them once (`label`); the driver, which may run several runs, names them per call.
Created lazily: a metric exists only in a process Ray runs.
"""

from __future__ import annotations

import time
from collections import Counter as CounterOf
from collections.abc import Callable
from functools import cache
from typing import Any

from ray.util.metrics import Counter, Gauge, Histogram

from taguru_ray.llm.client import Usage

RUN = ("run_id", "model")  # on every series
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)
SEGMENT_OUTCOMES = ("written", "unchanged", "failed", "interrupted")
# Ray's agent drops a gauge its process has not set for two report intervals (2 x 10 s),
# however long the process lives: a gauge that may stand still is set again this often.
GAUGE_REFRESH_S = 5.0
# Counters a process gathers are handed to Ray this often (`RequestTally`): Ray's agent
# exports every 10 s, so a call per request per metric bought the gateway only CPU.
FLUSH_S = 1.0


@cache
def _metrics() -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "requests": Counter(
            "taguru_ray_requests",
            "HTTP requests to model endpoints, by outcome",
            tag_keys=(*RUN, "outcome"),
        ),
        "latency": Histogram(
            "taguru_ray_request_seconds",
            "seconds an HTTP request to a model endpoint took, by outcome",
            boundaries=list(LATENCY_BUCKETS),
            tag_keys=(*RUN, "outcome"),
        ),
        "in_flight": Gauge("taguru_ray_in_flight", "completions on the wire now", tag_keys=RUN),
        "limit": Gauge(
            "taguru_ray_inflight_limit", "the in-flight cap now (adaptive or fixed)", tag_keys=RUN
        ),
        "tokens": Counter(
            "taguru_ray_tokens",
            "tokens reported by the endpoints, by direction (input, output)",
            tag_keys=(*RUN, "direction"),
        ),
        "cost": Counter(
            "taguru_ray_cost_usd", "what the tokens cost at the model's price, in USD", tag_keys=RUN
        ),
        "attempts": Counter(
            "taguru_ray_attempts",
            "extraction attempts, by terminal state",
            tag_keys=(*RUN, "state", "stage"),
        ),
        "retries": Counter(
            "taguru_ray_transport_retries",
            "HTTP tries that failed and were tried again, by cause (http_429, http_503, "
            "timeout, transport, ...)",
            tag_keys=(*RUN, "cause"),
        ),
        "moves": Counter("taguru_ray_moves", "ladder moves, by kind", tag_keys=(*RUN, "move")),
        "segments": Gauge("taguru_ray_segments", "segments in the run", tag_keys=RUN),
        "segments_done": Counter(
            "taguru_ray_segments_done",
            "segments the run has settled, by outcome (written, unchanged, failed, interrupted)",
            tag_keys=(*RUN, "outcome"),
        ),
    }
    for metric in metrics.values():
        metric.set_default_tags({"run_id": "", "model": ""})
    return metrics


def label(run_id: str, model: str) -> None:
    """This process runs an actor of run `run_id` with `model`: every series it records
    from now on carries both."""
    for metric in _metrics().values():
        metric.set_default_tags({"run_id": run_id, "model": model})


def permits(level: int, limit: int) -> None:
    """Completions on the wire now, and the cap."""
    m = _metrics()
    m["in_flight"].set(level)
    m["limit"].set(limit)


class RequestTally:
    """Finished HTTP tries, gathered in the process and handed to Ray's counters at each
    `flush` (every FLUSH_S, and at the end): one histogram sample per try, where six
    metric calls — each checking its tags and crossing into Ray's core — were a
    tenth of the gateway's CPU per completion (issue 23)."""

    def __init__(self) -> None:
        self.requests: CounterOf[str] = CounterOf()
        self.tokens = {"input": 0, "output": 0}
        self.usd = 0.0

    def add(self, usage: Usage) -> None:
        """One HTTP try ended: its outcome and tokens are counted, its latency sampled."""
        self.requests[usage.outcome] += 1
        self.tokens["input"] += usage.input_tokens
        self.tokens["output"] += usage.output_tokens
        if usage.latency_seconds > 0:  # a connection that failed before an answer is not timed
            _metrics()["latency"].observe(usage.latency_seconds, tags={"outcome": usage.outcome})

    def flush(self, level: int, limit: int) -> None:
        """Hand what was gathered to Ray, with the permits now."""
        m = _metrics()
        for outcome, count in self.requests.items():
            m["requests"].inc(count, tags={"outcome": outcome})
        for direction, count in self.tokens.items():
            if count:
                m["tokens"].inc(count, tags={"direction": direction})
        if self.usd > 0:
            m["cost"].inc(self.usd)
        self.requests.clear()
        self.tokens = {"input": 0, "output": 0}
        self.usd = 0.0
        permits(level, limit)


class EventTally:
    """A segment worker's attempt states, ladder moves and transport retries, gathered in
    the process and handed to Ray's counters on the first event after FLUSH_S and at
    `flush` (the run's end): a counter call per attempt, each crossing into Ray's core,
    was 2.5 % of a worker's CPU per completion (issue 23). A worker that dies loses at
    most its last second of counts; its records on disk are unaffected."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._counts: CounterOf[tuple[str, tuple[tuple[str, str], ...]]] = CounterOf()
        self._due = clock() + FLUSH_S

    def attempt(self, state: str, stage: str) -> None:
        self._add("attempts", (("state", state), ("stage", stage)))

    def move(self, kind: str) -> None:
        self._add("moves", (("move", kind),))

    def transport_retry(self, cause: str) -> None:
        """An HTTP try failed with `cause` and is tried again (`retry.retry_cause`)."""
        self._add("retries", (("cause", cause),))

    def _add(self, metric: str, tags: tuple[tuple[str, str], ...]) -> None:
        self._counts[(metric, tags)] += 1
        if self._clock() >= self._due:
            self.flush()

    def flush(self) -> None:
        m = _metrics()
        for (metric, tags), count in self._counts.items():
            m[metric].inc(count, tags=dict(tags))
        self._counts.clear()
        self._due = self._clock() + FLUSH_S


def segments(total: int, *, run_id: str, model: str) -> None:
    """The driver knows how many segments run `run_id` has."""
    _metrics()["segments"].set(total, tags={"run_id": run_id, "model": model})


def segments_done(outcome: str, count: int, *, run_id: str, model: str) -> None:
    """`count` more segments of run `run_id` settled as `outcome`."""
    if count > 0:
        _metrics()["segments_done"].inc(
            count, tags={"run_id": run_id, "model": model, "outcome": outcome}
        )
