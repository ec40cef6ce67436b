"""The per-request table of ``taguru-ray metrics --parquet``: one row per completion.

Every ``attempt`` record of every attempts log the metrics report read
(CONTRACT.md section 4.2), in segment order then log order — failed
segments' logs and replayed completions included, so a dashboard can draw
latency, tokens and states request by request. It is written as
``requests.parquet`` only: one line per completion is no terminal table.

Only the numbers and names a dashboard groups by are kept. The messages,
the answer, the parse error and the validation issues can quote corpus
text, so no column holds them. A field the record lacks (an older log, a
rung off the ladder) is null, and so is one whose value does not fit its
column's type (a hand-edited line, an int past int64), so the schema is the same for every run.
A replayed completion (``replayed`` true) restates the original's time and
tokens: leave it out of sums, as the other tables do.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from taguru_ray.contract.records.attempts import AttemptRecord
from taguru_ray.tools.metrics import MetricsReport
from taguru_ray.tools.records import Lines, RunModels, attempt_key
from taguru_ray.tools.tables import Column, Kind, Table

NAME = "requests"
COLUMNS = [
    Column("out", "str"),
    Column("run_id", "str"),
    Column("model", "str"),  # the model the run's settings record names
    Column("source", "str"),
    Column("piece_id", "str"),
    Column("chunk_index", "int"),
    Column("stage", "str"),
    Column("attempt", "int"),
    Column("max_attempts", "int"),
    Column("attempt_seq", "int"),
    Column("state", "str"),
    Column("rung", "str"),
    Column("finish_reason", "str"),
    Column("input_tokens", "int"),
    Column("output_tokens", "int"),
    Column("total_tokens", "int"),
    Column("elapsed_seconds", "float"),
    Column("transport_retries", "int"),
    Column("length_limited", "bool"),
    Column("requested_max_tokens", "int"),
    Column("piece_bytes", "int"),
    Column("replayed", "bool"),
    Column("corrects_run_id", "str"),
    Column("corrects_attempt_seq", "int"),
    Column("gleans_run_id", "str"),
    Column("gleans_attempt_seq", "int"),
]
# The record's own fields copied as they are (each column of the same name above).
_FIELDS = (
    "run_id",
    "source",
    "piece_id",
    "chunk_index",
    "stage",
    "attempt",
    "max_attempts",
    "attempt_seq",
    "state",
    "rung",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "elapsed_seconds",
    "transport_retries",
    "length_limited",
    "requested_max_tokens",
    "piece_bytes",
)


def request_table(report: MetricsReport) -> Table:
    """One row per ``attempt`` record in the report's attempts logs (already read)."""
    kinds = {column.name: column.kind for column in COLUMNS}
    rows = []
    for scope in report.segments:
        files = scope.segment
        if files is None or files.attempts is None:
            continue
        for attempt, model in _completions(files.attempts):
            row: dict[str, Any] = {"out": scope.out, "model": model}
            row |= {name: getattr(attempt, name) for name in _FIELDS}
            row["replayed"] = attempt_key(attempt.replayed_from) is not None
            for ref in ("corrects", "gleans"):
                key = attempt_key(getattr(attempt, ref))
                row[f"{ref}_run_id"], row[f"{ref}_attempt_seq"] = key or (None, None)
            rows.append({name: typed(row[name], kinds[name]) for name in kinds})
    title = "requests — one row per completion of the attempts logs"
    return Table(NAME, title, list(COLUMNS), rows)


def _completions(log: Lines) -> Iterator[tuple[AttemptRecord, str | None]]:
    """Each attempt record, with the model its run's settings record names (else the
    latest one before it)."""
    models = RunModels()
    for record in log.records:
        if not models.see(record) and (attempt := AttemptRecord.view(record)):
            yield attempt, models.of(attempt.run_id)


def typed(value: Any, kind: Kind) -> Any:
    """The value when it fits the column's kind, else None (so Arrow never refuses a row)."""
    if value is None or (isinstance(value, bool) and kind != "bool"):
        return None
    if kind == "str":
        return str(value) if isinstance(value, str) else None
    if kind == "int":
        return value if isinstance(value, int) and -(2**63) <= value < 2**63 else None
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None
