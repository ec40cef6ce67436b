"""What `benchmark search` reads of a results directory: its manifest, and the cells'
batch files (BENCHMARK.md §1.5, §3.1 step 3, §6).

The manifest is read through `benchmark.compare.manifest` (the same version range,
the `segments`/`documents` fallback); this module adds the two things compare does
not need — each cell's `cell_dir` and the extraction context a corpus prefix
defaults to. RESULTS_DIR may be a local path or an fsspec URL: everything is read
through fsspec, nothing is written here.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

import fsspec

from taguru_ray.benchmark.compare.manifest import (
    MANIFEST,
    CompareError,
    SegmentInfo,
    parse_manifest,
    run_label,
)
from taguru_ray.benchmark.compare.serde import as_str, as_u64
from taguru_ray.errors import UsageError

# The harness's own diagnostics file; the reference's extract writes it visible.
DIAGNOSTICS = "diagnostics.jsonl"


@dataclass(frozen=True)
class CellDir:
    """One (model, run) cell as search needs it: where its batches are and how it ended."""

    model_id: str
    run_index: int
    cell_dir: str  # relative to RESULTS_DIR: cells/<model>/runNN
    outcome: str


@dataclass(frozen=True)
class Results:
    """A results directory: its url, the manifest facts search reads, and its cells."""

    url: str
    run_id: str
    context: str  # extraction_settings.context: the default corpus prefix
    segments: tuple[SegmentInfo, ...]
    model_ids: tuple[str, ...]  # manifest order, each once
    cells: tuple[CellDir, ...]

    def cell(self, model_id: str, run_index: int) -> CellDir | None:
        return next(
            (c for c in self.cells if c.model_id == model_id and c.run_index == run_index), None
        )

    def run_indexes(self) -> list[int]:
        return sorted({c.run_index for c in self.cells})


def read_results(url: str) -> Results:
    """RESULTS_DIR's manifest; UsageError (exit 2) when it is missing, not JSON, or a
    version this build does not read."""
    path = posixpath.join(url.rstrip("/"), MANIFEST) if url.rstrip("/") else MANIFEST
    try:
        with fsspec.open(path, "rb") as handle:
            data = handle.read()
    except (OSError, ValueError, ImportError) as error:
        raise UsageError(
            f"{path}: cannot read it ({error}) — give a directory benchmark extract wrote"
        ) from None
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(f"{path}: not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: not a benchmark manifest (not a JSON object)")
    try:
        manifest = parse_manifest(raw)
    except CompareError as error:
        raise UsageError(str(error)) from None
    settings = raw.get("extraction_settings")
    context = as_str(settings.get("context")) if isinstance(settings, dict) else None
    return Results(
        url=url,
        run_id=manifest.run_id,
        context=context or "",
        segments=tuple(manifest.segments.values()),
        model_ids=tuple(dict.fromkeys(m.model_id for m in manifest.models if m.model_id)),
        cells=tuple(_cell(c) for c in raw.get("cells") or [] if isinstance(c, dict)),
    )


def _cell(entry: dict[str, Any]) -> CellDir:
    model_id = as_str(entry.get("model_id")) or ""
    run_index = as_u64(entry.get("run_index")) or 0
    default = f"cells/{model_id}/{run_label(run_index)}"
    return CellDir(
        model_id=model_id,
        run_index=run_index,
        cell_dir=as_str(entry.get("cell_dir")) or default,
        outcome=as_str(entry.get("outcome")) or "",
    )


class ResultsReader:
    """The batch files of a cell, read through fsspec (a local path or any URL)."""

    def __init__(self, url: str) -> None:
        self.fs, root = fsspec.core.url_to_fs(url)
        self.root = root.rstrip("/") or root

    def batch_files(self, cell_dir: str) -> list[str]:
        """Every visible ``*.jsonl`` directly in the cell folder but diagnostics, sorted,
        as paths relative to RESULTS_DIR. Hidden names are skipped: this build's extract
        keeps its sidecar as ``.diagnostics.jsonl`` and its trace under ``.extract-*/``.
        OSError when the folder cannot be listed."""
        folder = posixpath.join(self.root, cell_dir)
        entries = self.fs.ls(folder, detail=True, refresh=True)
        names = sorted(
            posixpath.basename(entry["name"].rstrip("/"))
            for entry in entries
            if entry.get("type") == "file"
        )
        return [
            posixpath.join(cell_dir, name)
            for name in names
            if name.endswith(".jsonl") and name != DIAGNOSTICS and not name.startswith(".")
        ]

    def read(self, relative: str) -> bytes:
        return bytes(self.fs.cat_file(posixpath.join(self.root, relative)))
