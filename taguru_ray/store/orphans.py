"""A run's corpus, and the manifest's segments it no longer holds (ADR 0083).

The corpus of a run is what its positional inputs would read: a file
argument covers that one path; a folder argument covers every path a folder
contributes (`store/inputs.py`: the folder as typed, a ``/``, a name with a
segment suffix and no ``/`` of its own). A manifest entry is an *orphan* of the
run when the run's inputs cover its path and the path is not among the run's
sources: deleted, renamed, or moved out of the folder. So a run over a subset
(one file argument, the files a shell glob expanded to) never calls the rest of
the manifest orphans — its arguments do not cover them — and nothing beyond the
arguments and the manifest is needed: no record of earlier runs' inputs, and a
manifest the reference wrote is judged the same way.

`Coverage.covers` and `Coverage.holds` are the one place that says which sources a
run's inputs name; a new input shape (a dataset's rows) teaches them both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from taguru_ray.contract.names import SEGMENT_SUFFIXES
from taguru_ray.store.corpus import Corpus
from taguru_ray.store.outdir import HashedNames
from taguru_ray.text.terminal import printable

SHOWN = 3  # orphans a line names before it counts the rest


class Coverage:
    """What a run's inputs cover (`covers`) and hold (`holds`)."""

    def __init__(self, arguments: Sequence[tuple[str, bool]], sources: Sequence[str]) -> None:
        """`arguments`: each positional input, (a file's path, False) or (a folder as typed
        with a ``/`` after it, True); `sources`: the paths they expanded to."""
        self._files = {path for path, folder in arguments if not folder}
        self._folders = tuple(path for path, folder in arguments if folder)
        self._sources = sources
        self._held: HashedNames | None = None  # built when first asked: 8 bytes a source

    @classmethod
    def of(cls, corpus: Corpus) -> Coverage:
        return cls(corpus.covering, corpus)

    def covers(self, source: str) -> bool:
        """Whether the run's inputs would read `source` if it were there."""
        if source in self._files:
            return True
        for folder in self._folders:
            if (
                source.startswith(folder)
                and "/" not in source[len(folder) :]
                and source.endswith(SEGMENT_SUFFIXES)
                and len(source) > len(folder)
            ):
                return True
        return False

    def holds(self, source: str) -> bool:
        """Whether `source` is among the run's sources (64-bit hashes: a false "held" has
        odds of about 1 in 10^13 at a million sources, and costs one orphan unnamed)."""
        if self._held is None:
            self._held = HashedNames(self._sources)
        return source in self._held

    def orphans(self, paths: Callable[[], Iterable[str]]) -> list[str]:
        """The paths among `paths()` (the manifest's, in order) the inputs cover but do not
        hold.

        At a million entries the paths are never all held as strings (a hundred MB):
        a first pass hashes the covered ones into an array (8 bytes each) and finds the
        hashes no source has (numpy, against the sources' sorted hashes; about 30 MB for
        a moment at a million); only when there are some does a second pass pick those
        paths out. 64-bit hashes: a false "held" has odds of about 1 in 10^13 at a
        million, and costs one orphan unnamed. About 2.3 s of CPU at a million entries
        on a loaded 2-core machine (a `HashedNames` lookup per path: 3.0 s), on a
        reader thread; ADR 0042's skip of a million takes 76-113 s.
        """
        covered = np.fromiter(
            (hash(path) for path in paths() if self.covers(path)), dtype=np.int64
        )
        if not covered.size:
            return []
        held = np.fromiter(map(hash, self._sources), dtype=np.int64, count=len(self._sources))
        held.sort()
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
