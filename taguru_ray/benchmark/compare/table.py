"""measurements.csv and measurements.parquet: the JSON as one flat table (BENCHMARK.md §2.6).

Rows: every cell (cell_id order), then models, then GPUs (scope ``gpu``, the
label in the model_id column), then documents (model → segment → run);
within a scope metrics in name order, and one row per field of the value's
shape. The JSON stays authoritative; the table is an exact projection of it,
byte-identical across re-runs on the same directory (it has no timestamp).

CSV numbers print as Rust's ``Display`` prints an ``f64`` — shortest
round-trip digits, no exponent, no trailing ``.0``. The Parquet copy has the
same columns, **typed**: ``run_index`` and ``n`` int64, ``value`` float64
(null where the CSV is empty; every integer field is far below 2**53, so a
float holds it exactly), ``document_id`` null where the CSV is empty, the
rest strings.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from taguru_ray.benchmark.compare.measurements import Measurements
from taguru_ray.contract.rust_text import display_f64
from taguru_ray.measure import MetricsMap

HEADER = ("scope", "model_id", "run_index", "document_id", "metric", "stat", "value", "unit", "n")


@dataclass(frozen=True)
class Row:
    scope: str
    model_id: str
    run_index: int | None
    document_id: str | None
    metric: str
    stat: str
    value: int | float | None
    unit: str
    n: int


def table_rows(measurements: Measurements) -> list[Row]:
    """Every row of the table, in the contract's order."""
    rows: list[Row] = []

    def add(scope: str, model: str, run: int | None, doc: str | None, metrics: MetricsMap) -> None:
        for metric in sorted(metrics):
            value = metrics[metric]
            unit = measurements.definitions[metric].unit
            for stat, field in value.rows():
                rows.append(
                    Row(scope, model, run, doc, metric, stat, field, unit, value.sample_size)
                )

    for block in measurements.cells.values():
        add("cell", block.model_id, block.run_index, None, block.metrics)
    for model_id, metrics in measurements.models.items():
        add("model", model_id, None, None, metrics)
    for gpu, metrics in measurements.gpus.items():
        add("gpu", gpu, None, None, metrics)
    for model_id, segments in measurements.documents.items():
        for segment_id, runs in segments.items():
            for label, metrics in runs.items():
                add("document", model_id, int(label.removeprefix("run")), segment_id, metrics)
    return rows


def csv_field(text: str) -> str:
    """Quoted (quotes doubled) only when the field holds a comma, quote, CR or LF."""
    if any(char in text for char in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_number(value: int | float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return display_f64(value)


def render_csv(measurements: Measurements) -> str:
    lines = [",".join(HEADER)]
    for row in table_rows(measurements):
        lines.append(
            ",".join(
                (
                    row.scope,
                    csv_field(row.model_id),
                    "" if row.run_index is None else str(row.run_index),
                    csv_field(row.document_id or ""),
                    csv_field(row.metric),
                    row.stat,
                    csv_number(row.value),
                    row.unit,
                    str(row.n),
                )
            )
        )
    return "\n".join(lines) + "\n"


SCHEMA = pa.schema(
    [
        ("scope", pa.string()),
        ("model_id", pa.string()),
        ("run_index", pa.int64()),
        ("document_id", pa.string()),
        ("metric", pa.string()),
        ("stat", pa.string()),
        ("value", pa.float64()),
        ("unit", pa.string()),
        ("n", pa.int64()),
    ]
)


def render_parquet(measurements: Measurements) -> bytes:
    """The same table as Parquet bytes (typed columns, see the module docstring)."""
    rows = table_rows(measurements)
    columns = {
        "scope": [r.scope for r in rows],
        "model_id": [r.model_id for r in rows],
        "run_index": [r.run_index for r in rows],
        "document_id": [r.document_id for r in rows],
        "metric": [r.metric for r in rows],
        "stat": [r.stat for r in rows],
        "value": [None if r.value is None else float(r.value) for r in rows],
        "unit": [r.unit for r in rows],
        "n": [r.n for r in rows],
    }
    sink = io.BytesIO()
    pq.write_table(pa.table(columns, schema=SCHEMA), sink)
    return sink.getvalue()
