"""A cell's diagnostics sidecar, transcribed into its runs file (BENCHMARK.md §1.6).

Pure: `Transcriber.take(record, ts)` turns one sidecar record into the runs
lines it means — a segment's `start` the first time it is seen, its chunks,
its attempts denormalised with the cell and the dictionary's chunk facts, its
end — and `close` synthesises a failed end for every segment left open. Lines
are written with sorted keys (the reference serialises them unordered); the
newest names (`segment`, `segment_id`, `segment_sha256`) as §6 observed.
The `gateway` record the sidecar ends with is kept for the saturation figures,
and an `engine` record (a cell that started its own replicas) for the cell's
engine, version and GPU type; neither is transcribed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taguru_ray.benchmark.corpus import SegmentInfo

END_COUNTS = ("associations", "concepts", "labels", "questions", "duplicates", "dropped")


@dataclass(frozen=True)
class Cell:
    cell_id: str
    model_id: str
    model_name: str
    run_index: int
    cell_dir: str  # relative to the results directory: cells/<id>/runNN
    out_dir: str  # the cell's --out as the child sees it (an absolute path or URL)


@dataclass
class Transcriber:
    cell: Cell
    segments: dict[str, SegmentInfo]  # by source path
    attempts: int = 0  # seeded from the runs file on resume: `cell` totals are cumulative
    written: int = 0
    gateway: dict[str, Any] | None = None
    engine: dict[str, Any] | None = None
    completed_at: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    _open: dict[str, SegmentInfo] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    def take(self, record: dict[str, Any], ts: float) -> list[dict[str, Any]]:
        kind = record.get("type", record.get("kind"))
        if kind == "gateway":
            self.gateway = record
            return []
        if kind == "engine":
            self.engine = record
            return []
        segment = self.segments.get(str(record.get("source")))
        if segment is None or kind not in ("chunk", "attempt", "segment"):
            return []  # a run record, a source outside the dictionary, an unknown type
        lines = []
        if segment.path not in self._seen:
            self._seen.add(segment.path)
            self._open[segment.path] = segment
            lines.append(self._start(segment, ts))
        if kind == "chunk":
            lines.append(self._chunk(record, segment, ts))
        elif kind == "attempt":
            self.attempts += 1
            self.completed_at.append((ts, record))
            lines.append(self._attempt(record, segment, ts))
        else:
            self.written += 1
            self._open.pop(segment.path, None)
            lines.append(self._end(record, segment, ts))
        return lines

    def close(self, outcome: str, exit_code: int | None, ts: float) -> list[dict[str, Any]]:
        """The lines after the child's exit: nothing for an interrupted cell (it resumes),
        else a failed end per open segment and the `cell` line."""
        if outcome == "interrupted":
            return []
        lines = [self._failed(segment, ts) for segment in self._open.values()]
        self._open.clear()
        lines.append(
            {
                "kind": "cell",
                "ts": ts,
                "cell_id": self.cell.cell_id,
                "outcome": outcome,
                "segments_written": self.written,
                "attempts_total": self.attempts,
                "exit_code": exit_code,
            }
        )
        return [_sorted(line) for line in lines]

    def _start(self, segment: SegmentInfo, ts: float) -> dict[str, Any]:
        return _sorted(
            {
                "kind": "segment",
                "phase": "start",
                "ts": ts,
                "cell_id": self.cell.cell_id,
                "segment_id": segment.segment_id,
                "source": segment.path,
                "segment_sha256": segment.sha256,
                "chunk_total": len(segment.chunks),
            }
        )

    def _chunk(self, record: dict[str, Any], segment: SegmentInfo, ts: float) -> dict[str, Any]:
        keys = ("source", "chunk_index", "chunk_total", "chunk_sha256", "chunk_bytes")
        line = {key: record.get(key) for key in keys}
        line.update(paragraph_first=record.get("paragraph_first"))
        line.update(paragraph_last=record.get("paragraph_last"))
        line.update(kind="chunk", ts=ts, cell_id=self.cell.cell_id)
        line.update(segment_id=segment.segment_id)
        return _sorted(line)

    def _attempt(self, record: dict[str, Any], segment: SegmentInfo, ts: float) -> dict[str, Any]:
        line = {key: value for key, value in record.items() if key != "type"}
        line.update(
            kind="attempt",
            ts=ts,
            cell_id=self.cell.cell_id,
            model_id=self.cell.model_id,
            run_index=self.cell.run_index,
            segment_id=segment.segment_id,
            segment_sha256=segment.sha256,
        )
        index = record.get("chunk_index")
        chunk = next((c for c in segment.chunks if c["chunk_index"] == index), None)
        if chunk is not None:
            line.update(
                chunk_sha256=chunk["chunk_sha256"],
                paragraph_first=chunk["paragraph_first"],
                paragraph_last=chunk["paragraph_last"],
            )
        return _sorted(line)

    def _end(self, record: dict[str, Any], segment: SegmentInfo, ts: float) -> dict[str, Any]:
        line: dict[str, Any] = {
            "kind": "segment",
            "phase": "end",
            "ts": ts,
            "cell_id": self.cell.cell_id,
            "segment_id": segment.segment_id,
            "source": segment.path,
            "segment_sha256": segment.sha256,
            "outcome": "written",
            "batch_path": self._anchored(record.get("batch_path")),
        }
        line.update({key: record.get(key) for key in END_COUNTS})
        return _sorted(line)

    def _failed(self, segment: SegmentInfo, ts: float) -> dict[str, Any]:
        line: dict[str, Any] = {
            "kind": "segment",
            "phase": "end",
            "ts": ts,
            "cell_id": self.cell.cell_id,
            "segment_id": segment.segment_id,
            "source": segment.path,
            "segment_sha256": segment.sha256,
            "outcome": "failed",
            "batch_path": None,
        }
        line.update(dict.fromkeys(END_COUNTS))
        return line

    def _anchored(self, batch_path: Any) -> Any:
        """The written file relative to the results directory when it is in the cell's
        --out; passed through as it was otherwise."""
        if not isinstance(batch_path, str):
            return batch_path
        out = self.cell.out_dir.rstrip("/") + "/"
        if batch_path.startswith(out):
            return f"{self.cell.cell_dir}/{batch_path[len(out) :]}"
        return batch_path


def _sorted(line: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(line.items()))


def seeded_counts(lines: list[dict[str, Any]]) -> tuple[int, int]:
    """(attempts, written) an earlier invocation recorded in this cell's runs file."""
    attempts = sum(1 for line in lines if line.get("kind") == "attempt")
    written = sum(
        1
        for line in lines
        if line.get("kind") in ("segment", "document")
        and line.get("phase") == "end"
        and line.get("outcome") == "written"
    )
    return attempts, written


def runs_header(cell: Cell, run_id: str, prompt_version: int) -> dict[str, Any]:
    return _sorted(
        {
            "kind": "header",
            "taguru_benchmark_runs": 1,
            "run_id": run_id,
            "cell_id": cell.cell_id,
            "model_id": cell.model_id,
            "model_name": cell.model_name,
            "run_index": cell.run_index,
            "prompt_version": prompt_version,
        }
    )
