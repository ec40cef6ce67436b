"""Dataset shards as segments: a row a segment, read as a stream (ADR 0075).

A ``.parquet``, ``.jsonl``, ``.jsonl.gz`` or ``.csv`` file is a *shard*; each of
its rows is a segment whose text is the row's ``--text-column`` (default
``text``) and whose source is the shard's path as seen, ``#`` and the row's id:
its ``--id-column`` value (a string, or an integer written in decimal), or
without one its position in the shard (0-based, in file order; a JSONL file's
blank lines are not rows).

A shard is read twice, each time as a stream, never whole:

- **listed** when the corpus is expanded (`shard_part`): Parquet's footer (and
  its id column alone, when there is one); a JSONL or CSV file parsed through
  once for its row count and ids. The ids are one Arrow array, duplicates and
  missing ids found there in C. A shard whose footer or header cannot be read,
  or which lacks a named column, is one `Broken` source — one line, the other
  shards go on;
- **streamed** when the driver scans it (`ShardRows.read`, in row order, one
  batch at a time: `Corpus.serial_end`): Parquet a record batch at a time
  through `pyarrow.parquet` (a few MiB of text, however the row groups were
  cut, pages read as needed — ``pre_buffer`` off), JSONL a line at a time, CSV
  a record at a time. The row's text bytes are hashed for the manifest skip
  and, for a row to extract, sent to its worker as a file's bytes are.

A row that is not a segment as it is — a null, missing or non-string text, a
duplicate or missing id, a JSON line that does not parse — is refused alone,
by name and row (`SegmentRefused`): one line, the other rows go on, exit 1.
A JSONL shard is parsed line by line with `json` rather than Arrow's reader,
which refuses a whole file for one number where a string was (measured; see
the ADR), and a CSV file with `csv`, every field a string as CSV has no types.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from taguru_ray.contract.names import row_source
from taguru_ray.pipeline.read import SegmentRefused
from taguru_ray.store.corpus import Broken
from taguru_ray.store.shapes import DATASET, Locator, Part, Shape
from taguru_ray.store.shard_formats import (
    ROWS,
    Columns,
    Row,
    ShardBroken,
    format_of,
    parquet_ids,
    stream_errors,
    string_array,
    why,
)

__all__ = ["Columns", "ShardRows", "shard_part"]

SOURCES_SLICE = 65_536  # ids made Python strings at a time by `ShardRows.sources`


class Listing:
    """What listing a JSONL or CSV shard found: a row count, the ids, the rows it refused,
    and where its bytes stopped parsing (the rows after that were not listed)."""

    def __init__(self) -> None:
        self.count = 0
        self.ids: list[str | None] = []
        self.problems: dict[int, str] = {}
        self.cut: str | None = None


def _list_rows(path: str, columns: Columns) -> Listing:
    listing = Listing()
    rows = ROWS[format_of(path)](path, columns)
    try:
        for row in rows:
            if columns.id is not None:
                listing.ids.append(row.row_id)
            if row.problem is not None:
                listing.problems[listing.count] = row.problem
            listing.count += 1
    except ShardBroken:
        raise
    except stream_errors() as error:
        if not listing.count:
            raise ShardBroken(f"cannot be read ({why(error)})") from None
        listing.cut = why(error)
    return listing


class ShardRows:
    """A dataset shard's rows (`Part`): sources made from its ids, bytes from a stream
    read once, in order (`serial`), by whichever scan batch asks next."""

    serial = True

    def __init__(
        self,
        path: str,
        columns: Columns,
        count: int,
        ids: Any,
        refused: dict[int, str],
        whole: bool = True,
    ) -> None:
        self.path = path
        # False: its bytes stopped parsing part-way, so rows past there were not listed —
        # `--prune` judges none of its rows gone (`store/cover.py`).
        self.whole = whole
        self._columns = columns
        self._count = count
        self._ids = ids  # an Arrow array of strings (nulls: no id), or None: positions
        self._refused = refused  # offset → why, found when listed
        self._lock = threading.Lock()
        self._stream: Iterator[Row] | None = None
        self._next = 0  # the offset the stream yields next
        self._dead: str | None = None  # why the stream stopped, when it failed

    def __len__(self) -> int:
        return self._count

    def row_id(self, offset: int) -> str | None:
        if self._ids is None:
            return str(offset)
        value = self._ids[offset].as_py()
        return value if value else None

    def source(self, offset: int) -> str:
        row_id = self.row_id(offset)
        return row_source(self.path, row_id if row_id is not None else f"(row {offset})")

    def sources(self) -> Iterator[str]:
        """Every row's source in order, its ids read from Arrow a slice at a time (a
        scalar a row costs several times more: the orphan check walks them all)."""
        if self._ids is None:
            yield from (row_source(self.path, str(offset)) for offset in range(self._count))
            return
        for start in range(0, self._count, SOURCES_SLICE):
            ids = self._ids.slice(start, SOURCES_SLICE).to_pylist()
            for offset, row_id in enumerate(ids, start):
                yield row_source(self.path, row_id if row_id else f"(row {offset})")

    def shape(self, offset: int) -> Shape:
        return DATASET

    def locator(self, offset: int) -> Locator:
        return Locator(self.path, offset, self.row_id(offset))

    def read(self, offset: int) -> bytes:
        """Row `offset`'s text: the stream read on to it (opened again from the start
        when an earlier row is asked for — a re-read, never the scan's order)."""
        with self._lock:
            row = self._advance(offset)
        # The source names the row by its position already, unless it names it by an id.
        at = f"row {offset}: " if self._ids is not None and self.row_id(offset) else ""
        if offset in self._refused:
            raise SegmentRefused(f"{at}{self._refused[offset]}")
        if row.problem is not None:
            raise SegmentRefused(f"{at}{row.problem}")
        if self._ids is not None and row.row_id != self.row_id(offset):
            raise SegmentRefused(
                f"row {offset}: its id is {row.row_id!r} now — the shard changed while it was "
                "read; run again"
            )
        assert row.text is not None
        return row.text

    def _advance(self, offset: int) -> Row:
        if self._stream is None or offset < self._next:
            if self._stream is None and self._dead is not None and offset >= self._next:
                # Dead past an earlier row: never opened again for a later one.
                self._next = offset + 1
                told = f"not read: the shard cannot be read past an earlier row ({self._dead})"
                return Row(None, None, told)
            self._close()
            self._stream = ROWS[format_of(self.path)](self.path, self._columns)
            self._next = 0
            self._dead = None
        found = Row(None, None, "not reached")
        while self._next <= offset:
            if self._dead is not None:
                self._next = offset + 1
                told = f"not read: the shard cannot be read past an earlier row ({self._dead})"
                return Row(None, None, told)
            try:
                row = next(self._stream, None)
            except stream_errors() as error:
                self._dead = why(error)
                self._next += 1
                told = f"the shard cannot be read from here ({self._dead}) — nor the rows after it"
                found = Row(None, None, told)
                continue
            if row is None:
                self._dead = "it ended early"
                told = "the shard ended before this row — it changed while it was read; run again"
                found = Row(None, None, told)
                self._next += 1
                continue
            self._next += 1
            found = row
        if self._next >= self._count or self._dead is not None:
            self._close()  # the last row read: its batch and file are let go at once
        return found

    def _close(self) -> None:
        """End the stream: a suspended generator holds its open file and its last batch
        (a few MiB of text) for as long as it is referenced."""
        stream, self._stream = self._stream, None
        if stream is not None and hasattr(stream, "close"):
            stream.close()


