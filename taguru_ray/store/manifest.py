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

Its length (over 400 lines) is one file's: the packed entries, the streamed
parse, the journal and the compaction must agree on one encoding.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
import sys
import threading
from collections.abc import Container, Iterator, Mapping, MutableMapping
from typing import IO, Any

from taguru_ray.contract.manifest_entry import ENTRY_DEFAULTS, MANIFEST_FIELDS
from taguru_ray.contract.names import MANIFEST, MANIFEST_JOURNAL, output_name
from taguru_ray.store.outdir import OutDir

_ABSENT = object()
_DERIVED = object()  # a row's output: the name output_name(source) gives
# Fields whose value differs per segment: sharing them would only grow the table.
_PER_SEGMENT = ("sha256", "source_id", "output")
_SHARED = tuple(key for key in MANIFEST_FIELDS if key not in _PER_SEGMENT)
_GET_SHARED = operator.itemgetter(*_SHARED)
_ALL_ABSENT = dict.fromkeys(MANIFEST_FIELDS, _ABSENT)
_TAGS = _SHARED.index("tags")  # the one list field: a tuple in the row


class PackedEntries(MutableMapping[str, dict[str, Any]]):
    """Entries kept as small rows: the per-segment values, then one shared tuple.

    A million-segment manifest held as dicts costs gigabytes. Every field but
    the hash, the source id and the output name is usually the same for every
    entry of a run, so a row is (sha256, source_id, output, shared), the
    shared tuple interned: about 90 bytes of row per entry instead of a dict.
    The usual row (no source id, the output named as its source names it, the
    first shared tuple met) is its 32-byte digest alone. Reading an entry gives
    a fresh dict.
    """

    def __init__(self, entries: Mapping[str, dict[str, Any]] | None = None) -> None:
        self._rows: dict[str, Any] = {}
        self._shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._usual: tuple[Any, ...] | None = None  # the shared tuple a bare digest implies
        for source, entry in (entries or {}).items():
            self[source] = entry

    @staticmethod
    def _values(entry: dict[str, Any]) -> tuple[Any, ...]:
        """The shared fields' values in contract order (absent ones marked), hashable."""
        values: tuple[Any, ...] = _GET_SHARED(_ALL_ABSENT | entry)  # C-speed: per entry
        if type(values[_TAGS]) is list:
            values = (*values[:_TAGS], tuple(values[_TAGS]), *values[_TAGS + 1 :])
        return values

    def pack(self, entry: dict[str, Any], source: str) -> Any:
        """The row: per-segment values as they are, the rest one shared tuple. The output
        name is not kept when it is the one `source` always gets (it is recomputed)."""
        values = self._values(entry)
        try:
            shared = self._shared.setdefault(values, values)
        except TypeError:  # an unhashable value (a nested object): kept as it is
            shared = values
        output = entry.get("output", _ABSENT)
        if output == output_name(source):
            output = _DERIVED
        sha256 = _packed_sha(entry.get("sha256", _ABSENT))
        source_id = entry.get("source_id", _ABSENT)
        if self._usual is None:
            self._usual = shared
        usual = source_id == "" and output is _DERIVED and shared is self._usual
        if usual and type(sha256) is bytes:
            return sha256
        return (sha256, source_id, output, shared)

    def _unpack(self, row: Any) -> tuple[Any, ...]:
        """(sha256, source_id, output, shared) of a row, a bare digest included."""
        return (row, "", _DERIVED, self._usual) if type(row) is bytes else row

    def matches(self, source: str, entry: dict[str, Any]) -> bool:
        """Whether `source`'s entry equals `entry`, compared as rows (no dict is built)."""
        row = self._rows.get(source)
        if row is None:
            return False
        sha256, source_id, output, shared = self._unpack(row)
        if output is _DERIVED:
            output = output_name(source)
        return (
            _packed_sha(entry.get("sha256", _ABSENT)) == sha256
            and entry.get("output", _ABSENT) == output
            and entry.get("source_id", _ABSENT) == source_id
            and self._values(entry) == shared
        )

    def set_row(self, source: str, row: Any) -> None:
        self._rows[sys.intern(source)] = row

    def __setitem__(self, source: str, entry: dict[str, Any]) -> None:
        self.set_row(source, self.pack(entry, source))

    def __getitem__(self, source: str) -> dict[str, Any]:
        sha256, source_id, output, shared = self._unpack(self._rows[source])
        if output is _DERIVED:
            output = output_name(source)
        values = dict(zip(_SHARED, shared, strict=True))
        sha256 = sha256.hex() if isinstance(sha256, bytes) else sha256
        values.update(sha256=sha256, source_id=source_id, output=output)
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key in MANIFEST_FIELDS
            if (value := values[key]) is not _ABSENT
        }

    def __delitem__(self, source: str) -> None:
        del self._rows[source]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def _packed_sha(value: Any) -> Any:
    """A lowercase hex digest as its 32 bytes (half the memory); anything else as it is."""
    if type(value) is str and len(value) == 64:
        try:
            packed = bytes.fromhex(value)
        except ValueError:
            return value
        if packed.hex() == value:  # uppercase hex must read back as written
            return packed
    return value


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
        self._recorded: set[str] = set()  # the sources this run wrote
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
        try:
            handle = out.open_text(MANIFEST)
        except OSError as error:  # a folder in its place, no permission to read it
            note = (
                f"ignoring an unreadable manifest at {out.path(MANIFEST)} "
                f"({error.strerror or error}) — every segment re-extracts"
            )
            return cls(out, {}, names), note
        present = handle is not None
        entries = PackedEntries()
        if handle is not None:
            try:
                with handle:
                    entries = _parse_single(handle)
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

    def unchanged(self, source: str, inputs: dict[str, Any], existing: Container[str]) -> bool:
        return inputs["output"] in existing and self.entries.matches(source, inputs)

    def previous_output(self, source: str) -> str | None:
        entry = self.entries.get(source)
        return entry.get("output") if entry else None

    def record(self, source: str, inputs: dict[str, Any]) -> None:
        """Record a written segment: its journal entry is durable when this returns."""
        self.write_entry(source, inputs)
        self.remember(source, inputs)

    def write_entry(self, source: str, inputs: dict[str, Any]) -> None:
        """The segment's journal entry, on the store; `remember` it once this is durable."""
        entry = {key: inputs[key] for key in MANIFEST_FIELDS if key in inputs}
        document = {"source": source, "entry": entry}
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._out.write(journal_name(source), data)

    def remember(self, source: str, inputs: dict[str, Any]) -> None:
        """Hold a recorded segment in memory, for the next compaction and skip."""
        with self._lock:
            self.entries[source] = dict(inputs)
            self._journal.add(journal_name(source))
            self._recorded.add(source)

    def compact(self) -> None:
        """Fold the journal into the single file, then delete the folded entries.

        A merge, never an overwrite: the store is read again as it is now (its
        single file and journal) and this run's own entries are laid over it, so
        an entry another run recorded since this one loaded (a run that took an
        expired lease over) survives. The file is written first: a kill between
        the two leaves entries the file already holds, which a later load
        overlays harmlessly. With no journal entry to fold the file is left as it
        is (no rewrite on a run that skipped everything).
        """
        with self._lock:
            if not self._journal:
                return
            mine = {source: self.entries[source] for source in self._recorded}
            ours = set(self._journal)
        current, _ = Manifest.load(self._out)  # unreadable: this run's entries and none else
        for source, entry in mine.items():
            current.entries[source] = entry
        data = current.render()
        folded = sorted(ours | current._journal)
        self._out.write(MANIFEST, data)
        self._out.delete_many(folded)
        self._out.remove_empty_folder(MANIFEST_JOURNAL)
        with self._lock:
            self.entries = current.entries
            self._journal.difference_update(folded)

    def render(self) -> bytes:
        """The single-file manifest: pretty (2-space indent), sorted, fields in contract order."""
        documents = {
            path: {key: entry[key] for key in MANIFEST_FIELDS if key in entry}
            for path, entry in sorted(self.entries.items())
        }
        text = json.dumps({"documents": documents}, ensure_ascii=False, indent=2)
        return (text + "\n").encode("utf-8")


