"""A run's corpus, and the manifest's segments it no longer holds (ADR 0083).

The corpus of a run is what its positional inputs would read, argument by
argument (`store/cover.py`): a file its path; a dataset shard its rows
(``<shard>#<id>``, any id); a folder or prefix the files it lists, one level or
a tree, and — read as a dataset — the rows of every shard it lists. A manifest
entry is an *orphan* of the run when the run's inputs cover its source and the
source is not among the run's: a file deleted, renamed or moved out of the
folder; a row removed from its shard, or whose id changed; a shard deleted from
a folder of shards. So a run over a subset (one file argument, the files or
shards a shell glob expanded to) never calls the rest of the manifest orphans —
its arguments do not cover them — and nothing beyond the arguments and the
manifest is needed: no record of earlier runs' inputs, and a manifest the
reference wrote is judged the same way.

No row's text is read here: a shard's rows are its listed ids (`ShardRows.sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from taguru_ray.store.corpus import Corpus
from taguru_ray.store.cover import Cover, shard_of
from taguru_ray.text.terminal import printable

SHOWN = 3  # orphans a line names before it counts the rest


class Coverage:
    """What a run's inputs cover (`covers`) and hold (`holds`)."""

    def __init__(self, covering: Iterable[Cover], sources: Sequence[str]) -> None:
        """`covering`: what each positional input covers; `sources`: the sources they
        expanded to."""
        covering = list(covering)
        # A file argument and a shard argument are looked up by their path; only folders
        # are asked one by one.
        self._files = {c.path for c in covering if not c.folder and c.files}
        self._shards = {c.path for c in covering if not c.folder and c.rows}
        self._folders = tuple(c for c in covering if c.folder)
        self._sources = sources
        self._held: np.ndarray | None = None  # the sources' sorted hashes: 8 bytes each

    @classmethod
    def of(cls, corpus: Corpus) -> Coverage:
        return cls(corpus.covering, corpus)

    def covers(self, source: str) -> bool:
        """Whether the run's inputs would read `source` if it were there."""
        if source in self._files:
            return True
        shard = shard_of(source)
        if shard is None:
            return any(folder.covers_file(source) for folder in self._folders)
        return shard in self._shards or any(folder.covers_rows(shard) for folder in self._folders)

    def holds(self, source: str) -> bool:
        """Whether `source` is among the run's sources (64-bit hashes: a false "held" has
        odds of about 1 in 10^13 at a million sources, and costs one orphan unnamed)."""
        held = self._hashes()
        key = hash(source)
        at = int(np.searchsorted(held, key))
        return at < held.size and int(held[at]) == key

    def _hashes(self) -> np.ndarray:
        """The sources' hashes, sorted: one pass over them, made when first asked."""
        if self._held is None:
            count = len(self._sources)
            held = np.fromiter(map(hash, self._sources), dtype=np.int64, count=count)
            held.sort()
            self._held = held
        return self._held

    def orphans(self, paths: Callable[[], Iterable[str]]) -> list[str]:
        """The paths among `paths()` (the manifest's, in order) the inputs cover but do not
        hold.

        At a million entries the paths are never all held as strings (a hundred MB):
        a first pass hashes the covered ones into an array (8 bytes each) and finds the
        hashes no source has (numpy, against the sources' sorted hashes, 8 MB at a
        million, kept for `holds`); only when there are some does a second pass pick
        those paths out. 64-bit hashes: a false "held" has odds of about 1 in 10^13 at
        a million, and costs one orphan unnamed. Measured in ADR 0083: 1.65 s of CPU
        at a million files, on a reader thread; a shard's rows cost about as much.
        """
        covered = np.fromiter((hash(path) for path in paths() if self.covers(path)), np.int64)
        if not covered.size:
            return []
        held = self._hashes()
        at = np.searchsorted(held, covered).clip(max=max(held.size - 1, 0))
        missing = covered if not held.size else covered[held[at] != covered]
        if not missing.size:
            return []
        wanted = set(missing.tolist())
        return [path for path in paths() if hash(path) in wanted and self.covers(path)]


def orphans_line(orphans: Sequence[str], prune: bool) -> str:
    """The one line a run says about its orphans (ADR 0083), without the verb's prefix."""
    shown = ", ".join(printable(path) for path in orphans[:SHOWN])
    if len(orphans) > SHOWN:
        shown += f" and {len(orphans) - SHOWN} more"
    held = (
        f"{len(orphans)} segment(s) in the manifest are no longer among the inputs "
        f"(deleted, renamed or moved): {shown}"
    )
    if prune:
        return f"{held} — --prune retires them once this run's segments are written"
    return (
        f"{held} — their source files are still imported; --prune retires them (and the "
        "next import retracts them)"
    )