def shard_part(path: str, columns: Columns) -> Part:
    """A shard listed: its rows (`ShardRows`), or one `Broken` source saying why not."""
    try:
        if format_of(path) == "parquet":
            count, ids = parquet_ids(path, columns)
            refused: dict[int, str] = {}
            cut = None
        else:
            listing = _list_rows(path, columns)
            count, ids, refused, cut = listing.count, None, listing.problems, listing.cut
            if listing.cut is not None:
                refused[count] = (
                    f"the shard cannot be read from here ({listing.cut}) — the rows after it "
                    "are not read either; fix the file"
                )
                count += 1
                listing.ids.append(None)
            if columns.id is not None:
                ids = string_array(listing.ids)
    except ShardBroken as broken:
        return Broken(path, str(broken), DATASET)
    except FileNotFoundError:
        return Broken(path, "no such file", DATASET)
    except stream_errors() as error:
        return Broken(path, f"cannot be read ({why(error)})", DATASET)
    if ids is not None:
        for offset, problem in _id_problems(ids, columns.id or "").items():
            refused.setdefault(offset, problem)
    return ShardRows(path, columns, count, ids, refused, whole=cut is None)


def _id_problems(ids: Any, column: str) -> dict[int, str]:
    """Rows whose id is missing or repeats an earlier row's: found in C, the repeats'
    positions only held."""
    # No Python value enters a kernel: converting one imports pandas (seconds) first.
    import pyarrow as pa
    import pyarrow.compute as pc

    problems: dict[int, str] = {}
    empty = pc.invert(pc.binary_length(ids).cast(pa.bool_()))
    for offset in pc.indices_nonzero(pc.or_kleene(pc.is_null(ids), empty)).to_pylist():
        problems[offset] = f"no id in {column!r} — give every row an id"
    # Sorted (stably: ties keep their rows' order), a repeat sits after the first of its
    # run; only those rows' positions come back to Python.
    order = pc.sort_indices(ids)
    ranked = ids.take(order)
    same = pc.equal(ranked.slice(1), ranked.slice(0, max(0, len(ranked) - 1)))
    first = -1
    previous = -2
    for at in pc.indices_nonzero(same).to_pylist():
        if at != previous + 1:  # a new run of one id
            first = order[at].as_py()
        previous = at
        offset = order[at + 1].as_py()
        problems.setdefault(
            offset,
            f"its id {ids[offset].as_py()!r} is row {first}'s too — ids must be unique in a shard",
        )
    return problems
