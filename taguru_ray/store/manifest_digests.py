"""Which manifest entries hold a given segment digest: a lookup built once, small at a
million entries (ADR 0061).

The manifest keeps its entries as rows sorted by path (`store/manifest_rows.py`),
so finding an entry by its digest would mean walking them all. The index is
built once, when the first segment that will be extracted asks: the first four
bytes of every row's digest as a sorted `uint32` array beside each row's index
(8 bytes an entry, 8 MB at a million; a dict of digest → path would cost over
a hundred). A prefix hit is then checked against the row's whole digest, so a
shared prefix is never taken for the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from taguru_ray.store.manifest_rows import DIGEST, SortedRows, packed_sha

_PREFIX = 4  # digest bytes the index keeps: a hit is confirmed on the whole digest


def _key(digest: bytes) -> int:
    return int.from_bytes(digest[:_PREFIX], "little")


class ManifestDigests:
    """The paths whose entries hold a digest, looked up by the digest's packed bytes."""

    def __init__(self, rows: SortedRows, apart: Mapping[str, Any]) -> None:
        """`rows`: the manifest's sorted rows; `apart`: the rows held apart, by path
        (`PackedEntries.held`). Called under the manifest's lock: the rows' digest buffer
        may not grow while numpy reads it."""
        self._rows = rows
        # Each row's first 4 digest bytes, read in place (a row is DIGEST bytes); an
        # unusual row keeps its digest in its tuple, and its slot here is zeros.
        keys = np.frombuffer(rows.digests, dtype="<u4")[:: DIGEST // 4].copy()
        for index, row in rows.odd.items():
            sha256 = row[0]
            if type(sha256) is bytes:
                keys[index] = _key(sha256)
        order = np.argsort(keys, kind="stable").astype(np.uint32)
        self._keys = keys[order]
        self._order = order
        # Rows held apart are few (folded into the sorted ones as they grow): a list.
        self._apart = list(apart.items())

    @property
    def nbytes(self) -> int:
        """What the index holds beyond the manifest itself (the benchmark reports it)."""
        return int(self._keys.nbytes + self._order.nbytes) + 16 * len(self._apart)

    def holders(self, sha256: str) -> Iterator[tuple[str, str]]:
        """(path, written source id) of each entry that holds the digest `sha256`
        (lowercase hex): the id is the entry's `source_id`, or its path when that is
        empty (the id the run wrote when --source-id was off)."""
        digest = packed_sha(sha256)
        if type(digest) is not bytes:
            return
        key = np.uint32(_key(digest))  # a Python int would cast the whole array per call
        rows = self._rows
        first = int(np.searchsorted(self._keys, key, side="left"))
        last = int(np.searchsorted(self._keys, key, side="right"))
        for at in range(first, last):
            index = int(self._order[at])
            if rows.dead and index in rows.dead:
                continue
            row = rows.row(index)
            if (row if type(row) is bytes else row[0]) == digest:
                yield _holder(rows.keys[index].decode("utf-8", "surrogatepass"), row)
        for path, row in self._apart:
            if (row if type(row) is bytes else row[0]) == digest:
                yield _holder(path, row)


def _holder(path: str, row: Any) -> tuple[str, str]:
    ident = row[1] if type(row) is tuple else ""
    return path, ident if isinstance(ident, str) and ident else path
