"""Byte strings in order, front-coded: what a million paths cost without a million objects.

Each string stores only what differs from the one before it — the length of
the prefix they share, then the rest — in blocks of `BLOCK` that start with a
whole string, so any one is read by decoding at most its block. Sorted paths
share most of their bytes: ``docs/seg-000123.md`` after ``docs/seg-000122.md``
costs 4 bytes and two lengths (ADR 0042). The block read last is kept, so
reading in order decodes each block once.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

BLOCK = 32  # strings per block: a read out of order decodes at most this many


class FrontCoded:
    """Byte strings appended in order, read by index or in order."""

    def __init__(self) -> None:
        self._data = bytearray()  # per string: varint shared bytes, varint rest, the rest
        self._starts = array("Q")  # each block's offset in `_data`
        self._count = 0
        self._last = b""
        # The block decoded last, as (block, its strings): one reference, swapped whole.
        self._cache: tuple[int, list[bytes]] = (-1, [])

    def append(self, value: bytes) -> None:
        data = self._data
        if self._count % BLOCK == 0:
            self._starts.append(len(data))
            shared = 0
        else:
            shared = common_prefix(self._last, value)
        rest = len(value) - shared
        if shared < 0x80 and rest < 0x80:  # the usual path: two one-byte lengths
            data.append(shared)
            data.append(rest)
        else:
            _put_varint(data, shared)
            _put_varint(data, rest)
        data += value[shared:]
        self._last = value
        if self._cache[0] == self._count // BLOCK:  # the block decoded last grew
            self._cache = (-1, [])
        self._count += 1

    def block(self, block: int) -> list[bytes]:
        """The strings of block `block`, in order."""
        cached, values = self._cache
        if cached == block:
            return values
        data = self._data
        pos = self._starts[block]
        end = self._starts[block + 1] if block + 1 < len(self._starts) else len(data)
        values = []
        previous = b""
        while pos < end:
            shared = data[pos]
            size = data[pos + 1]
            if shared < 0x80 and size < 0x80:  # the usual path: two one-byte lengths
                pos += 2
            else:
                shared, pos = _get_varint(data, pos)
                size, pos = _get_varint(data, pos)
            previous = previous[:shared] + data[pos : pos + size]
            pos += size
            values.append(previous)
        self._cache = (block, values)
        return values

    def first(self, block: int) -> bytes:
        """The first string of block `block` (stored whole: nothing else is decoded)."""
        pos = self._starts[block]
        shared, pos = _get_varint(self._data, pos)
        size, pos = _get_varint(self._data, pos)
        if shared:
            raise ValueError("a front-coded block does not start whole")
        return bytes(self._data[pos : pos + size])

    def __getitem__(self, index: int) -> bytes:
        if not 0 <= index < self._count:
            raise IndexError("front-coded index out of range")
        return self.block(index // BLOCK)[index % BLOCK]

    def __iter__(self) -> Iterator[bytes]:
        for block in range(len(self._starts)):
            yield from self.block(block)

    def __len__(self) -> int:
        return self._count

    @property
    def blocks(self) -> int:
        return len(self._starts)

    def raw(self) -> tuple[bytearray, array[int]]:
        """What `from_raw` takes back: the coded bytes and each block's offset in them."""
        return self._data, self._starts

    @classmethod
    def from_raw(cls, data: bytearray, starts: array[int], count: int) -> FrontCoded:
        """The strings `raw` gave, `count` of them (`index.py`'s reading of a manifest)."""
        coded = cls()
        coded._data, coded._starts, coded._count = data, starts, count
        if count:
            expected = (count + BLOCK - 1) // BLOCK
            if len(starts) != expected or any(at > len(data) for at in starts):
                raise ValueError("front-coded blocks do not match their count")
            last = coded.block(len(starts) - 1)
            if len(last) != count - (len(starts) - 1) * BLOCK:
                raise ValueError("front-coded strings do not match their count")
            coded._last = last[-1]
        return coded

    def nbytes(self) -> int:
        """The bytes held (for tests and the ADR's arithmetic)."""
        return len(self._data) + self._starts.itemsize * len(self._starts)


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes `a` and `b` share (C-speed: one XOR of two big integers)."""
    size = min(len(a), len(b))
    differ = int.from_bytes(a[:size], "big") ^ int.from_bytes(b[:size], "big")
    return size - (differ.bit_length() + 7) // 8


def _put_varint(buffer: bytearray, value: int) -> None:
    while value >= 0x80:
        buffer.append((value & 0x7F) | 0x80)
        value >>= 7
    buffer.append(value)


def _get_varint(buffer: bytearray, pos: int) -> tuple[int, int]:
    byte = buffer[pos]
    if byte < 0x80:
        return byte, pos + 1
    value, shift = 0, 0
    while True:
        byte = buffer[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
