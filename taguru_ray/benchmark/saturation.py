"""A cell's saturation figures: what the endpoint delivered while taguru-ray kept it full.

Pure: from the attempts the harness saw (when each reached the sidecar, how
long it took, its tokens), the gateway's closing record and the cell's wall
time. The steady state is the span between the 10th and the 90th percentile
of the completion times — the ramp-up (Ray starting, `auto` climbing) and the
tail (the last segments draining) are left out of the rates; a cell of fewer
than ten completions is measured over its whole span. The sidecar reaches the
harness in a worker's batches, so a completion's time is when its batch was
seen: rates are exact over many completions, not per completion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

STEADY_LOW, STEADY_HIGH = 10, 90


@dataclass(frozen=True)
class Seen:
    at: float  # when the attempt reached the harness (seconds, monotonic)
    elapsed: float
    input_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True)
class Price:
    per_gpu_hour: float
    gpus: int


def nearest_rank(values: list[float], percent: int) -> float | None:
    """Nearest-rank percentile (the measure module's method): index ceil(p·n/100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(max(math.ceil(percent * len(ordered) / 100), 1), len(ordered))
    return ordered[rank - 1]


def saturation(
    seen: list[Seen],
    gateway: dict[str, Any] | None,
    *,
    wall_seconds: float,
    segments_written: int,
    price: Price | None,
) -> dict[str, Any] | None:
    """The cell's `saturation` block (manifest.json), or None when it made no completion."""
    if not seen:
        return None
    times = sorted(s.at for s in seen)
    if len(times) >= 10:
        low, high = nearest_rank(times, STEADY_LOW), nearest_rank(times, STEADY_HIGH)
        assert low is not None and high is not None
        window = [s for s in seen if low < s.at <= high]
        span = high - low
    else:
        first = min(seen, key=lambda s: s.at)
        low, high = first.at - first.elapsed, times[-1]
        window, span = seen, high - low
    rate = (lambda total: total / span) if span > 0 else (lambda total: None)
    latencies = [s.elapsed for s in seen]
    output_total = sum(s.output_tokens or 0 for s in seen)
    gateway = gateway or {}
    outcomes = gateway.get("outcomes") or {}
    requests = int(gateway.get("requests") or 0)
    cost = None if price is None else price.per_gpu_hour * price.gpus * wall_seconds / 3600
    return {
        "completions": len(seen),
        "steady_seconds": round(span, 6) if span > 0 else None,
        "completions_per_second": _round(rate(len(window))),
        "input_tokens_per_second": _round(rate(sum(s.input_tokens or 0 for s in window))),
        "output_tokens_per_second": _round(rate(sum(s.output_tokens or 0 for s in window))),
        "latency_seconds": {f"p{p}": nearest_rank(latencies, p) for p in (50, 90, 99)},
        "inflight_settled": gateway.get("inflight_limit"),
        "inflight_adaptive": bool(gateway.get("inflight_adaptive", False)),
        # What the cell's steady state kept on the wire, and what held it (ADR 0048).
        "inflight_observed_mean": gateway.get("inflight_mean"),
        "inflight_observed_peak": gateway.get("inflight_peak"),
        "bound": gateway.get("bound"),
        "bound_why": gateway.get("bound_why"),
        "client_cpu_share": gateway.get("client_cpu_share"),
        "host_cpu_busy": gateway.get("host_cpu_busy"),
        "http_429": int(outcomes.get("http_429", 0)),
        # Requests beyond the completions: transport retries and 429 resends.
        "retries": max(requests - int(gateway.get("completions") or len(seen)), 0),
        "cost_per_1k_segments": _round(
            cost * 1000 / segments_written if cost is not None and segments_written else None
        ),
        "cost_per_1m_output_tokens": _round(
            cost * 1_000_000 / output_total if cost is not None and output_total else None
        ),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
