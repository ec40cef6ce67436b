"""Each dataset format's rows, parsed as a stream: JSONL, CSV and Parquet (ADR 0075).

`ROWS[format](path, columns)` yields a shard's `Row`s in file order, each its
id, its text as UTF-8 bytes, or why it is no segment; `parquet_ids` lists a
Parquet shard from its footer and id column alone. A shard that cannot be read
as a dataset at all raises `ShardBroken`; bytes that stop parsing part-way
raise one of `stream_errors()` from the row they stopped at.

JSONL is parsed line by line with `json` and CSV record by record with `csv`
(every field a string: CSV has no types), so one bad row is refused alone —
Arrow's JSON reader refuses a whole file for one number where a string was.
Parquet is read with `pyarrow.parquet` a record batch of about `BATCH_BYTES` of
text at a time, its pages read as needed (``pre_buffer`` off), however its row
groups were cut.
"""

from __future__ import annotations

import csv
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

DEFAULT_TEXT_COLUMN = "text"
# A JSONL line or CSV record longer than this is refused unread: a text over the 8 MiB
# segment cap can still be escaped to several times its size in JSON.
LINE_LIMIT = 64 * 1024 * 1024
BATCH_BYTES = 4 * 1024 * 1024  # the text a Parquet record batch holds, about
MAX_BATCH_ROWS = 4096
LIST_BATCH_ROWS = 65_536  # ids a listing batch reads


@dataclass(frozen=True)
class Columns:
    """Which columns a dataset's rows are read from (`--text-column`, `--id-column`)."""

    text: str = DEFAULT_TEXT_COLUMN
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """One row as a shard's stream yields it: its id (None when it has none, or without
    an id column), its text as UTF-8 bytes, or the reason it is not a segment."""

    row_id: str | None
    text: bytes | None
    problem: str | None = None


class ShardBroken(Exception):
    """The shard as a whole cannot be read as a dataset; the message says why and the fix."""


def format_of(path: str) -> str:
    for suffix, name in ((".parquet", "parquet"), (".jsonl.gz", "jsonl"), (".jsonl", "jsonl")):
        if path.endswith(suffix):
            return name
    return "csv"


def _open(path: str) -> IO[bytes]:
    """The shard's bytes as a stream, a ``.gz`` one decompressed as it is read."""
    import fsspec

    return fsspec.open(  # type: ignore[no-any-return]
        path, "rb", compression="gzip" if path.endswith(".gz") else None
    ).open()


# The errors a shard's bytes can raise while parsed: a torn gzip stream (EOFError,
# zlib.error, gzip.BadGzipFile — an OSError), a CSV record over the limit (csv.Error),
# and Arrow's own for Parquet (ArrowException subclasses several of these).
def stream_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (OSError, EOFError, ValueError, zlib.error, csv.Error, pa.ArrowException)


def why(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:300]


def _jsonl_rows(path: str, columns: Columns) -> Iterator[Row]:
    with _open(path) as handle:
        first = True
        while True:
            line = handle.readline(LINE_LIMIT + 1)
            if not line:
                return
            if first:
                first = False
                line = line.removeprefix(b"\xef\xbb\xbf")
            if len(line) > LINE_LIMIT and not line.endswith(b"\n"):
                while (more := handle.readline(1 << 20)) and not more.endswith(b"\n"):
                    pass  # the rest of the line, unread
                yield Row(None, None, f"a line over {LINE_LIMIT} bytes — split the row")
                continue
            if not line.strip():
                continue
            yield _json_row(line, columns)


