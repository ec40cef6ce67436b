"""Steady-state throughput and cost from each cell's `saturation` block.

benchmark extract measures every cell at saturation and records the result
in the manifest (`cells[].saturation`, null when the cell made no attempt).
Here each field becomes a Distribution: one sample at cell scope, one per
cell at model scope, and one per cell of every model carrying the same GPU
label at `gpu` scope — so a GPU's numbers pool the models run on it without
ranking them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from taguru_ray.benchmark.compare.manifest import CellInfo, Manifest
from taguru_ray.benchmark.compare.serde import as_f64
from taguru_ray.measure import Distribution, MetricsMap, Tally

BOUND = "saturation.bound"


def _field(name: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda block: as_f64(block.get(name))


def _latency(percentile: str) -> Callable[[dict[str, Any]], float | None]:
    def read(block: dict[str, Any]) -> float | None:
        latency = block.get("latency_seconds")
        return as_f64(latency.get(percentile)) if isinstance(latency, dict) else None

    return read


# metric name → how to read its one sample off a cell's saturation block.
SATURATION_METRICS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "saturation.completions_per_second": _field("completions_per_second"),
    "saturation.input_tokens_per_second": _field("input_tokens_per_second"),
    "saturation.output_tokens_per_second": _field("output_tokens_per_second"),
    "saturation.latency_p50_seconds": _latency("p50"),
    "saturation.latency_p90_seconds": _latency("p90"),
    "saturation.latency_p99_seconds": _latency("p99"),
    "saturation.inflight_settled": _field("inflight_settled"),
    "saturation.inflight_observed_mean": _field("inflight_observed_mean"),
    "saturation.inflight_observed_peak": _field("inflight_observed_peak"),
    "saturation.client_cpu_share": _field("client_cpu_share"),
    "saturation.http_429": _field("http_429"),
    "saturation.retries": _field("retries"),
    "cost.per_1k_segments": _field("cost_per_1k_segments"),
    "cost.per_1m_output_tokens": _field("cost_per_1m_output_tokens"),
}


def saturation_metrics(cells: Iterable[CellInfo]) -> MetricsMap:
    """Each saturation metric over the given cells (a cell with no block adds nothing),
    and how many of them each bound held (`saturation.bound`, a Tally: ADR 0048)."""
    measured = [cell for cell in cells if cell.saturation is not None]
    found: MetricsMap = {
        name: Distribution.of(read(cell.saturation or {}) for cell in measured)
        for name, read in SATURATION_METRICS.items()
    }
    found[BOUND] = Tally.of(cell.bound for cell in measured)
    return found


def gpu_metrics(manifest: Manifest) -> dict[str, MetricsMap]:
    """Per GPU label, the saturation metrics over the cells of models run on it."""
    by_gpu: dict[str, list[CellInfo]] = {}
    for cell in manifest.cells:
        model = manifest.model(cell.model_id)
        if model is not None and model.gpu is not None:
            by_gpu.setdefault(model.gpu, []).append(cell)
    return {gpu: saturation_metrics(cells) for gpu, cells in sorted(by_gpu.items())}
