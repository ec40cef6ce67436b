"""Reading a results directory once: manifest, runs files, written batches (BENCHMARK.md §2.1).

`load_results` turns every manifest cell's runs file into attempt rows and
one `DocRow` per segment the cell started or ended, and reads each written
segment's batch. Runs files use the segment names of BENCHMARK.md §6
(`kind: "segment"`, `segment_id`, `segment_sha256`) or the earlier document
ones; both read alike. Nothing here computes a metric.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.benchmark.compare.batch import BatchStats, analyze_batch
from taguru_ray.benchmark.compare.manifest import (
    MANIFEST,
    CellInfo,
    CompareError,
    Manifest,
    parse_manifest,
)
from taguru_ray.benchmark.compare.serde import (
    as_bool,
    as_f64,
    as_str,
    as_u64,
    lines,
    parse_line,
)

Warn = Callable[[str], None]
SEGMENT_KINDS = ("segment", "document")  # the newest name, then REF-2608's


@dataclass(frozen=True)
class AttemptRow:
    """One `kind: "attempt"` line with the cell it belongs to."""

    cell_id: str
    model_id: str
    document_id: str
    chunk_index: int
    stage: str
    state: str
    attempt: int
    length_limited: bool
    elapsed_seconds: float
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    provider_metadata_present: bool
    parse_error_present: bool
    validation_rejected: bool


@dataclass
class _End:
    ts: float
    outcome: str | None
    counts: dict[str, int | None]
    batch_path: str | None


END_COUNTS = ("associations", "concepts", "labels", "questions", "duplicates", "dropped")


@dataclass(frozen=True)
class DocRow:
    """One (cell, segment): its start/end records joined, and its batch when written."""

    cell_id: str
    model_id: str
    run_index: int
    document_id: str
    start_ts: float | None
    end_ts: float | None
    outcome: str | None
    counts: dict[str, int | None]
    elapsed_seconds_sum: float
    input_tokens_sum: int | None
    batch: BatchStats | None

    @property
    def associations(self) -> int | None:
        return self.counts.get("associations")


@dataclass
class Loaded:
    """Everything compare computes from, read once."""

    manifest: Manifest
    runs_files: list[str] = field(default_factory=list)
    attempts: list[AttemptRow] = field(default_factory=list)
    doc_rows: list[DocRow] = field(default_factory=list)
    finish_reasons: set[str] = field(default_factory=set)


def read_text(fs: Any, path: str) -> str:
    """A file's UTF-8 text through the fsspec filesystem (OSError on any failure)."""
    try:
        data = fs.cat_file(path)
    except OSError:
        raise
    except Exception as error:  # object stores raise their own types; say what failed
        raise OSError(str(error)) from error
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise OSError(f"not UTF-8: {error}") from None


def load_manifest(fs: Any, root: str) -> Manifest:
    path = posixpath.join(root, MANIFEST)
    try:
        text = read_text(fs, path)
    except OSError as error:
        raise CompareError(f"{path}: cannot read the manifest: {error}") from None
    parsed, data = parse_line(text.strip())
    if not parsed or not isinstance(data, dict):
        raise CompareError(f"{path}: not a JSON object")
    return parse_manifest(data)


def load_results(fs: Any, root: str, warn: Warn) -> Loaded:
    """Read the manifest and every cell's runs file and batches."""
    loaded = Loaded(load_manifest(fs, root))
    for cell in loaded.manifest.cells:
        path = posixpath.join(root, cell.runs_file)
        try:
            text = read_text(fs, path)
        except OSError as error:
            raise CompareError(
                f"manifest.json names cell {cell.cell_id} at {cell.runs_file} but it "
                f"could not be read: {error}"
            ) from None
        loaded.runs_files.append(cell.runs_file)
        _read_cell(fs, root, cell, text, loaded, warn)
    return loaded


