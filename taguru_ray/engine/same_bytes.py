"""One file under two source ids: said before the second is paid for (ADR 0061).

A segment's source id is its path as typed, so `notes/a.md` and
`/home/me/notes/a.md` are two segments: both are extracted, both are paid for,
and the context gets two sources with the same facts. The manifest cannot skip
the second (it is keyed by path), so the driver says it: a segment about to be
extracted whose digest another source id holds — earlier in this run, or in
--out's manifest — gets one warning line naming the other. A line per pair,
at most `WARN_CAP` of them; the rest are counted in one line at the run's end.

Only segments that will be extracted are looked at: a skipped one costs
nothing, and a rerun that skips a million segments builds nothing here.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

from taguru_ray.contract.names import split_row
from taguru_ray.errors import MESSAGE_PREFIX
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.manifest_digests import ManifestDigests

WARN_CAP = 10  # warning lines a run prints; a corpus of copies would drown the rest

Holder = tuple[str, str]  # (path, written source id) of a segment that has the bytes


class RunDigests:
    """The digests of the segments this run extracts, by their first 8 bytes, beside the
    index of the first segment with each, in an open-addressed table at most two-thirds
    full (about 18 bytes a segment; a dict would cost over a hundred). Two segments
    are taken to have the same bytes when 64 bits of their sha256 agree: a false
    match among a million segments has odds of about 1 in 30 million, and costs a
    warning line, never a skip."""

    def __init__(self) -> None:
        self._size, self._used = 16, 0
        self._keys = array("Q", bytes(8 * 16))
        self._indexes = array("I", bytes(4 * 16))  # the segment's index + 1; 0: empty

    def first(self, sha256: str, index: int) -> int | None:
        """The index of the first segment met with digest `sha256`, or None when segment
        `index` is the first (it is then the one remembered)."""
        key = int(sha256[:16], 16)
        slot = self._slot(key)
        if self._indexes[slot]:
            return self._indexes[slot] - 1
        if (self._used + 1) * 3 > self._size * 2:
            self._grow()
            slot = self._slot(key)
        self._keys[slot], self._indexes[slot] = key, index + 1
        self._used += 1
        return None

    def _slot(self, key: int) -> int:
        """The slot holding `key`, or the empty one where it would go."""
        mask = self._size - 1
        slot = key & mask
        while self._indexes[slot] and self._keys[slot] != key:
            slot = (slot + 1) & mask
        return slot

    def _grow(self) -> None:
        # Straight from the old arrays: a list of the held pairs would cost over a hundred
        # MB for a moment at a million.
        keys, indexes = self._keys, self._indexes
        self._size *= 2
        self._keys = array("Q", bytes(8 * self._size))
        self._indexes = array("I", bytes(4 * self._size))
        for key, plus_one in zip(keys, indexes, strict=True):
            if plus_one:
                slot = self._slot(key)
                self._keys[slot], self._indexes[slot] = key, plus_one


def renamed_line(source: str, other: str, sha256: str, prune: bool) -> str:
    """The note for `source`, whose bytes the manifest holds under `other`, a path the
    inputs no longer hold (ADR 0083): a rename, paid for afresh under the new path."""
    retires = "this run retires the old one (--prune)" if prune else "--prune retires the old one"
    return (
        f"{MESSAGE_PREFIX}{source}: the same bytes as {other}, which the inputs no longer hold "
        f"(sha256 {sha256[:12]}…) — a renamed segment is extracted afresh under its new path; "
        f"{retires}"
    )


def same_bytes_line(source: str, other: str, in_run: bool, sha256: str) -> str:
    """The warning for `source`, whose bytes (digest `sha256`) `other` already has."""
    where = "earlier in this run" if in_run else "already extracted into this --out"
    if split_row(source) is not None:  # a dataset's rows: two rows with one text (ADR 0075)
        return (
            f"{MESSAGE_PREFIX}{source}: the same text as {other}, {where} (sha256 "
            f"{sha256[:12]}…) — both are paid for and written as two sources; drop the "
            "repeated row to pay once"
        )
    return (
        f"{MESSAGE_PREFIX}{source}: the same bytes as {other}, {where} (sha256 "
        f"{sha256[:12]}…) — one file under two paths is paid for twice and written as two "
        "sources; give each file one path (all relative, or all absolute)"
    )


class SameBytes:
    """The driver's part that warns (see the module): `check` each segment about to be
    extracted, `close` once at the run's end."""

    def __init__(
        self,
        holder_of: Callable[[int], Holder],
        manifest_holders: Callable[[str], Iterable[Holder]],
        say: Callable[[str], None],
        cap: int = WARN_CAP,
        renamed: Callable[[str], bool] | None = None,
        prune: bool = False,
    ) -> None:
        """`holder_of(index)`: segment `index`'s path and written id; `manifest_holders`:
        the manifest's entries with a digest (`Manifest.digest_index().holders`);
        `renamed(path)`: whether a manifest path is an orphan of the run (ADR 0083) — its
        pair is a rename, said as one; `prune`: the run retires orphans."""
        self._holder_of = holder_of
        self._manifest_holders = manifest_holders
        self._say = say
        self._renamed = renamed or (lambda _path: False)
        self._prune = prune
        self._cap = cap
        self._run = RunDigests()
        self._said: set[frozenset[str]] = set()  # the pairs warned of (at most `cap`)
        self.unsaid = 0  # segments past the cap that had a pair

    def check(self, index: int, sha256: str) -> None:
        """Warn when segment `index`, about to be extracted, has bytes another source id has."""
        source, ident = self._holder_of(index)
        first = self._run.first(sha256, index)
        others: list[tuple[Holder, bool]] = []
        if first is not None:
            others.append((self._holder_of(first), True))
        others.extend((holder, False) for holder in self._manifest_holders(sha256))
        for (path, other_ident), in_run in others:
            if other_ident == ident or path == source:
                continue  # the same source id: one source in the context, rewritten
            pair = frozenset((ident, other_ident))
            if pair in self._said:
                continue
            if len(self._said) >= self._cap:
                self.unsaid += 1
                return
            self._said.add(pair)
            if not in_run and self._renamed(path):
                self._say(renamed_line(source, path, sha256, self._prune))
            else:
                self._say(same_bytes_line(source, path, in_run, sha256))
            return

    def close(self) -> None:
        """The count of the segments past the cap, when there were any."""
        if self.unsaid:
            self._say(
                f"{MESSAGE_PREFIX}{self.unsaid} more segment(s) with the same bytes as "
                f"another source id (the first {self._cap} are named above)"
            )


def manifest_holders(manifest: Callable[[], Manifest]) -> Callable[[str], Iterable[Holder]]:
    """`Manifest.digest_index().holders` of the run's loaded manifest, the index built
    when first asked — by the first segment to extract, after the manifest is in."""
    built: list[ManifestDigests] = []

    def holders(sha256: str) -> Iterable[Holder]:
        if not built:
            built.append(manifest().digest_index())
        return built[0].holders(sha256)

    return holders
