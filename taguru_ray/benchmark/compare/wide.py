"""The wide view of measurements: one row per cell, the columns a person compares first.

``benchmark compare`` prints it on stdout and writes it as ``measurements-wide.csv``
beside the long ``measurements.csv`` (which stays the contract's exact projection);
``taguru-ray report`` shows the same rows. A value is the cell's own (each saturation
metric has one sample per cell); cost is None when the manifest set no price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.compare.table import csv_field, csv_number

WIDE_NAME = "measurements-wide.csv"
WIDE_HEADER = (
    "cell_id",
    "model_id",
    "gpu",
    "completions_per_s",
    "output_tokens_per_s",
    "latency_p50_s",
    "latency_p99_s",
    "cost_per_1m_output_tokens",
    "bound",
)
_METRICS = {
    "completions_per_s": "saturation.completions_per_second",
    "output_tokens_per_s": "saturation.output_tokens_per_second",
    "latency_p50_s": "saturation.latency_p50_seconds",
    "latency_p99_s": "saturation.latency_p99_seconds",
    "cost_per_1m_output_tokens": "cost.per_1m_output_tokens",
}


@dataclass(frozen=True)
class WideRow:
    cell_id: str
    model_id: str
    gpu: str | None
    values: dict[str, float | None]
    bound: str | None


def wide_rows(measurements: Mapping[str, Any], gpu_of: Mapping[str, Any]) -> list[WideRow]:
    """One row per cell of a measurements.json document, in its cell order."""
    rows = []
    cells = measurements.get("cells")
    for cell_id, block in (cells if isinstance(cells, dict) else {}).items():
        if not isinstance(block, dict):
            continue
        model = str(block.get("model_id", ""))
        gpu = gpu_of.get(model)
        bound = block.get("bound")
        rows.append(
            WideRow(
                str(cell_id),
                model,
                gpu if isinstance(gpu, str) else None,
                {name: _mean(block.get(metric)) for name, metric in _METRICS.items()},
                bound if isinstance(bound, str) else None,
            )
        )
    return rows


def _mean(value: Any) -> float | None:
    mean = value.get("mean") if isinstance(value, dict) else None
    return float(mean) if isinstance(mean, int | float) and not isinstance(mean, bool) else None


def render_wide_csv(rows: list[WideRow]) -> str:
    """The wide CSV: numbers as the long table prints them, an empty field for none."""
    lines = [",".join(WIDE_HEADER)]
    for row in rows:
        cells = [csv_field(row.cell_id), csv_field(row.model_id), csv_field(row.gpu or "")]
        cells += [csv_number(value) for value in row.values.values()]
        cells.append(csv_field(row.bound or ""))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def render_wide_text(rows: list[WideRow]) -> str:
    """The wide table for a terminal: aligned columns, ``-`` for a missing value."""
    head = ["cell", "model", "GPU", "compl/s", "out tok/s", "p50 s", "p99 s", "$/1M out", "bound"]
    digits = (2, 1, 3, 3, 4)
    cells = [head]
    for row in rows:
        numbers = [
            "-" if value is None else f"{value:.{places}f}"
            for value, places in zip(row.values.values(), digits, strict=True)
        ]
        cells.append([row.cell_id, row.model_id, row.gpu or "-", *numbers, row.bound or "-"])
    widths = [max(len(line[i]) for line in cells) for i in range(len(head))]
    out = []
    for line in cells:
        parts = [
            text.ljust(width) if i < 3 or i == 8 else text.rjust(width)
            for i, (text, width) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out) + "\n"
