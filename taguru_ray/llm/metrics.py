"""Ray metrics for Prometheus: what a person watches on a cluster's dashboard.

Recorded where the fact is known — the gateway for requests, permits and
tokens, the workers for attempt states and ladder moves — and exported by
Ray's metrics agent on every node (`ray metrics launch-prometheus`, or any
Prometheus scraping the nodes). Created lazily: a metric exists only in a
process Ray runs.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ray.util.metrics import Counter, Gauge

from taguru_ray.llm.client import Usage


@cache
def _metrics() -> dict[str, Any]:
    return {
        "requests": Counter(
            "taguru_ray_requests",
            "HTTP requests to model endpoints, by outcome",
            tag_keys=("outcome",),
        ),
        "in_flight": Gauge("taguru_ray_in_flight", "completions on the wire now"),
        "limit": Gauge("taguru_ray_inflight_limit", "the in-flight cap now (adaptive or fixed)"),
        "tokens": Counter(
            "taguru_ray_tokens", "tokens reported by the endpoints", tag_keys=("direction",)
        ),
        "attempts": Counter(
            "taguru_ray_attempts",
            "extraction attempts, by terminal state",
            tag_keys=("state", "stage"),
        ),
        "retries": Counter("taguru_ray_transport_retries", "transport tries that failed"),
        "moves": Counter("taguru_ray_moves", "ladder moves, by kind", tag_keys=("move",)),
    }


def in_flight(level: int) -> None:
    _metrics()["in_flight"].set(level)


def request_done(usage: Usage, level: int, limit: int) -> None:
    m = _metrics()
    m["requests"].inc(tags={"outcome": usage.outcome})
    m["in_flight"].set(level)
    m["limit"].set(limit)
    if usage.input_tokens:
        m["tokens"].inc(usage.input_tokens, tags={"direction": "input"})
    if usage.output_tokens:
        m["tokens"].inc(usage.output_tokens, tags={"direction": "output"})


def attempt(state: str, stage: str, retries: int) -> None:
    m = _metrics()
    m["attempts"].inc(tags={"state": state, "stage": stage})
    if retries:
        m["retries"].inc(retries)


def move(kind: str) -> None:
    _metrics()["moves"].inc(tags={"move": kind})
