"""The results directory's `manifest.json`, as compare reads it (BENCHMARK.md §1.5, §6).

Every field defaults when missing, so an old manifest loads; only the
version stamp is checked (a range, 1..=current). The segment dictionary is
`segments`/`segment_id` as benchmark extract writes it now, or the
`documents`/`document_id` of earlier directories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taguru_ray.benchmark.compare.serde import as_f64, as_str, as_u64
from taguru_ray.engine.bound import CLIENT_BOUNDS
from taguru_ray.errors import TaguruRayError

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1  # the newest manifest stamp this reader knows


class CompareError(TaguruRayError):
    """A runtime failure of compare (exit 1); the message names the file or cell."""


@dataclass(frozen=True)
class ChunkInfo:
    chunk_index: int
    chunk_sha256: str
    paragraph_first: int
    paragraph_last: int


@dataclass(frozen=True)
class SegmentInfo:
    """One corpus file as the harness pinned it."""

    segment_id: str
    path: str
    sha256: str
    paragraph_count: int
    chunks: tuple[ChunkInfo, ...]


@dataclass(frozen=True)
class ModelInfo:
    model_id: str
    gpu: str | None
    gpu_count: int | None
    price_per_gpu_hour: float | None


@dataclass(frozen=True)
class CellInfo:
    """One (model, run) cell; `saturation` is its steady-state block, or None."""

    cell_id: str
    model_id: str
    run_index: int
    runs_file: str
    outcome: str
    structured_output_resolved: str | None
    saturation: dict[str, Any] | None

    @property
    def bound(self) -> str | None:
        """What held the cell's in-flight level (`saturation.bound`, ADR 0048), if said."""
        return as_str(self.saturation.get("bound")) if self.saturation else None


@dataclass(frozen=True)
class Manifest:
    run_id: str
    segments: dict[str, SegmentInfo]
    models: tuple[ModelInfo, ...]
    cells: tuple[CellInfo, ...]
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    def model(self, model_id: str) -> ModelInfo | None:
        return next((m for m in self.models if m.model_id == model_id), None)

    def model_ids(self) -> list[str]:
        """Models in declaration order, then models only cells name, sorted."""
        declared = [m.model_id for m in self.models]
        extra = sorted({c.model_id for c in self.cells} - set(declared))
        return list(dict.fromkeys(declared)) + extra


def run_label(run_index: int) -> str:
    """``run`` + the index zero-padded to two digits: run01, run12."""
    return f"run{run_index:02d}"


def parse_manifest(data: dict[str, Any]) -> Manifest:
    """A manifest from its parsed JSON; CompareError when the version is unknown."""
    version = as_u64(data.get("taguru_benchmark_manifest"))
    if version is None or not 1 <= version <= MANIFEST_VERSION:
        shown = data.get("taguru_benchmark_manifest")
        raise CompareError(
            f"{MANIFEST}: taguru_benchmark_manifest {shown!r} is not a version this reads "
            f"(1..={MANIFEST_VERSION}) — is this a benchmark extract results directory?"
        )
    entries = _list(data.get("segments")) or _list(data.get("documents"))
    segments = [_segment(entry) for entry in entries if isinstance(entry, dict)]
    return Manifest(
        run_id=as_str(data.get("run_id")) or "",
        segments={s.segment_id: s for s in segments},
        models=tuple(_model(m) for m in _list(data.get("models")) if isinstance(m, dict)),
        cells=tuple(_cell(c) for c in _list(data.get("cells")) if isinstance(c, dict)),
        raw=data,
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _segment(entry: dict[str, Any]) -> SegmentInfo:
    chunks = []
    for chunk in _list(entry.get("chunks")):
        if isinstance(chunk, dict):
            chunks.append(
                ChunkInfo(
                    chunk_index=as_u64(chunk.get("chunk_index")) or 0,
                    chunk_sha256=as_str(chunk.get("chunk_sha256")) or "",
                    paragraph_first=as_u64(chunk.get("paragraph_first")) or 0,
                    paragraph_last=as_u64(chunk.get("paragraph_last")) or 0,
                )
            )
    return SegmentInfo(
        segment_id=as_str(entry.get("segment_id")) or as_str(entry.get("document_id")) or "",
        path=as_str(entry.get("path")) or "",
        sha256=as_str(entry.get("sha256")) or "",
        paragraph_count=as_u64(entry.get("paragraph_count")) or 0,
        chunks=tuple(chunks),
    )


def _model(entry: dict[str, Any]) -> ModelInfo:
    return ModelInfo(
        model_id=as_str(entry.get("model_id")) or "",
        gpu=as_str(entry.get("gpu")) or None,
        gpu_count=as_u64(entry.get("gpu_count")),
        price_per_gpu_hour=as_f64(entry.get("price_per_gpu_hour")),
    )


def _cell(entry: dict[str, Any]) -> CellInfo:
    model_id = as_str(entry.get("model_id")) or ""
    run_index = as_u64(entry.get("run_index")) or 0
    cell_id = as_str(entry.get("cell_id")) or f"{model_id}.{run_label(run_index)}"
    saturation = entry.get("saturation")
    return CellInfo(
        cell_id=cell_id,
        model_id=model_id,
        run_index=run_index,
        runs_file=as_str(entry.get("runs_file")) or f"runs/{cell_id}.jsonl",
        outcome=as_str(entry.get("outcome")) or "",
        structured_output_resolved=as_str(entry.get("structured_output_resolved")),
        saturation=saturation if isinstance(saturation, dict) else None,
    )


def client_bound_warning(manifest: Manifest) -> str | None:
    """One line naming the cells the client, not the endpoint, held (ADR 0048): their
    throughput measures taguru-ray's window, CPU, limit or corpus, not the GPU."""
    held = [c for c in manifest.cells if c.bound in CLIENT_BOUNDS]
    if not held:
        return None
    named = ", ".join(f"{c.cell_id} ({c.bound})" for c in held)
    return (
        f"WARNING: {len(held)} cell(s) were held by the client, not the endpoint: {named} — "
        "their throughput measures taguru-ray's side, not the GPU (hollow on the figure)"
    )


def rung_drift_warnings(manifest: Manifest) -> list[str]:
    """One warning per model whose cells resolved ≥2 structured-output rungs.

    A model answering some runs on json_schema and others on prompted JSON is
    two populations; its aggregates mix them, so say so. Unrecorded rungs
    (null) are not a rung of their own.
    """
    rungs: dict[str, set[str]] = {}
    for cell in manifest.cells:
        if cell.structured_output_resolved is not None:
            rungs.setdefault(cell.model_id, set()).add(cell.structured_output_resolved)
    return [
        f"WARNING: model '{model}' resolved different structured-output rungs across its "
        f"runs ({', '.join(sorted(found))}) — its aggregated numbers mix measurement conditions"
        for model, found in sorted(rungs.items())
        if len(found) > 1
    ]
