"""The manifest's entries in memory: a million of them in tens of megabytes (ADR 0042).

A row is what one entry holds once the fields every entry of a run shares are
set apart: (sha256, source_id, output, shared tuple), the shared tuple interned,
and the usual row (no source id, the output named as its source names it, the
run's first shared tuple) is its 32-byte digest alone (ADR 0026).

The rows read from the single file arrive sorted by path, and are kept sorted:
the paths front-coded (each stores only what differs from the path before it,
in blocks of `BLOCK` that start with a whole path), the digests in one byte
string, 32 bytes a row, and only the unusual rows as objects. A lookup finds
its block by bisection over the blocks' first paths and decodes that block
once; the driver asks in name order, so a block is decoded once per `BLOCK`
lookups. What arrives out of order (an entry recorded during the run, a
journal entry, a hand-edited file) goes to a plain dict beside the sorted
rows, folded into them when it grows. Rows read back from the manifest's index
(`store/manifest_index.py`) arrive in these very buffers, with nothing to decode.
"""

from __future__ import annotations

import heapq
import operator
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from taguru_ray.contract.manifest_entry import MANIFEST_FIELDS
from taguru_ray.contract.names import output_name, output_stem
from taguru_ray.store.front_coded import BLOCK, FrontCoded

ABSENT = object()
DERIVED = object()  # a row's output: the name output_name(source) gives
# Fields whose value differs per segment: sharing them would only grow the table.
PER_SEGMENT = ("sha256", "source_id", "output")
SHARED = tuple(key for key in MANIFEST_FIELDS if key not in PER_SEGMENT)
_ABSENTS = (ABSENT,) * len(SHARED)
_TAGS = SHARED.index("tags")  # the one list field: a tuple in the row

DIGEST = 32
FOLD_AT = 4096  # out-of-order rows held apart before they are folded into the sorted ones
_BY_SOURCE = operator.itemgetter(0)
# output_name without its cache: every entry of the single file asks once, and a cache
# of a few thousand would only push out the names the scan asks for again.
_OUTPUT_STEM = getattr(output_stem, "__wrapped__", output_stem)


def _output_name(source: str) -> str:
    return _OUTPUT_STEM(source) + ".jsonl"


