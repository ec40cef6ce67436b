"""`manifest.json` and `models.lock.json` of a results directory (BENCHMARK.md §1.5, §1.7).

Pure: building the documents in the contract's key order, and the drift check
that refuses to resume a directory under a changed matrix, corpus or flags.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.corpus import SegmentInfo
from taguru_ray.benchmark.models_file import MODELS_VERSION, ModelEntry

MANIFEST_VERSION = 1
DRIFT_TAIL = " — use a new --out directory, or restore what changed"


class ManifestError(ValueError):
    """manifest.json cannot be resumed; the message says why."""


@dataclass(frozen=True)
class Harness:
    runs_per_model: int
    segments_root: str
    config_path: str
    config_sha256: str


def models_lock(models: tuple[ModelEntry, ...]) -> dict[str, Any]:
    return {
        "taguru_benchmark_models": MODELS_VERSION,
        "models": [model.lock_entry() for model in models],
    }


def model_entry(model: ModelEntry, probe: dict[str, Any]) -> dict[str, Any]:
    """The manifest's model record: identity, what the probe learnt, the GPU it runs on."""
    return {
        "model_id": model.id,
        "model_name": model.model,
        "endpoint": model.url,
        "digest": probe.get("digest"),
        "quantization": probe.get("quantization"),
        "context_window": probe.get("context_window"),
        "structured_output_requested": model.structured_output,
        "timeout_secs": model.timeout_secs,
        "provider_probe": probe["provider_probe"],
        "endpoints": list(model.urls),
        "gpu": model.gpu,
        "gpu_count": model.gpu_count,
        "price_per_gpu_hour": model.price_per_gpu_hour,
        "max_inflight": model.max_inflight,
        "engine": model.engine,
        "accelerator": model.accelerator,
    }


def new_manifest(
    *,
    run_id: str,
    started_at: str,
    version: str,
    harness: Harness,
    segments: tuple[SegmentInfo, ...],
    extraction_settings: dict[str, Any],
    models: list[dict[str, Any]],
    environment: dict[str, Any],
) -> dict[str, Any]:
    return {
        "taguru_benchmark_manifest": MANIFEST_VERSION,
        "run_id": run_id,
        "started_at": started_at,
        "finished_at": None,
        "taguru_version": version,
        "sdk_versions": {},
        "harness": {
            "execution": "subprocess",
            "runs_per_model": harness.runs_per_model,
            "segments_root": harness.segments_root,
            "segment_order": [segment.path for segment in segments],
            "config_path": harness.config_path,
            "config_sha256": harness.config_sha256,
        },
        "extraction_settings": extraction_settings,
        "segments": [segment.entry() for segment in segments],
        "models": models,
        "cells": [],
        "environment": environment,
    }


def parse_manifest(path: str, data: bytes) -> dict[str, Any]:
    """An existing manifest: versions 1..current load, every missing field defaulted."""
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ManifestError(f"{path}: not JSON ({error})") from None
    if not isinstance(manifest, dict):
        raise ManifestError(f"{path}: not a benchmark manifest")
    version = manifest.get("taguru_benchmark_manifest")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ManifestError(f"{path}: taguru_benchmark_manifest is missing — not a manifest")
    if not 1 <= version <= MANIFEST_VERSION:
        raise ManifestError(
            f"{path}: taguru_benchmark_manifest {version} is newer than this build reads "
            f"(1..{MANIFEST_VERSION})"
        )
    manifest.setdefault("run_id", "")
    manifest.setdefault("finished_at", None)
    manifest.setdefault("harness", {})
    manifest.setdefault("extraction_settings", {})
    manifest.setdefault("segments", manifest.get("documents", []))
    manifest.setdefault("models", [])
    manifest.setdefault("cells", [])
    return manifest


def drift(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why `old` (on disk) cannot be resumed under `new` (this invocation), or None."""
    started = old.get("started_at") or "the first run"
    if old["harness"].get("config_sha256") != new["harness"]["config_sha256"]:
        return f"models.json has changed since {started}"
    if old["extraction_settings"] != new["extraction_settings"]:
        changed = sorted(
            key
            for key in set(old["extraction_settings"]) | set(new["extraction_settings"])
            if old["extraction_settings"].get(key) != new["extraction_settings"].get(key)
        )
        return f"benchmark flags differ from the first run's ({', '.join(changed)})"
    if _pairs(old["segments"]) != _pairs(new["segments"]):
        return f"the corpus has changed since {started}"
    if _identities(old["models"]) != _identities(new["models"]):
        return "models.json's model set differs from the first run's"
    return None


def _pairs(segments: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(s.get("segment_id", s.get("document_id")), s.get("sha256")) for s in segments]


def _identities(models: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    return [(m.get("model_id"), m.get("model_name"), m.get("endpoint")) for m in models]


def resumed(old: dict[str, Any], runs: int) -> dict[str, Any]:
    """The manifest on disk, taken over by this invocation: a wider --runs adds cells."""
    harness = dict(old["harness"])
    harness["runs_per_model"] = max(int(harness.get("runs_per_model") or 0), runs)
    return {**old, "harness": harness, "finished_at": None}


def record_cell(manifest: dict[str, Any], cell: dict[str, Any]) -> dict[str, Any]:
    """The manifest with `cell`'s entry replaced (or appended, in order of running)."""
    cells = [c for c in manifest["cells"] if c.get("cell_id") != cell["cell_id"]]
    at = next(
        (i for i, c in enumerate(manifest["cells"]) if c.get("cell_id") == cell["cell_id"]),
        len(cells),
    )
    cells.insert(at, cell)
    return {**manifest, "cells": cells}


def finished_cells(manifest: dict[str, Any]) -> set[str]:
    """Cells never run again: complete or failed (a failure is a measurement)."""
    return {
        str(c["cell_id"])
        for c in manifest["cells"]
        if c.get("outcome") in ("complete", "failed") and "cell_id" in c
    }
