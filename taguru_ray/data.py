"""taguru-ray over a Ray Dataset: ``taguru_ray.data.extract(ds, out=…, context=…)``.

    import ray, taguru_ray.data
    ds = ray.data.from_items([{"path": "notes/a.md", "text": "# A\n\nSake is…"}, …])
    results = taguru_ray.data.extract(ds, out="s3://bucket/run", context="5b0d…")
    results.filter(lambda row: row["status"] == "failed").show()

A `pyarrow.Table` is taken the same way, and ``text_column=``/``id_column=`` name
other columns than ``text`` and ``path`` (a dataset's files on disk or a bucket are
read by `taguru_ray.extract(paths, text_column=…, id_column=…)` instead, as a stream).

It is `taguru_ray.extract` with the segments taken from the dataset's rows instead of
files: the same engine run (`taguru_ray.api.run`, through the driver's in-memory
``staged`` segments that agent sessions use too), the same --out, skip index,
checkpoints, records and exit rules, and the same settings by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from taguru_ray.api import RunResult, extract_staged
from taguru_ray.api_settings import ExtractSettings
from taguru_ray.contract.names import TRACE, attempts_name, output_name
from taguru_ray.errors import UsageError
from taguru_ray.pricing.table import Prices
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.metrics import fold_segment_runs
from taguru_ray.tools.records import SegmentFiles, read_lines

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = ["COLUMNS", "extract"]

COLUMNS = ("path", "text")  # what every input row needs
KEPT = ("written", "unchanged")  # statuses whose source file is this run's result


def extract(
    ds: ray.data.Dataset | pa.Table,
    *,
    out: str,
    context: str,
    echo: Callable[[str], None] | None = None,
    **settings: Unpack[ExtractSettings],
) -> ray.data.Dataset:
    """Extract every ``{path, text}`` row of `ds` (a Ray Dataset or a `pyarrow.Table`)
    into `out` for `context`; one result row per input row, in the input's order.
    ``text_column`` and ``id_column`` name the columns when they are not ``text`` and
    ``path`` (an integer id is written in decimal).

    ``path`` is the source name the segment gets — in its prompts, its records and its
    source file's name — and ``text`` its content (a string, or UTF-8 bytes); other
    columns are ignored. A row without either column, a path that is not a non-empty
    string, a text that is neither string nor bytes, or a path given twice is one
    `UsageError` naming the row, before anything runs. Settings are
    `taguru_ray.extract`'s typed keyword arguments (`taguru_ray.ExtractSettings`).

    The rows are gathered to the driver — the process calling this — because the
    engine reads segments there (in row order), hashes them against the skip index and
    commits their records to --out from there; workers get them in batches. That needs
    the whole corpus's text in the driver's memory at once (about its size in bytes as
    UTF-8, plus Python's per-row overhead), and then the source files' text for the
    results; a corpus larger than the driver's memory belongs in files
    (`taguru_ray.extract` over a folder or URL reads them a batch at a time). It joins
    the Ray the dataset runs on and never shuts it down.

    The result's columns: ``path``; ``status`` — ``written``, ``unchanged`` (the skip
    index matched: nothing asked), ``failed``, ``interrupted`` or ``not reached`` (a
    stopped run); ``output`` the source file's path or URL in --out (null unless
    written or unchanged); ``output_text`` its JSONL text (null likewise);
    ``input_tokens`` / ``output_tokens`` this run's live completions for the segment
    (0 when unchanged); ``completions``; ``error`` a failed segment's failure line.
    """
    import ray.data

    columns = (settings.get("id_column") or "path", settings.get("text_column") or "text")
    staged = _gather(_rows(ds), columns)
    result = extract_staged(staged, out=out, context=context, echo=echo, **settings)
    return ray.data.from_arrow(results(result))


def _rows(ds: Any) -> Iterable[Mapping[str, Any]]:
    """The rows of a Ray Dataset, or of a `pyarrow.Table` a record batch at a time."""
    if hasattr(ds, "iter_rows"):
        return ds.iter_rows()  # type: ignore[no-any-return]
    if hasattr(ds, "to_batches"):
        return (row for batch in ds.to_batches() for row in batch.to_pylist())
    raise UsageError(f"expected a Ray Dataset or a pyarrow.Table, got {type(ds).__name__}")


def _gather(
    rows: Iterable[Mapping[str, Any]], columns: tuple[str, str] = COLUMNS
) -> dict[str, bytes]:
    """Source name -> the segment's bytes, in row order; a bad row is a UsageError
    naming it. `columns`: the (name, text) columns."""
    name_column, text_column = columns
    staged: dict[str, bytes] = {}
    for number, row in enumerate(rows):
        missing = [column for column in columns if column not in row]
        if missing:
            raise UsageError(
                f"dataset row {number}: no {' or '.join(repr(c) for c in missing)} column — "
                f"each row needs {{{name_column!r}: the source name, {text_column!r}: its "
                f"content}} (columns: {', '.join(map(str, row)) or 'none'})"
            )
        path, text = row[name_column], row[text_column]
        if isinstance(path, int) and not isinstance(path, bool):
            path = str(path)
        if not isinstance(path, str) or not path.strip():
            raise UsageError(
                f"dataset row {number}: {name_column!r} must be a non-empty string or an integer"
            )
        if path in staged:
            raise UsageError(
                f"dataset row {number}: path {path!r} is given twice — each segment needs "
                "its own path (it names the segment's source file and records)"
            )
        if isinstance(text, str):
            staged[path] = text.encode("utf-8")
        elif isinstance(text, bytes | bytearray):
            staged[path] = bytes(text)
        else:
            raise UsageError(
                f"dataset row {number} ({path}): {text_column!r} must be a string or bytes, "
                f"not {type(text).__name__}"
            )
    if not staged:
        raise UsageError("the dataset has no rows: nothing to extract")
    return staged


def results(result: RunResult) -> pa.Table:
    """One row per segment of the run: its status, source file and this run's tokens."""
    import pyarrow as pa

    out = OutDir(result.out)
    kept = [s for s in result.segments if s.status in KEPT]
    texts = out.read_many([output_name(s.source) for s in kept])
    asked = [s.source for s in result.segments if s.completions]
    logs = out.read_many([f"{TRACE}/{attempts_name(source)}" for source in asked])
    rows = []
    for segment in result.segments:
        text = texts.get(output_name(segment.source)) if segment.status in KEPT else None
        tokens = (0, 0)
        log = logs.get(f"{TRACE}/{attempts_name(segment.source)}")
        if segment.completions and log is not None:
            files = SegmentFiles(segment.source, None, read_lines(log), None)
            fold = fold_segment_runs(files, Prices()).get(result.run_id)
            tokens = (fold.input_tokens, fold.output_tokens) if fold else tokens
        failed = segment.status == "failed"
        rows.append(
            {
                "path": segment.source,
                "status": segment.status,
                "output": segment.output if text is not None else None,
                "output_text": text.decode("utf-8") if text is not None else None,
                "input_tokens": tokens[0],
                "output_tokens": tokens[1],
                "completions": segment.completions,
                "error": segment.notes[-1] if failed and segment.notes else None,
            }
        )
    schema = pa.schema(
        [
            ("path", pa.string()),
            ("status", pa.string()),
            ("output", pa.string()),
            ("output_text", pa.string()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("completions", pa.int64()),
            ("error", pa.string()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)
