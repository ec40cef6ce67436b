"""The manifest: the skip index of written segments, as a journal plus one compacted file.

Readers outside taguru-ray know one file, ``.extract-manifest.json`` (CONTRACT.md
section 2): ``{"documents": {<input path>: <entry>}}``, pretty-printed, keys
sorted. An entry records the compute inputs its source file was made from; a
segment is skipped only when every input is equal and the recorded output
file still exists. A missing or unreadable manifest means everything
re-extracts — never a false "unchanged". Only successes are recorded.

Rewriting that one file per written segment costs O(segments) bytes each
time — a terabyte of PUTs over a million-segment run. So a run records each
written segment as its own small journal entry,
``.extract-manifest.d/<16 hex of sha256(source)>.json`` (one PUT or one atomic
rename), and `compact` folds the journal into the single file once, at run
end, then deletes the entries it folded (ADR 0009). A run killed before its
compaction leaves its entries behind; the next `load` overlays them on the
single file, so nothing written is ever re-paid. An entry older than the
single file is not overlaid: a tool that knows no journal (the reference)
rewrote the file after it, so the file is newer for every segment.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from taguru_ray.settings import MANIFEST_FIELDS
from taguru_ray.store.outdir import MANIFEST, MANIFEST_JOURNAL, OutDir

# Fields an older entry may lack; absent means the default run's value.
ENTRY_DEFAULTS: dict[str, Any] = {
    "context": "",
    "questions_n": 0,
    "no_passage": False,
    "description": "",
    "fact_budget": 0,
    "structured_output": "",
    "max_output_tokens": 0,
    "escalation_factor": "",
    "runaway_ratio": "",
    "chunk_context": "",
    "chunk_bytes": "",
    "lossy": False,
    "schema_digest": "",
    "candidates": "",
    "redaction": "",
    "vocabulary_digest": "",
    "source_id": "",
    "date": 0,
    "tags": [],
}


_ABSENT = object()
# Fields whose value differs per segment: sharing them would only grow the table.
_PER_SEGMENT = frozenset({"sha256", "output", "source_id"})
_SHARED_FIELDS = tuple(i for i, key in enumerate(MANIFEST_FIELDS) if key not in _PER_SEGMENT)


class PackedEntries(MutableMapping[str, dict[str, Any]]):
    """Entries kept as tuples in contract field order, values interned.

    A million-segment manifest held as dicts costs gigabytes; as tuples of
    shared values (most fields are the same for every entry) about a sixth of
    that. Reading an entry gives a fresh dict.
    """

    def __init__(self, entries: Mapping[str, dict[str, Any]] | None = None) -> None:
        self._rows: dict[str, tuple[Any, ...]] = {}
        self._shared: dict[Any, Any] = {}
        for source, entry in (entries or {}).items():
            self[source] = entry

    def _share(self, value: Any) -> Any:
        try:
            return self._shared.setdefault(value, value)
        except TypeError:  # unhashable: keep it as it is
            return value

    def pack(self, entry: dict[str, Any]) -> tuple[Any, ...]:
        """The row: per-segment values as they are, the rest shared across entries."""
        row = [entry.get(key, _ABSENT) for key in MANIFEST_FIELDS]
        shared = self._shared
        for index in _SHARED_FIELDS:  # inlined `_share`: this runs per field per entry
            value = row[index]
            if type(value) is list:
                value = tuple(value)
            try:
                row[index] = shared.setdefault(value, value)
            except TypeError:
                row[index] = value
        return tuple(row)

    def matches(self, source: str, entry: dict[str, Any]) -> bool:
        """Whether `source`'s entry equals `entry`, compared as rows (no dict is built)."""
        row = self._rows.get(source)
        if row is None:
            return False
        for key, value in zip(MANIFEST_FIELDS, row, strict=True):
            given = entry.get(key, _ABSENT)
            if given != value and not (isinstance(given, list) and tuple(given) == value):
                return False
        return True

    def set_row(self, source: str, row: tuple[Any, ...]) -> None:
        self._rows[sys.intern(source)] = row

    def __setitem__(self, source: str, entry: dict[str, Any]) -> None:
        self.set_row(source, self.pack(entry))

    def __getitem__(self, source: str) -> dict[str, Any]:
        row = self._rows[source]
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in zip(MANIFEST_FIELDS, row, strict=True)
            if value is not _ABSENT
        }

    def __delitem__(self, source: str) -> None:
        del self._rows[source]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def journal_name(source: str) -> str:
    """The journal entry of one segment: a later record of it replaces the earlier."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    return f"{MANIFEST_JOURNAL}/{digest}.json"


class Manifest:
    """The entries in memory; `record` journals one, `compact` writes the single file.

    `record` may be called from several threads at once (the driver records
    segments as they finish); `compact` runs after the last `record`.
    """

    def __init__(
        self, out: OutDir, entries: dict[str, dict[str, Any]], journal: set[str] | None = None
    ) -> None:
        self._out = out
        self.entries = entries if isinstance(entries, PackedEntries) else PackedEntries(entries)
        # Journal entries the single file does not hold yet: folded and deleted by `compact`.
        self._journal: set[str] = set(journal or ())
        self._lock = threading.Lock()

    @classmethod
    def load(cls, out: OutDir) -> tuple[Manifest, str | None]:
        """The manifest and, when it could not be used, the one stderr note saying so.

        Reads the single file, lists the journal once and overlays the entries
        newer than the file. An unreadable single file discards the journal too,
        so "every segment re-extracts" stays true; its entries are deleted at
        the next compaction.
        """
        journal = out.listing(MANIFEST_JOURNAL)
        names = {f"{MANIFEST_JOURNAL}/{name}" for name in journal}
        written = out.modified(MANIFEST)
        data = out.read(MANIFEST)
        present = data is not None
        entries = PackedEntries()
        if data is not None:
            try:
                # Decoded, then the bytes dropped before the parse: one copy of a big
                # file in memory at a time, not two.
                text, data = data.decode("utf-8"), None
                entries = _parse_single(text)
                del text
            except (ValueError, KeyError, TypeError) as error:
                note = (
                    f"ignoring an unreadable manifest at {out.path(MANIFEST)} ({error}) — every "
                    "segment re-extracts"
                )
                return cls(out, {}, names), note
        newer = [
            f"{MANIFEST_JOURNAL}/{name}"
            for name, when in sorted(journal.items())
            if not present or written is None or when is None or when >= written
        ]
        for raw in out.read_many(newer).values():
            parsed = _parse_entry(raw)
            if parsed is not None:
                entries[parsed[0]] = parsed[1]
        return cls(out, entries, names), None

    def unchanged(self, source: str, inputs: dict[str, Any], existing: set[str]) -> bool:
        return inputs["output"] in existing and self.entries.matches(source, inputs)

    def previous_output(self, source: str) -> str | None:
        entry = self.entries.get(source)
        return entry.get("output") if entry else None

    def record(self, source: str, inputs: dict[str, Any]) -> None:
        """Record a written segment: its journal entry is durable when this returns."""
        entry = {key: inputs[key] for key in MANIFEST_FIELDS if key in inputs}
        name = journal_name(source)
        document = {"source": source, "entry": entry}
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._out.write(name, data)
        with self._lock:
            self.entries[source] = dict(inputs)
            self._journal.add(name)

    def compact(self) -> None:
        """Fold the journal into the single file, then delete the folded entries.

        The file is written first: a kill between the two leaves entries the
        file already holds, which a later load overlays harmlessly. With no
        journal entry to fold the file is left as it is (no rewrite on a run
        that skipped everything).
        """
        with self._lock:
            if not self._journal:
                return
            data = self.render()
            folded = sorted(self._journal)
        self._out.write(MANIFEST, data)
        self._out.delete_many(folded)
        self._out.remove_empty_folder(MANIFEST_JOURNAL)
        with self._lock:
            self._journal.difference_update(folded)

    def render(self) -> bytes:
        """The single-file manifest: pretty (2-space indent), sorted, fields in contract order."""
        documents = {
            path: {key: entry[key] for key in MANIFEST_FIELDS if key in entry}
            for path, entry in sorted(self.entries.items())
        }
        text = json.dumps({"documents": documents}, ensure_ascii=False, indent=2)
        return (text + "\n").encode("utf-8")


def _parse_single(data: str) -> PackedEntries:
    """The single file's entries, packed as the parser meets them.

    Decoding the whole document to dicts first held every entry three times
    over at a million segments (the dicts, their normalised copies, the packed
    rows); here each entry object is normalised and packed the moment it is
    decoded, so only the packed rows outlive the parse.
    """
    packed = PackedEntries()

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        if pairs and all(isinstance(value, _Row) for _, value in pairs):
            return {key: value for key, value in pairs}  # the documents object
        entry = dict(pairs)
        if "sha256" in entry:  # an entry: pack it now, absent fields at their defaults
            return _Row(packed.pack({**ENTRY_DEFAULTS, **entry}))
        return entry

    documents = json.loads(data, object_pairs_hook=hook)["documents"]
    if not isinstance(documents, dict):
        raise TypeError("documents is not an object")
    for source, row in documents.items():
        if isinstance(row, _Row):
            packed.set_row(str(source), row.values)
    return packed


class _Row:
    """A packed entry on its way out of the parser (told apart from a plain object)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values


def _parse_entry(data: bytes) -> tuple[str, dict[str, Any]] | None:
    """A journal entry's (source, entry); None for one that cannot be used (re-extracts)."""
    try:
        document = json.loads(data.decode("utf-8"))
        source, entry = document["source"], document["entry"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(source, str) or not isinstance(entry, dict):
        return None
    return source, _normalised(entry)


def _normalised(entry: dict[str, Any]) -> dict[str, Any]:
    merged = {**ENTRY_DEFAULTS, **entry}
    return {key: merged[key] for key in MANIFEST_FIELDS if key in merged}