def _json_row(line: bytes, columns: Columns) -> Row:
    try:
        value = json.loads(line)
    except UnicodeDecodeError as error:
        return Row(None, None, f"not valid UTF-8 (byte {error.start}) — re-encode the file")
    except ValueError as error:
        return Row(None, None, f"not a JSON object ({why(error)}) — fix the line")
    except RecursionError:
        return Row(None, None, "JSON nested too deep to read — fix the line")
    if not isinstance(value, dict):
        return Row(None, None, f"a JSON {_json_kind(value)}, not an object — a row is an object")
    row_id, problem = None, None
    if columns.id is not None:
        row_id, problem = _id_value(value.get(columns.id), columns.id, columns.id in value)
    text = value.get(columns.text)
    if problem is None:
        problem = _text_problem(text, columns.text, columns.text in value)
    if problem is not None:
        return Row(row_id, None, problem)
    return Row(row_id, text.encode("utf-8", "surrogatepass"))


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def _id_value(value: Any, column: str, present: bool) -> tuple[str | None, str | None]:
    if isinstance(value, str) and value:
        return value, None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), None
    if not present:
        return None, f"no {column!r} field — give every row an id, or drop --id-column"
    if value is None or value == "":
        empty = "null" if value is None else "empty"
        return None, f"its id ({column!r}) is {empty} — give every row an id"
    return None, f"its id ({column!r}) is a {_json_kind(value)}, not a string or an integer"


def _text_problem(text: Any, column: str, present: bool) -> str | None:
    if isinstance(text, str):
        return None
    if not present:
        return f"no {column!r} field — name the text with --text-column"
    if text is None:
        return f"its text ({column!r}) is null — give the row a text, or drop the row"
    return f"its text ({column!r}) is a {_json_kind(text)}, not a string"


def _csv_rows(path: str, columns: Columns) -> Iterator[Row]:
    csv.field_size_limit(LINE_LIMIT)
    with _open(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape", newline="")
        reader = csv.reader(text)
        header = next(reader, None)
        if header is None:
            return
        where = _csv_columns(header, columns)
        text_at, id_at = where
        for record in reader:
            if not record:
                continue
            yield _csv_row(record, len(header), text_at, id_at, columns)


def _csv_columns(header: list[str], columns: Columns) -> tuple[int, int | None]:
    named = {name: at for at, name in reversed(list(enumerate(header)))}
    shown = ", ".join(header[:12]) + (", …" if len(header) > 12 else "")
    if columns.text not in named:
        raise ShardBroken(
            f"no column {columns.text!r} in its header (columns: {shown}) — name the text "
            "with --text-column"
        )
    if columns.id is not None and columns.id not in named:
        raise ShardBroken(
            f"no column {columns.id!r} in its header (columns: {shown}) — name the id with "
            "--id-column, or drop it to number the rows"
        )
    return named[columns.text], None if columns.id is None else named[columns.id]


def _csv_row(
    record: list[str], width: int, text_at: int, id_at: int | None, columns: Columns
) -> Row:
    row_id: str | None = None
    if id_at is not None:
        row_id = record[id_at] if id_at < len(record) and record[id_at] else None
        if row_id is not None and _undecodable(row_id):
            row_id = None
        if row_id is None:
            return Row(None, None, f"its id ({columns.id!r}) is empty — give every row an id")
    if text_at >= len(record):
        return Row(row_id, None, f"{len(record)} field(s) where the header has {width}")
    text = record[text_at]
    if _undecodable(text):
        return Row(row_id, None, "its text is not valid UTF-8 — re-encode the file")
    return Row(row_id, text.encode("utf-8"))


def _undecodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ---------------------------------------------------------------- Parquet


_TEXT_TYPES = ("string", "large_string", "string_view", "binary", "large_binary", "binary_view")


def _parquet_file(handle: IO[bytes]) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(handle, pre_buffer=False, buffer_size=1 << 20)
    except stream_errors() as error:
        raise ShardBroken(f"not a Parquet file it can read ({why(error)})") from None


def _parquet_columns(parquet: Any, columns: Columns) -> None:
    import pyarrow as pa

    schema = parquet.schema_arrow
    names = schema.names
    shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
    for name, fix in (
        (columns.text, "name the text with --text-column"),
        (columns.id, "name the id with --id-column, or drop it to number the rows"),
    ):
        if name is not None and name not in names:
            raise ShardBroken(f"no column {name!r} (columns: {shown}) — {fix}")
    kind = schema.field(columns.text).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if str(kind) not in _TEXT_TYPES:
        raise ShardBroken(
            f"its text column {columns.text!r} holds {kind}, not strings — name a column of "
            "strings with --text-column"
        )
    if columns.id is not None:
        kind = schema.field(columns.id).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_integer(kind) or str(kind) in _TEXT_TYPES[:3]):
            raise ShardBroken(
                f"its id column {columns.id!r} holds {kind}, not strings or integers — name "
                "another with --id-column"
            )