def _read_cell(fs: Any, root: str, cell: CellInfo, text: str, loaded: Loaded, warn: Warn) -> None:
    starts: dict[str, float] = {}
    ends: dict[str, _End] = {}
    attempts: list[AttemptRow] = []
    for line in lines(text):
        parsed, record = parse_line(line)
        if not parsed or not isinstance(record, dict):
            continue
        kind = record.get("kind")
        if kind == "attempt":
            row = _attempt(cell, record)
            attempts.append(row)
            if row.finish_reason is not None:
                loaded.finish_reasons.add(row.finish_reason)
        elif kind in SEGMENT_KINDS:
            segment_id = _segment_id(record)
            ts = as_f64(record.get("ts")) or 0.0
            phase = record.get("phase")
            if phase == "start":
                # A resumed cell logs a second start; the span runs from the earliest.
                starts[segment_id] = min(ts, starts.get(segment_id, ts))
            elif phase == "end":
                # A re-processed segment logs a fresh end: the last is the state it ended in.
                ends[segment_id] = _End(
                    ts=ts,
                    outcome=as_str(record.get("outcome")),
                    counts={name: as_u64(record.get(name)) for name in END_COUNTS},
                    batch_path=as_str(record.get("batch_path")),
                )
    by_segment: dict[str, list[AttemptRow]] = {}
    for row in attempts:
        by_segment.setdefault(row.document_id, []).append(row)
    for segment_id in sorted(starts.keys() | ends.keys()):
        end = ends.get(segment_id)
        own = by_segment.get(segment_id, [])
        tokens = [row.input_tokens for row in own if row.input_tokens is not None]
        loaded.doc_rows.append(
            DocRow(
                cell_id=cell.cell_id,
                model_id=cell.model_id,
                run_index=cell.run_index,
                document_id=segment_id,
                start_ts=starts.get(segment_id),
                end_ts=end.ts if end else None,
                outcome=end.outcome if end else None,
                counts=dict(end.counts) if end else dict.fromkeys(END_COUNTS),
                elapsed_seconds_sum=sum(row.elapsed_seconds for row in own),
                input_tokens_sum=sum(tokens) if tokens else None,
                batch=_batch(fs, root, loaded.manifest, segment_id, end, warn),
            )
        )
    loaded.attempts.extend(attempts)


def _batch(
    fs: Any, root: str, manifest: Manifest, segment_id: str, end: _End | None, warn: Warn
) -> BatchStats | None:
    """The written batch's stats; None when not written or unreadable (with a warning)."""
    if end is None or end.outcome != "written":
        return None
    segment = manifest.segments.get(segment_id)
    if segment is None:
        warn(
            f"segment {segment_id} has no manifest.json entry — "
            "extraction.paragraph_out_of_range cannot be checked for it"
        )
    if end.batch_path is None:
        return None
    path = posixpath.join(root, end.batch_path)
    try:
        text = read_text(fs, path)
    except OSError as error:
        warn(f"{end.batch_path}: {error} — excluded from the batch-derived metrics")
        return None
    return analyze_batch(text, segment.paragraph_count if segment else None)


def _segment_id(record: dict[str, Any]) -> str:
    return as_str(record.get("segment_id")) or as_str(record.get("document_id")) or ""


def _attempt(cell: CellInfo, record: dict[str, Any]) -> AttemptRow:
    metadata = record.get("provider_metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    return AttemptRow(
        cell_id=cell.cell_id,
        model_id=cell.model_id,
        document_id=_segment_id(record),
        chunk_index=as_u64(record.get("chunk_index")) or 0,
        stage=as_str(record.get("stage")) or "",
        state=as_str(record.get("state")) or "",
        attempt=as_u64(record.get("attempt")) or 0,
        length_limited=as_bool(record.get("length_limited")) or False,
        elapsed_seconds=as_f64(record.get("elapsed_seconds")) or 0.0,
        finish_reason=as_str(meta.get("finish_reason")),
        input_tokens=as_u64(meta.get("input_tokens")),
        output_tokens=as_u64(meta.get("output_tokens")),
        total_tokens=as_u64(meta.get("total_tokens")),
        provider_metadata_present=record.get("provider_metadata") is not None,
        parse_error_present=record.get("parse_error") is not None,
        validation_rejected=record.get("validation_issues") is not None,
    )
