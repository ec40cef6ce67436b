"""`taguru-ray benchmark compare`: a pure, network-free function of a results directory.

One read of RESULTS_DIR (manifest.json, runs/*.jsonl, the written batches
under cells/) gives five artifacts: differences.jsonl (model-pair paired
diff), measurements.csv and measurements.parquet (flat tables), measurements-wide.csv
(one row per cell: throughput, latency, cost, bound — `wide`), a PNG
figure and measurements.json (authoritative). It measures throughput, volume and
run-to-run stability and never ranks: no key of any artifact can name a
winner (tests walk every key).

Module map: `manifest`/`load`/`batch` read; `identity` decides same-ness;
`measure` holds the value shapes; `metrics`, `stability`, `saturation`
compute; `definitions` explains; `measurements`, `table`, `differences`
(+ `locator`), `wide` render; `serde` speaks serde_json's JSON; `write` publishes.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass

import fsspec

from taguru_ray.benchmark.compare.differences import differences_text
from taguru_ray.benchmark.compare.load import Loaded, load_results
from taguru_ray.benchmark.compare.manifest import (
    CompareError,
    client_bound_warning,
    rung_drift_warnings,
)
from taguru_ray.benchmark.compare.measurements import Measurements, build_measurements
from taguru_ray.benchmark.compare.serde import dumps_pretty
from taguru_ray.benchmark.compare.table import render_csv, render_parquet
from taguru_ray.benchmark.compare.wide import WIDE_NAME, WideRow, render_wide_csv, wide_rows
from taguru_ray.benchmark.compare.write import write_artifacts

__all__ = [
    "ARTIFACTS",
    "CompareError",
    "Computed",
    "compare",
    "compute",
    "publish",
]

# Renamed into place in this order (the JSON, authoritative, last).
ARTIFACTS = (
    "differences.jsonl",
    "measurements.csv",
    "measurements-wide.csv",
    "measurements.parquet",
    "measurements.png",
    "measurements.json",
)

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Computed:
    """Everything compare derives from one read, before anything is written."""

    loaded: Loaded
    measurements: Measurements
    differences: str

    def artifacts(self) -> list[tuple[str, bytes]]:
        """(file name, bytes) of every artifact, in rename order."""
        return [
            ("differences.jsonl", self.differences.encode("utf-8")),
            ("measurements.csv", render_csv(self.measurements).encode("utf-8")),
            (WIDE_NAME, render_wide_csv(self.wide()).encode("utf-8")),
            ("measurements.parquet", render_parquet(self.measurements)),
            ("measurements.png", self.figure()),
            ("measurements.json", (dumps_pretty(self.measurements.to_json()) + "\n").encode()),
        ]

    def wide(self) -> list[WideRow]:
        """One row per cell: throughput, latency, cost and bound (`wide`)."""
        return wide_rows(self.measurements.to_json(), self.gpu_of())

    def gpu_of(self) -> dict[str, object]:
        """model_id -> the GPU label the manifest gives it."""
        return {
            str(model.get("model_id")): model.get("gpu")
            for model in self.loaded.manifest.raw.get("models", [])
            if isinstance(model, dict)
        }

    def figure(self) -> bytes:
        """The PNG: throughput against latency per cell, one marker per GPU label; volume
        and stability per model beside it. Figures, never a verdict."""
        from taguru_ray.benchmark.figure import draw  # matplotlib: only when drawing

        buffer = io.BytesIO()
        draw(self.measurements.to_json(), buffer, self.gpu_of())
        return buffer.getvalue()


def _results_time(loaded: Loaded) -> str:
    """`generated_at`: the time of the results measured — the matrix's end, else its last
    cell's, else its start — never the clock, so one directory gives the same bytes."""
    raw = loaded.manifest.raw
    cells = [c.get("finished_at") for c in raw.get("cells", []) if isinstance(c, dict)]
    stamps = [s for s in (raw.get("finished_at"), *sorted(filter(None, cells), reverse=True),
                          raw.get("started_at")) if isinstance(s, str) and s]  # fmt: skip
    return stamps[0] if stamps else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(0))


def _split(results_dir: str) -> tuple[object, str]:
    fs, root = fsspec.core.url_to_fs(results_dir)
    return fs, root.rstrip("/") or root


def compute(
    results_dir: str,
    *,
    with_text: bool = False,
    warn: Warn = lambda _: None,
    generated_at: str | None = None,
) -> Computed:
    """Read RESULTS_DIR (a path or fsspec URL) and compute every artifact; writes nothing.

    Raises CompareError for a missing or unsupported manifest, an unreadable
    runs file (naming its cell) and a --with-text refusal. Non-fatal notes
    (structured-output rung drift, an unreadable batch, a segment without a
    manifest entry) go to ``warn``.
    """
    fs, root = _split(results_dir)
    loaded = load_results(fs, root, warn)
    for warning in rung_drift_warnings(loaded.manifest):
        warn(warning)
    held = client_bound_warning(loaded.manifest)
    if held is not None:
        warn(held)
    measurements = build_measurements(loaded, generated_at or _results_time(loaded))
    differences = differences_text(loaded, with_text, warn)
    return Computed(loaded, measurements, differences)


def compare(results_dir: str, *, with_text: bool = False, warn: Warn = lambda _: None) -> list[str]:
    """Compute and publish every artifact into RESULTS_DIR; the names written."""
    return publish(results_dir, compute(results_dir, with_text=with_text, warn=warn))


def publish(results_dir: str, computed: Computed) -> list[str]:
    """Write `computed`'s artifacts into RESULTS_DIR; the names written."""
    fs, root = _split(results_dir)
    artifacts = computed.artifacts()
    write_artifacts(fs, root, artifacts)
    return [name for name, _ in artifacts]
