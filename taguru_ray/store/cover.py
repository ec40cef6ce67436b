"""What one positional argument of a run covers: the sources it would read were they there
(ADR 0083).

A run's corpus is what its own arguments cover, argument by argument, as
`store/inputs.py` read each one:

- a **file** (a ``.md``/``.txt`` file, a document) covers its own path;
- a dataset **shard** (``.parquet``, ``.jsonl``, ``.jsonl.gz``, ``.csv``) covers
  its rows: every source ``<shard>#<id>``, whatever the id;
- a **folder** (or an object-store prefix) covers the one-segment files it
  lists — a name with a segment or document ending directly in it, or at any
  depth under ``--recursive`` but inside no hidden folder — and, when it was read
  as a dataset (it held no such file, only shards), the rows of every shard it
  lists: so a shard deleted altogether leaves rows the folder covers. A folder
  read for its files does not cover the rows of shards beside them: it does not
  read them (a note says so), and a run over the shard itself may have written
  them.

What a reader could not list — a subfolder, a shard whose footer or header
cannot be read, a JSONL shard whose bytes stop parsing part-way — is *unknown*:
nothing under it is judged, so a passing fault never retires what is still
there. Pure: the paths are compared as strings, as sources are (the path as
typed is the id: ``docs/a.md`` and ``./docs/a.md`` are two sources).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from taguru_ray.contract.names import ROW_MARK
from taguru_ray.store.shapes import shape_of

# A shard's name, then the row mark: where a row source splits. `contract.names.split_row`
# leaves a source ending ``.md``/``.txt`` a file's (its output name stays the reference's);
# here any such source is a row, so a row whose id ends ``.md`` is never judged as a file.
_ROW = re.compile(r"\.(?:parquet|jsonl\.gz|jsonl|csv)" + ROW_MARK, re.DOTALL)


def shard_of(source: str) -> str | None:
    """The shard a row source names; None for a file's path."""
    if ROW_MARK not in source:  # most paths: no pattern searched
        return None
    found = _ROW.search(source)
    return None if found is None else source[: found.end() - 1]


@dataclass(frozen=True)
class Cover:
    """One argument: `path` as typed (a folder's with one ``/`` after it); `folder`: it
    is a folder, listed to `deep`; `files`, `rows`: it covers one-segment files, dataset
    rows; `unknown`: shards, and folders (ending ``/``), a reader could not list."""

    path: str
    folder: bool = False
    files: bool = True
    rows: bool = False
    deep: bool = False
    unknown: tuple[str, ...] = ()
    # A folder's verdict on each shard asked about: a million rows name a few shards.
    _shards: dict[str, bool] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def file(cls, path: str) -> Cover:
        return cls(path)

    @classmethod
    def shard(cls, path: str, *, known: bool = True) -> Cover:
        return cls(path, files=False, rows=known)

    @classmethod
    def listed(
        cls, folder: str, *, rows: bool, deep: bool = False, unknown: tuple[str, ...] = ()
    ) -> Cover:
        prefix = folder if folder.endswith("/") else folder + "/"
        return cls(prefix, folder=True, rows=rows, deep=deep, unknown=unknown)

    def covers(self, source: str) -> bool:
        """Whether this argument would read `source` if it were there."""
        shard = shard_of(source)
        if shard is None:
            return self.covers_file(source)
        return self.covers_rows(shard) or (not self.folder and source == self.path)

    def covers_file(self, path: str) -> bool:
        """Whether this argument would read the file `path` (no row source)."""
        if not self.folder:
            return self.files and path == self.path
        return self.files and self._lists(path, rows=False)

    def covers_rows(self, shard: str) -> bool:
        """Whether this argument would read every row of `shard` (a shard's path)."""
        if not self.rows:
            return False
        if not self.folder:
            return shard == self.path
        verdict = self._shards.get(shard)
        if verdict is None:
            verdict = self._shards[shard] = self._lists(shard, rows=True)
        return verdict

    def _lists(self, path: str, *, rows: bool) -> bool:
        """Whether the folder's listing would yield `path`, a shard (`rows`) or a file."""
        if not path.startswith(self.path) or len(path) == len(self.path):
            return False
        folders, _, name = path[len(self.path) :].rpartition("/")
        if folders and not self.deep:
            return False
        if folders and any(not part or part.startswith(".") for part in folders.split("/")):
            return False  # hidden folders are not entered
        shape = shape_of(name)
        if shape is None or shape.rows != rows:
            return False
        return not self.unknown or not any(
            path.startswith(unknown) if unknown.endswith("/") else path == unknown
            for unknown in self.unknown
        )
