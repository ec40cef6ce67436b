"""measurements.json assembled from one load (BENCHMARK.md §2.3).

Every map is key-sorted — no array anywhere a position could read as a rank.
`cells` has every manifest cell (even one with no attempts), `models` every
manifest model plus any only a cell names, `gpus` every GPU label a model
carries, `documents` only (cell, segment) pairs the runs files mention.
Output keys keep REF-2608's names (`documents`, `document.*`), as the
transitional newest compare does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from taguru_ray.benchmark.compare.definitions import Definition, build_definitions
from taguru_ray.benchmark.compare.identity import DEFAULT_MATCHING, Matching
from taguru_ray.benchmark.compare.load import AttemptRow, DocRow, Loaded
from taguru_ray.benchmark.compare.manifest import run_label
from taguru_ray.benchmark.compare.metrics import document_metrics, scope_metrics
from taguru_ray.benchmark.compare.saturation import gpu_metrics, saturation_metrics
from taguru_ray.benchmark.compare.stability import stability_metrics
from taguru_ray.measure import MetricsMap, ratio

MEASUREMENTS_VERSION = 1
Row = TypeVar("Row", AttemptRow, DocRow)


@dataclass(frozen=True)
class CellBlock:
    model_id: str
    run_index: int
    metrics: MetricsMap
    bound: str | None = None  # what held the cell (ADR 0048), a plain word


@dataclass(frozen=True)
class Measurements:
    """The measurements artifact as values; `to_json` gives its struct order."""

    run_id: str
    generated_at: str
    matching: Matching
    runs: list[str]
    definitions: dict[str, Definition]
    cells: dict[str, CellBlock]
    models: dict[str, MetricsMap]
    gpus: dict[str, MetricsMap]
    documents: dict[str, dict[str, dict[str, MetricsMap]]]

    def to_json(self) -> dict[str, Any]:
        return {
            "taguru_benchmark_measurements": MEASUREMENTS_VERSION,
            "run_id": self.run_id,
            "generated_at": self.generated_at,
            "percentile_method": "nearest-rank",
            "matching": self.matching.to_json(),
            "inputs": {"runs": self.runs, "cells": "cells/"},
            "definitions": {name: d.to_json() for name, d in self.definitions.items()},
            "cells": {
                cell_id: {
                    "model_id": block.model_id,
                    "run_index": block.run_index,
                    "bound": block.bound,
                    **_metrics_json(block.metrics),
                }
                for cell_id, block in self.cells.items()
            },
            "models": {m: _metrics_json(metrics) for m, metrics in self.models.items()},
            "gpus": {g: _metrics_json(metrics) for g, metrics in self.gpus.items()},
            "documents": {
                model: {
                    segment: {label: _metrics_json(metrics) for label, metrics in runs.items()}
                    for segment, runs in segments.items()
                }
                for model, segments in self.documents.items()
            },
        }


def _metrics_json(metrics: MetricsMap) -> dict[str, Any]:
    return {name: metrics[name].to_json() for name in sorted(metrics)}


def _group(rows: Iterable[Row], key: Callable[[Row], Hashable]) -> dict[Hashable, list[Row]]:
    grouped: dict[Hashable, list[Row]] = {}
    for row in rows:
        grouped.setdefault(key(row), []).append(row)
    return grouped


def _sorted(metrics: MetricsMap) -> MetricsMap:
    return dict(sorted(metrics.items()))


def build_measurements(
    loaded: Loaded, generated_at: str, matching: Matching = DEFAULT_MATCHING
) -> Measurements:
    """Cell, model, GPU and document scopes of every metric, plus their definitions."""
    manifest = loaded.manifest
    attempts_of_cell = _group(loaded.attempts, lambda a: a.cell_id)
    attempts_of_model = _group(loaded.attempts, lambda a: a.model_id)
    attempts_of_segment = _group(loaded.attempts, lambda a: (a.cell_id, a.document_id))
    docs_of_cell = _group(loaded.doc_rows, lambda d: d.cell_id)
    docs_of_model = _group(loaded.doc_rows, lambda d: d.model_id)

    cells: dict[str, CellBlock] = {}
    for cell in manifest.cells:
        metrics = scope_metrics(
            attempts_of_cell.get(cell.cell_id, []), docs_of_cell.get(cell.cell_id, [])
        )
        metrics.update(saturation_metrics([cell]))
        cells[cell.cell_id] = CellBlock(cell.model_id, cell.run_index, _sorted(metrics), cell.bound)

    models: dict[str, MetricsMap] = {}
    for model_id in sorted(manifest.model_ids()):
        own = [c for c in manifest.cells if c.model_id == model_id]
        docs = docs_of_model.get(model_id, [])
        metrics = scope_metrics(attempts_of_model.get(model_id, []), docs)
        metrics.update(stability_metrics({c.run_index for c in own}, docs, matching))
        metrics["cell.complete_rate"] = ratio(sum(c.outcome == "complete" for c in own), len(own))
        metrics.update(saturation_metrics(own))
        models[model_id] = _sorted(metrics)

    documents: dict[str, dict[str, dict[str, MetricsMap]]] = {}
    for d in loaded.doc_rows:
        metrics = document_metrics(d, attempts_of_segment.get((d.cell_id, d.document_id), []))
        documents.setdefault(d.model_id, {}).setdefault(d.document_id, {})[
            run_label(d.run_index)
        ] = _sorted(metrics)

    return Measurements(
        run_id=manifest.run_id,
        generated_at=generated_at,
        matching=matching,
        runs=sorted(loaded.runs_files),
        definitions=build_definitions(loaded.finish_reasons),
        cells=dict(sorted(cells.items())),
        models=models,
        gpus=gpu_metrics(manifest),
        documents={
            model: {
                segment: dict(sorted(runs.items())) for segment, runs in sorted(segments.items())
            }
            for model, segments in sorted(documents.items())
        },
    )
