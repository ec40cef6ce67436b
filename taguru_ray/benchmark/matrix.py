"""The matrix run: which cells, in which lanes, and the manifest kept after each.

Cells of models whose endpoints are disjoint measure different machines, so
their lanes run at the same time (one thread each, every child joining the
same Ray cluster); cells that share an endpoint would measure each other's
load, so a lane runs its cells one after another. Cells that start an engine
occupy the GPUs of the type they name: two types are two lanes, and an engine
naming no type shares a lane with every other engine — models in models.json
order, runs 1..N. A stop (SIGINT/SIGTERM) reaches the running children and
no lane starts another cell; the manifest then keeps `finished_at` null.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from taguru_ray.benchmark.cell_run import CellRun, HarnessError
from taguru_ray.benchmark.child import TaskFlags
from taguru_ray.benchmark.corpus import SegmentInfo
from taguru_ray.benchmark.manifest import finished_cells, record_cell
from taguru_ray.benchmark.models_file import ModelEntry
from taguru_ray.store.outdir import OutDir


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port}{parts.path}"


def _touch(ours: set[str], theirs: set[str]) -> bool:
    """Whether two cells would measure each other's load: an endpoint or a GPU type in
    common, or an engine on any GPU beside another engine."""
    if ours & theirs:
        return True
    gpus = (
        {key for key in ours if key.startswith("gpu:")},
        {k for k in theirs if k.startswith("gpu:")},
    )
    return all(gpus) and any("gpu:*" in side for side in gpus)


def lanes(models: tuple[ModelEntry, ...]) -> list[list[ModelEntry]]:
    """Models grouped so that no two lanes share an endpoint, each lane in matrix order."""
    groups: list[tuple[set[str], list[ModelEntry]]] = []
    for model in models:
        mine = {_endpoint(url) for url in model.urls} | {
            key for key in model.hardware() if key.startswith("gpu:")
        }
        touching = [g for g in groups if _touch(g[0], mine)]
        merged: tuple[set[str], list[ModelEntry]] = (set(mine), [])
        for group in touching:
            merged[0].update(group[0])
            merged[1].extend(group[1])
            groups.remove(group)
        merged[1].append(model)
        groups.append(merged)
    order = {model.id: i for i, model in enumerate(models)}
    result = [sorted(g[1], key=lambda m: order[m.id]) for g in groups]
    return sorted(result, key=lambda lane: order[lane[0].id])


@dataclass
class MatrixRun:
    results: OutDir
    manifest: dict[str, Any]
    flags: TaskFlags
    models: tuple[ModelEntry, ...]
    runs: int
    corpus: str
    segments: tuple[SegmentInfo, ...]
    environ: dict[str, str]
    say: Callable[[str], None]
    stop: threading.Event = field(default_factory=threading.Event)
    interrupted: bool = False
    error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _children: set[subprocess.Popen[bytes]] = field(default_factory=set)

    def run(self) -> None:
        done = finished_cells(self.manifest)
        threads = [
            threading.Thread(target=self._lane, args=(lane, done), daemon=True)
            for lane in lanes(self.models)
        ]
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _STOPS}
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # wakes for signals
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, _: Any) -> None:
        if not self.stop.is_set():
            self.say("stopping: the running cells finish their checkpoints; rerun to resume")
        self.stop.set()
        with self._lock:
            children = list(self._children)
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    def _lane(self, lane: list[ModelEntry], done: set[str]) -> None:
        for model in lane:
            for index in range(1, self.runs + 1):
                if self.stop.is_set() or self.error is not None:
                    self.interrupted = self.interrupted or self.stop.is_set()
                    return
                cell = CellRun(
                    results=self.results,
                    run_id=self.manifest["run_id"],
                    flags=self.flags,
                    model=model,
                    run_index=index,
                    corpus=self.corpus,
                    segments=self.segments,
                    environ=self.environ,
                    on_child=self._track,
                )
                if cell.cell.cell_id in done:
                    continue
                self.say(f"cell {cell.cell.cell_id}: running")
                try:
                    entry = cell.run()
                except (HarnessError, OSError) as error:
                    self.error = str(error)
                    return
                self.say(f"cell {entry['cell_id']}: {entry['outcome']}")
                self._record(entry)
                if entry["outcome"] == "interrupted":
                    self.interrupted = True
                    self.stop.set()
                    return

    def _track(self, child: subprocess.Popen[bytes] | None) -> None:
        with self._lock:
            if child is None:
                self._children = {c for c in self._children if c.poll() is None}
            else:
                self._children.add(child)

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.manifest = record_cell(self.manifest, entry)
            write_json(self.results, "manifest.json", self.manifest)


_STOPS = (signal.SIGINT, signal.SIGTERM)


def write_json(results: OutDir, name: str, document: dict[str, Any]) -> None:
    """Pretty JSON (2-space indent), written whole and atomically."""
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    results.write(name, text.encode("utf-8"))