def shared_values(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """The shared fields' values in contract order (absent ones marked), hashable."""
    values = tuple(map(entry.get, SHARED, _ABSENTS))  # C-speed: per entry
    if type(values[_TAGS]) is list:
        values = (*values[:_TAGS], tuple(values[_TAGS]), *values[_TAGS + 1 :])
    return values


def packed_sha(value: Any) -> Any:
    """A lowercase hex digest as its 32 bytes (half the memory); anything else as it is."""
    if type(value) is str and len(value) == 64:
        try:
            packed = bytes.fromhex(value)
        except ValueError:
            return value
        if packed.hex() == value:  # uppercase hex must read back as written
            return packed
    return value


class SortedRows:
    """Rows in strictly increasing path order, appended one by one (see the module)."""

    def __init__(self) -> None:
        self.keys = FrontCoded()  # the paths, UTF-8
        self.firsts: list[str] = []  # each block's first path
        self.digests = bytearray()  # DIGEST bytes a row (zeros for an unusual row)
        self.odd: dict[int, Any] = {}  # index → the whole row, when not a bare digest
        self.dead: set[int] = set()  # rows deleted since
        self.count = 0
        self.last: str | None = None
        # The block looked in last, as (block, {path: index}): one reference, swapped whole.
        self._cache: tuple[int, dict[str, int]] = (-1, {})

    @classmethod
    def from_raw(cls, keys: FrontCoded, digests: bytearray, odd: dict[int, Any]) -> SortedRows:
        """Rows read back whole (`store/manifest_index.py`): the paths as `keys.raw()`
        gave them, DIGEST bytes a row, the unusual rows by index."""
        table = cls()
        if len(digests) != DIGEST * len(keys) or any(not 0 <= i < len(keys) for i in odd):
            raise ValueError("the rows do not match their paths")
        table.keys, table.digests, table.odd, table.count = keys, digests, odd, len(keys)
        table.firsts = [
            keys.first(block).decode("utf-8", "surrogatepass") for block in range(keys.blocks)
        ]
        if len(keys):
            table.last = keys[len(keys) - 1].decode("utf-8", "surrogatepass")
        if any(a >= b for a, b in zip(table.firsts, table.firsts[1:], strict=False)):
            raise ValueError("the paths are not in order")
        return table

    def append(self, source: str, row: Any) -> None:
        index = self.count
        if index % BLOCK == 0:
            self.firsts.append(source)
        self.keys.append(source.encode("utf-8", "surrogatepass"))
        self.last = source
        if self._cache[0] == index // BLOCK:  # the block looked in last grew
            self._cache = (-1, {})
        if type(row) is bytes and len(row) == DIGEST:
            self.digests += row
        else:
            self.digests += bytes(DIGEST)
            self.odd[index] = row
        self.count = index + 1

    def _paths(self, block: int) -> list[str]:
        return [key.decode("utf-8", "surrogatepass") for key in self.keys.block(block)]

    def find(self, source: str) -> int | None:
        """The index of `source`'s live row, or None."""
        block, paths = self._cache
        index = paths.get(source)
        if index is None:
            found = bisect_right(self.firsts, source) - 1
            if found < 0 or found == block:
                return None
            first = found * BLOCK
            paths = {path: first + at for at, path in enumerate(self._paths(found))}
            self._cache = (found, paths)
            index = paths.get(source)
            if index is None:
                return None
        return None if self.dead and index in self.dead else index

    def row(self, index: int) -> Any:
        odd = self.odd.get(index)
        if odd is not None:
            return odd
        at = index * DIGEST
        return bytes(self.digests[at : at + DIGEST])

    def put(self, index: int, row: Any) -> None:
        if type(row) is bytes and len(row) == DIGEST:
            at = index * DIGEST
            self.digests[at : at + DIGEST] = row
            self.odd.pop(index, None)
        else:
            self.odd[index] = row

    def delete(self, index: int) -> None:
        self.dead.add(index)
        self.odd.pop(index, None)

    def paths(self) -> Iterator[tuple[int, str]]:
        """Every live row's (index, path), in path order."""
        for block in range(self.keys.blocks):
            first = block * BLOCK
            for at, path in enumerate(self._paths(block)):
                if first + at not in self.dead:
                    yield first + at, path

    def __len__(self) -> int:
        return self.count - len(self.dead)


class PackedEntries(MutableMapping[str, dict[str, Any]]):
    """Entries kept as rows (see the module); reading an entry gives a fresh dict."""

    def __init__(self, entries: Mapping[str, dict[str, Any]] | None = None) -> None:
        self._sorted = SortedRows()
        self._apart: dict[str, Any] = {}  # rows that came out of order
        self._shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._usual: tuple[Any, ...] | None = None  # the shared tuple a bare digest implies
        # The shared tuple `matches` met last, and the shared fields of the entry it took.
        self._matched: tuple[Any, dict[str, Any]] = (None, {})
        for source, entry in (entries or {}).items():
            self[source] = entry

    # --- rows

    def pack(self, entry: Mapping[str, Any], source: str) -> Any:
        """The row: per-segment values as they are, the rest one shared tuple. The output
        name is not kept when it is the one `source` always gets (it is recomputed)."""
        return self.pack_values(
            entry.get("sha256", ABSENT),
            entry.get("source_id", ABSENT),
            entry.get("output", ABSENT),
            shared_values(entry),
            source,
        )

    def shared_tuple(self, entry: Mapping[str, Any]) -> tuple[Any, ...]:
        """The entry's shared values, interned: one tuple for every entry that holds them."""
        return self.intern(shared_values(entry))

    def intern(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        try:
            return self._shared.setdefault(values, values)
        except TypeError:  # an unhashable value (a nested object): kept as it is
            return values

    @property
    def usual(self) -> tuple[Any, ...] | None:
        """The shared tuple a bare digest stands for."""
        return self._usual

    def adopt(self, rows: SortedRows, usual: tuple[Any, ...] | None) -> None:
        """Hold `rows` (read back whole, `store/manifest_index.py`) and nothing else."""
        self._sorted, self._apart, self._usual = rows, {}, usual

    def held(self) -> tuple[SortedRows, Mapping[str, Any]]:
        """The sorted rows and the rows held apart by path, as they are now (read only:
        `store/manifest_digests.py` indexes them by digest)."""
        return self._sorted, self._apart

    def rows_in_order(self) -> SortedRows:
        """Every row in path order, as one sorted table (none held apart, none deleted):
        what `store/manifest_index.py` writes."""
        table = self._sorted
        if not self._apart and not table.dead:
            return table
        merged = SortedRows()
        for source, row in self.sorted_rows():
            merged.append(source, row)
        return merged

    def pack_values(
        self, sha256: Any, source_id: Any, output: Any, values: tuple[Any, ...], source: str
    ) -> Any:
        """The row of these values (`output` may already be DERIVED)."""
        try:
            shared = self._shared.setdefault(values, values)
        except TypeError:  # an unhashable value (a nested object): kept as it is
            shared = values
        if output is not DERIVED and output == _output_name(source):
            output = DERIVED
        if type(sha256) is not bytes:
            sha256 = packed_sha(sha256)
        if self._usual is None:
            self._usual = shared
        usual = source_id == "" and output is DERIVED and shared is self._usual
        if usual and type(sha256) is bytes:
            return sha256
        return (sha256, source_id, output, shared)

    def unpack(self, row: Any) -> tuple[Any, ...]:
        """(sha256, source_id, output, shared) of a row, a bare digest included."""
        return (row, "", DERIVED, self._usual) if type(row) is bytes else row

    def row(self, source: str) -> Any:
        """`source`'s row, or None."""
        row = self._apart.get(source)
        if row is not None:
            return row
        index = self._sorted.find(source)
        return None if index is None else self._sorted.row(index)

    def set_row(self, source: str, row: Any) -> None:
        """Keep `row` for `source`: appended to the sorted rows when it sorts after them."""
        last = self._sorted.last
        if last is None or source > last:  # never held apart: those all sort before `last`
            self._sorted.append(source, row)
            return
        if source in self._apart:
            self._apart[source] = row
            return
        index = self._sorted.find(source)
        if index is not None:
            self._sorted.put(index, row)
            return
        self._apart[source] = row
        if len(self._apart) >= max(FOLD_AT, len(self._sorted) // 4):
            self._fold()

    def _fold(self) -> None:
        """Merge the rows held apart into the sorted ones (a new table, swapped in)."""
        merged = SortedRows()
        for source, row in self.sorted_rows():
            merged.append(source, row)
        self._sorted, self._apart = merged, {}

    def sorted_rows(self) -> Iterator[tuple[str, Any]]:
        """Every (path, row), in path order."""
        table = self._sorted
        rows = ((path, table.row(index)) for index, path in table.paths())
        if not self._apart:
            return rows
        return heapq.merge(rows, sorted(self._apart.items(), key=_BY_SOURCE), key=_BY_SOURCE)

    def matches(self, source: str, entry: Mapping[str, Any]) -> bool:
        """Whether `source`'s entry equals `entry`, compared as rows (no dict is built)."""
        row = self.row(source)
        if row is None:
            return False
        sha256, source_id, output, shared = self.unpack(row)
        given = entry.get("sha256", ABSENT)
        # A packed digest is lowercase hex: equal to its spelling, or to nothing.
        if given != (sha256.hex() if type(sha256) is bytes else sha256):
            return False
        if output is DERIVED:
            output = output_name(source)
        if entry.get("output", ABSENT) != output or entry.get("source_id", ABSENT) != source_id:
            return False
        held, fields = self._matched
        per_segment = ("sha256" in entry) + ("source_id" in entry) + ("output" in entry)
        if shared is held and len(entry) == len(fields) + per_segment:
            # The shared fields of the entry that matched last, compared in place: the
            # same keys and values are the same shared tuple (a run's entries share it).
            return fields.items() <= entry.items()
        if shared_values(entry) != shared:
            return False
        self._matched = (shared, {key: entry[key] for key in SHARED if key in entry})
        return True

    def entry(self, source: str, row: Any) -> dict[str, Any]:
        sha256, source_id, output, shared = self.unpack(row)
        if output is DERIVED:
            output = output_name(source)
        values = dict(zip(SHARED, shared, strict=True))
        sha256 = sha256.hex() if isinstance(sha256, bytes) else sha256
        values.update(sha256=sha256, source_id=source_id, output=output)
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key in MANIFEST_FIELDS
            if (value := values[key]) is not ABSENT
        }

    # --- the mapping

    def __setitem__(self, source: str, entry: dict[str, Any]) -> None:
        self.set_row(source, self.pack(entry, source))

    def __getitem__(self, source: str) -> dict[str, Any]:
        row = self.row(source)
        if row is None:
            raise KeyError(source)
        return self.entry(source, row)

    def __contains__(self, source: object) -> bool:
        return isinstance(source, str) and self.row(source) is not None

    def __delitem__(self, source: str) -> None:
        if source in self._apart:
            del self._apart[source]
            return
        index = self._sorted.find(source)
        if index is None:
            raise KeyError(source)
        self._sorted.delete(index)

    def __iter__(self) -> Iterator[str]:
        for _, path in self._sorted.paths():
            yield path
        yield from list(self._apart)

    def __len__(self) -> int:
        return len(self._sorted) + len(self._apart)

    def update_rows(self, rows: Iterable[tuple[str, Any]]) -> None:
        for source, row in rows:
            self.set_row(source, row)
