"""The manifest's index: the single file's entries as taguru-ray holds them, beside it.

Reading a million-entry ``.extract-manifest.json`` is most of a gigabyte of JSON
to decode: ten seconds before the first segment can be skipped. So each time
taguru-ray writes the single file it also writes ``.extract-manifest.index``:
the same entries as the rows `PackedEntries` keeps (the paths front-coded, a
32-byte digest a row, the few unusual rows and the shared fields as JSON),
with the sha256 and size of the single file's bytes it was made from. A load
reads the index only when the single file still has those bytes — hashing
them is a fraction of a second, in C — and decodes the JSON otherwise: the
reference, which knows no index, rewrote the file; a kill came between the two
writes; the index is missing, torn or of another version (ADR 0042).

The single file stays the manifest, byte for byte what it was: the reference
reads it and never sees the index (a hidden file, not a source file).

Layout: a magic line, one JSON header line, then the coded paths, the block
offsets (unsigned 64-bit, the writer's byte order as the header names it) and
the digests, their lengths in the header.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from array import array
from collections.abc import Iterator
from typing import IO, Any

from taguru_ray.store.front_coded import BLOCK, FrontCoded
from taguru_ray.store.manifest_rows import (
    ABSENT,
    DERIVED,
    DIGEST,
    SHARED,
    PackedEntries,
    SortedRows,
)
from taguru_ray.store.outdir import OutDir

MANIFEST_INDEX = ".extract-manifest.index"
MAGIC = b"taguru-ray manifest index 1\n"
HASH_CHUNK = 1 << 20
LONGEST_HEADER = 1 << 26  # a header line longer than this is no index of ours


def index_chunks(
    table: PackedEntries, rows: SortedRows, single_sha256: str, single_bytes: int
) -> Iterator[bytes | memoryview]:
    """The index of `rows` (every row of `table`, in path order) for a single file of
    that sha256 and size."""
    data, starts = rows.keys.raw()
    shared_at: dict[int, int] = {}
    shared: list[list[list[Any]]] = []

    def ref(values: tuple[Any, ...]) -> int:
        if id(values) not in shared_at:
            shared_at[id(values)] = len(shared)
            shared.append([_value(v) for v in values])
        return shared_at[id(values)]

    odd = []
    for index, row in sorted(rows.odd.items()):
        sha256, source_id, output, values = row
        odd.append([index, _value(sha256), _value(source_id), _value(output), ref(values)])
    usual = table.usual
    header = {
        "single_sha256": single_sha256,
        "single_bytes": single_bytes,
        "count": rows.count,
        "block": BLOCK,
        "digest": DIGEST,
        "fields": list(SHARED),
        "byteorder": sys.byteorder,
        "keys_bytes": len(data),
        "starts": len(starts),
        "digests_bytes": len(rows.digests),
        "usual": ref(usual) if usual is not None else None,
        "shared": shared,
        "odd": odd,
    }
    yield MAGIC
    yield json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    yield memoryview(data)
    yield starts.tobytes()
    yield memoryview(rows.digests)


def read_index(out: OutDir) -> PackedEntries | None:
    """The entries the index holds, when it describes the single file as it is now;
    None otherwise (no index, another version, torn, or made for other bytes)."""
    try:
        handle = out.open_bytes(MANIFEST_INDEX)
    except OSError:
        return None
    if handle is None:
        return None
    try:
        with handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            header = json.loads(handle.readline(LONGEST_HEADER).decode("utf-8"))
            if not _describes_single(out, header):
                return None
            return _rows(handle, header)
    except (OSError, ValueError, KeyError, TypeError, IndexError, OverflowError):
        return None


def _describes_single(out: OutDir, header: dict[str, Any]) -> bool:
    """Whether the single file's bytes are those the index was made from."""
    from taguru_ray.contract.names import MANIFEST

    if header["block"] != BLOCK or header["digest"] != DIGEST or header["fields"] != list(SHARED):
        return False
    single = out.open_bytes(MANIFEST)
    if single is None:
        return False
    digest = hashlib.sha256()
    size = 0
    with single:
        if _size(single) not in (None, header["single_bytes"]):
            return False  # rewritten since (the reference): no need to hash it
        while chunk := single.read(HASH_CHUNK):  # sha256 lets the GIL go over a chunk
            digest.update(chunk)
            size += len(chunk)
            if size > header["single_bytes"]:
                return False
    return size == header["single_bytes"] and digest.hexdigest() == header["single_sha256"]


def _size(handle: IO[bytes]) -> int | None:
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        size = getattr(handle, "size", None)  # an fsspec file knows its object's size
        return size if isinstance(size, int) else None


def _rows(handle: IO[bytes], header: dict[str, Any]) -> PackedEntries:
    """The table, its buffers read straight into place (no second copy of them)."""
    data = _exactly(handle, header["keys_bytes"])
    starts = array("Q")
    starts.frombytes(bytes(_exactly(handle, 8 * header["starts"])))
    if header["byteorder"] != sys.byteorder:
        starts.byteswap()
    digests = _exactly(handle, header["digests_bytes"])
    if handle.read(1):
        raise ValueError("the index goes on past its rows")
    table = PackedEntries()
    shared = [table.intern(tuple(_unvalue(v) for v in values)) for values in header["shared"]]
    odd = {
        int(index): (_unvalue(sha256), _unvalue(source_id), _unvalue(output), shared[at])
        for index, sha256, source_id, output, at in header["odd"]
    }
    keys = FrontCoded.from_raw(data, starts, header["count"])
    usual = shared[header["usual"]] if header["usual"] is not None else None
    table.adopt(SortedRows.from_raw(keys, digests, odd), usual)
    return table


def _exactly(handle: IO[bytes], size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        read = handle.readinto(view[got:])  # type: ignore[attr-defined]
        if not read:
            raise ValueError("the index ends early")
        got += read
    return buffer


# A value as the header holds it: absent [], packed digest [1, hex], the output the
# source's name gives [2], a tuple (the tags) [3, items], any other [0, value].
def _value(value: Any) -> list[Any]:
    if value is ABSENT:
        return []
    if value is DERIVED:
        return [2]
    if type(value) is bytes:
        return [1, value.hex()]
    if type(value) is tuple:
        return [3, list(value)]
    return [0, value]


def _unvalue(held: list[Any]) -> Any:
    if not held:
        return ABSENT
    kind = held[0]
    if kind == 2:
        return DERIVED
    if kind == 1:
        return bytes.fromhex(held[1])
    if kind == 3:
        return tuple(held[1])
    if kind == 0:
        return held[1]
    raise ValueError(f"an index value of unknown kind {kind!r}")