def _batch_rows(parquet: Any, column: str) -> int:
    """Rows a record batch holds: about BATCH_BYTES of text, by the footer's sizes."""
    metadata = parquet.metadata
    rows = metadata.num_rows
    if not rows:
        return MAX_BATCH_ROWS
    at = parquet.schema_arrow.get_field_index(column)
    size = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        if at < row_group.num_columns:
            size += row_group.column(at).total_uncompressed_size
    per_row = max(1, size // rows)
    return max(1, min(MAX_BATCH_ROWS, BATCH_BYTES // per_row))


def _parquet_rows(path: str, columns: Columns) -> Iterator[Row]:
    import pyarrow as pa

    with _open(path) as handle:
        parquet = _parquet_file(handle)
        wanted = [columns.text] if columns.id is None else [columns.text, columns.id]
        for batch in parquet.iter_batches(
            batch_size=_batch_rows(parquet, columns.text), columns=wanted, use_threads=False
        ):
            texts = batch.column(0)
            if pa.types.is_dictionary(texts.type):
                texts = texts.dictionary_decode()
            texts = texts.cast(pa.large_binary()).to_pylist()
            ids: list[Any] = (
                _id_strings(batch.column(1)).to_pylist() if columns.id else [None] * len(texts)
            )
            for text, row_id in zip(texts, ids, strict=True):
                if text is None:
                    problem = f"its text ({columns.text!r}) is null — give the row a text"
                    yield Row(row_id, None, problem)
                else:
                    yield Row(row_id, text)


def string_array(values: list[str | None]) -> Any:
    """An Arrow large_string array of `values` (None: null), built from its buffers:
    `pa.array` over a Python list imports pandas first, seconds of a driver's start."""
    import numpy as np
    import pyarrow as pa

    encoded = [b"" if value is None else value.encode("utf-8", "surrogatepass") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    valid = np.fromiter((value is not None for value in values), dtype=bool, count=len(values))
    return pa.LargeStringArray.from_buffers(
        len(values),
        pa.py_buffer(offsets),
        pa.py_buffer(b"".join(encoded)),
        pa.py_buffer(np.packbits(valid, bitorder="little")),
        null_count=int(len(values) - valid.sum()),
    )


def _id_strings(ids: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_dictionary(ids.type):
        ids = ids.dictionary_decode()
    return ids.cast(pa.large_string())


def parquet_ids(path: str, columns: Columns) -> tuple[int, Any]:
    """The row count and, with an id column, the ids (an Arrow array), from the footer
    and the id column alone."""
    import pyarrow as pa

    with _open(path) as handle:
        parquet = _parquet_file(handle)
        _parquet_columns(parquet, columns)
        count = parquet.metadata.num_rows
        if columns.id is None:
            return count, None
        try:
            chunks = [
                _id_strings(batch.column(0))
                for batch in parquet.iter_batches(
                    batch_size=LIST_BATCH_ROWS, columns=[columns.id], use_threads=False
                )
            ]
        except stream_errors() as error:
            raise ShardBroken(f"its id column cannot be read ({why(error)})") from None
        ids = pa.concat_arrays(chunks) if chunks else string_array([])
        if len(ids) != count:
            raise ShardBroken(f"its footer says {count} rows, its id column holds {len(ids)}")
        return count, ids


ROWS = {"jsonl": _jsonl_rows, "csv": _csv_rows, "parquet": _parquet_rows}