def _parse_single(handle: IO[str]) -> PackedEntries:
    """The single file's entries, read a chunk at a time and packed as they are met.

    A million-segment manifest is most of a gigabyte of text: never held whole,
    nor decoded to dicts all at once. Each member of ``documents`` is decoded on
    its own (C-speed), packed, and dropped; other top-level keys are skipped.
    """
    packed = PackedEntries()
    stream = _JsonStream(handle)
    found = False
    stream.expect("{")
    if stream.peek() == "}":
        stream.pos += 1
    else:
        while True:
            key = stream.value()
            stream.expect(":")
            if key == "documents":
                found = True
                _documents(stream, packed)
            else:
                stream.value()
            if stream.separator("}"):
                break
    if stream.peek():
        raise ValueError(f"extra data after the manifest object at character {stream.offset}")
    if not found:
        raise KeyError("documents")
    return packed


def _documents(stream: _JsonStream, packed: PackedEntries) -> None:
    if stream.peek() != "{":
        raise TypeError("documents is not an object")
    stream.pos += 1
    if stream.peek() == "}":
        stream.pos += 1
        return
    while True:
        source = stream.value()
        if not isinstance(source, str):
            raise ValueError(f"a documents key is not a string at character {stream.offset}")
        stream.expect(":")
        entry = stream.value()
        if isinstance(entry, dict) and "sha256" in entry:
            packed.set_row(source, packed.pack({**ENTRY_DEFAULTS, **entry}, source))
        if stream.separator("}"):
            return


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
STREAM_CHUNK_CHARS = 1 << 20


class _JsonStream:
    """JSON values decoded one at a time from text read in chunks (json's raw_decode)."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle
        self._eof = False
        self._dropped = 0  # characters consumed and dropped from the buffer
        self.buffer = ""
        self.pos = 0

    @property
    def offset(self) -> int:
        return self._dropped + self.pos

    def _more(self) -> bool:
        if self._eof:
            return False
        chunk = self._handle.read(STREAM_CHUNK_CHARS)
        if not chunk:
            self._eof = True
            return False
        self._dropped += self.pos
        self.buffer = self.buffer[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            self.pos = _SPACE.match(self.buffer, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at character {self.offset}")
        self.pos += 1

    def separator(self, closing: str) -> bool:
        """Past a ',' (False: another member follows) or the `closing` bracket (True)."""
        char = self.peek()
        if char not in (",", closing):
            raise ValueError(f"expected ',' or {closing!r} at character {self.offset}")
        self.pos += 1
        return char == closing

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError:
                if self._more():
                    continue  # the value runs on into the next chunk
                raise
            # A number that ends the buffer may go on in the next chunk.
            if end == len(self.buffer) and self._more():
                continue
            self.pos = end
            return value


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
