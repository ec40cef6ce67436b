"""The scan's duplicate-id check: which segments write an id an earlier segment of the
run writes (they are refused), found without holding every id (ADR 0042)."""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Sequence

from taguru_ray.contract.names import written_id
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.store.corpus import Corpus
from taguru_ray.text.redact import scan_answer_text


class WrittenIds:
    """Which segments write an id an earlier segment of the run writes (refused): `first`
    says whether segment `index` is the first to write its id.

    A set of a million ids costs over a hundred MB of driver memory. Sources from one
    argument are distinct paths, so a run that writes each path as its id holds
    nothing. Otherwise the repeats are found once, in index order, before the first
    answer (`_IdTable`), and only their indexes are kept: the answer does not depend
    on the order segments are scanned in, and several batches are scanned at once
    (`engine/ahead.py`). A segment refused for its path (`--redact`) writes no id.
    """

    def __init__(
        self,
        ident_of: Callable[[int], str] | None,
        count: int,
        refused_path: Callable[[int], bool] | None = None,
    ) -> None:
        self._ident_of = ident_of  # None: no id can repeat
        self._count = count
        self._refused_path = refused_path
        self._repeats: frozenset[int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls, sources: Sequence[str], source_id: str | None, inputs: RunInputs | None = None
    ) -> WrittenIds:
        """The repeats of a run over `sources` (`settings.source.source_id`)."""
        several = len(sources) > 1
        if not several or (
            source_id is None and isinstance(sources, Corpus) and sources.arguments == 1
        ):
            return cls(None, 0)
        rules = inputs.redaction if inputs is not None else ()
        return cls(
            lambda index: written_id(sources[index], source_id, several),
            len(sources),
            (lambda index: bool(scan_answer_text(sources[index], rules))) if rules else None,
        )

    def first(self, ident: str, index: int) -> bool:
        """Whether no earlier segment writes segment `index`'s id (`ident`)."""
        if self._ident_of is None:
            return True
        repeats = self._repeats
        if repeats is None:
            with self._lock:
                if self._repeats is None:
                    self._repeats = self._find_repeats()
                repeats = self._repeats
        return index not in repeats

    def _find_repeats(self) -> frozenset[int]:
        assert self._ident_of is not None
        table = _IdTable(self._ident_of, self._count)
        refused = self._refused_path
        return frozenset(
            index
            for index in range(self._count)
            if not (refused is not None and refused(index))
            and not table.first(self._ident_of(index), index)
        )


class _IdTable:
    """Ids met so far, as their 64-bit hashes beside the index of the segment that wrote
    each, in an open-addressed table at most two-thirds full (about 20 bytes an id); an
    id whose hash is met again is compared exactly with that segment's, so a hash
    collision never counts as a repeat."""

    def __init__(self, ident_of: Callable[[int], str], count: int) -> None:
        self._ident_of = ident_of
        self._size = 0
        self._used = 0
        self._grow(count)

    def _grow(self, count: int) -> None:
        held = list(zip(self._hashes, self._indexes, strict=True)) if self._size else []
        size = 16
        while size * 2 < count * 3:
            size *= 2
        self._size, self._mask = size, size - 1
        self._hashes = array("q", bytes(8 * size))
        self._indexes = array("Q", bytes(8 * size))  # the segment's index + 1; 0: empty
        self._used = 0
        for key, plus_one in held:
            if plus_one:
                self._put(key, plus_one)

    def _put(self, key: int, plus_one: int) -> None:
        slot = key & self._mask
        while self._indexes[slot]:
            slot = (slot + 1) & self._mask
        self._hashes[slot] = key
        self._indexes[slot] = plus_one
        self._used += 1

    def first(self, ident: str, index: int) -> bool:
        """Whether no segment met before wrote `ident`; `index` is the segment writing it."""
        key = hash(ident)
        hashes, indexes, mask = self._hashes, self._indexes, self._mask
        slot = key & mask
        while plus_one := indexes[slot]:
            if hashes[slot] == key and self._ident_of(plus_one - 1) == ident:
                return False
            slot = (slot + 1) & mask
        if (self._used + 1) * 3 > self._size * 2:
            self._grow(self._used * 2 + 2)
        self._put(key, index + 1)
        return True


def first_to_write(seen_ids: set[str] | WrittenIds, ident: str, index: int) -> bool:
    """Whether segment `index` is the first of the run to write `ident` (`seen_ids`: the
    run's `WrittenIds`, or the ids met so far, as --dry-run walks them)."""
    if isinstance(seen_ids, WrittenIds):
        return seen_ids.first(ident, index)
    if ident in seen_ids:
        return False
    seen_ids.add(ident)
    return True
