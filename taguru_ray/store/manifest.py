"""The manifest: the skip index of written segments, as a journal plus one compacted file.

Readers outside taguru-ray know one file, ``.extract-manifest.json`` (CONTRACT.md
section 2): ``{"documents": {<input path>: <entry>}}``, pretty-printed, keys
sorted. An entry records the compute inputs its source file was made from; a
segment is skipped only when every input is equal and the recorded output
file still exists. A missing or unreadable manifest means everything
re-extracts — never a false "unchanged". Only successes are recorded.

Rewriting that one file per written segment costs O(segments) bytes each
time — a terabyte of PUTs over a million-segment run. So a run records each
written segment in the journal, ``.extract-manifest.d/`` (`store/journal.py`:
an object per entry on an object store, a log per writing process on a local
disk, ADR 0044), and `compact` folds the journal into the single file once, at
run end, then deletes the files it folded (ADR 0009). A run killed before its
compaction leaves its entries behind; the next `load` overlays them on the
single file, so nothing written is ever re-paid. A journal file older than the
single file is not overlaid: a tool that knows no journal (the reference)
rewrote the file after it, so the file is newer for every segment.

At a million segments the single file is most of a gigabyte (ADR 0042): the
entries are held as compact rows (`store/manifest_rows.py`), the file is read a
chunk at a time — an entry whose middle lines repeat the one before without a
JSON decode — and written as it is rendered, and each write leaves an index
beside it (`store/manifest_index.py`) that the next load reads instead, while
the file still has the bytes the index was made from.

Its length (over 400 lines) is one file's: the streamed parse, the rendering,
the journal and the compaction must agree on one encoding.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import IO, Any

from taguru_ray.contract.manifest_entry import ENTRY_DEFAULTS, MANIFEST_FIELDS
from taguru_ray.contract.names import MANIFEST, MANIFEST_JOURNAL, output_name
from taguru_ray.store.journal import Journal, journal_documents, journal_name
from taguru_ray.store.manifest_digests import ManifestDigests
from taguru_ray.store.manifest_index import MANIFEST_INDEX, index_chunks, read_index
from taguru_ray.store.manifest_rows import (
    ABSENT,
    DERIVED,
    SHARED,
    PackedEntries,
    SortedRows,
    packed_sha,
)
from taguru_ray.store.outdir import OutDir

__all__ = ["Manifest", "PackedEntries", "journal_name", "render_documents"]


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
        # Journal files the single file does not hold yet: folded and deleted by `compact`.
        self._journal: set[str] = set(journal or ())
        self._recorded: set[str] = set()  # the sources this run wrote
        self._writer = Journal(out)  # `record`'s; the workers write with their own
        self._lock = threading.Lock()

    @classmethod
    def load(cls, out: OutDir, known: Container[str] = ()) -> tuple[Manifest, str | None]:
        """The manifest and, when it could not be used, the one stderr note saying so.

        Reads the single file, lists the journal once and overlays the entries
        of the journal files newer than the file, oldest first. An unreadable
        single file discards the journal too, so "every segment re-extracts"
        stays true; its files are deleted at the next compaction. The journal
        files named in `known` are listed but not read: the caller holds their
        entries (a GET each on an object store).
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
                    # The index, when it was made from these bytes; else the JSON itself.
                    entries = read_index(out) or _parse_single(handle)
            except (ValueError, KeyError, TypeError) as error:
                note = (
                    f"ignoring an unreadable manifest at {out.path(MANIFEST)} ({error}) — every "
                    "segment re-extracts"
                )
                return cls(out, {}, names), note
        newer = [
            f"{MANIFEST_JOURNAL}/{name}"
            for name, when in sorted(journal.items(), key=lambda item: (item[1] or 0.0, item[0]))
            if not present or written is None or when is None or when >= written
        ]
        wanted = [name for name in newer if name not in known]
        found = out.read_many(wanted)
        for name in wanted:  # oldest first: a later entry for a source replaces an earlier
            for document in journal_documents(name, found.get(name, b"")):
                parsed = _parse_entry(document)
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
        self._writer.write(source, inputs)

    def remember(self, source: str, inputs: dict[str, Any]) -> None:
        """Hold a recorded segment in memory, for the next compaction and skip."""
        with self._lock:
            self.entries[source] = dict(inputs)
            self._recorded.add(source)

    def digest_index(self) -> ManifestDigests:
        """The entries' paths by digest (`store/manifest_digests.py`), as held now: built
        under the lock, so no `remember` grows the rows' buffer while it is read."""
        with self._lock:
            return ManifestDigests(*self.entries.held())

    def compact(self, forget: Mapping[str, str] | None = None) -> None:
        """Fold the journal into the single file, then delete the folded journal files.

        `forget`: the sources `extract --prune` retires (path → the digest their entry
        holds): their entries leave the file — unless recorded since with other bytes.

        A merge, never an overwrite: the store is read again as it is now (its
        single file and journal) and this run's own entries are laid over it, so
        an entry another run recorded since this one loaded (a run that took an
        expired lease over) survives. The file is written first: a kill between
        the two leaves entries the file already holds, which a later load
        overlays harmlessly. With no journal entry to fold the file is left as it
        is (no rewrite on a run that skipped everything). The file is written as
        it is rendered, never held whole (most of a gigabyte at a million
        entries).
        """
        with self._lock:
            if not self._journal and not self._recorded and not forget:
                return
            mine = self.entries
            recorded = sorted(self._recorded)
            ours = set(self._journal)
        # This run's own entries are laid over whatever the store holds for them, so an
        # object store's are listed, not fetched again (a GET each).
        own = set() if self._out.local else {journal_name(source) for source in recorded}
        current, _ = Manifest.load(self._out, own)  # unreadable: this run's entries only
        table = current.entries
        for source in recorded:
            row = mine.row(source)
            if row is not None:
                table.set_row(source, table.pack_values(*mine.unpack(row), source))
        for source, sha256 in (forget or {}).items():
            row = table.row(source)
            if row is not None and _hex(table.unpack(row)[0]) == sha256:
                del table[source]
        folded = sorted(ours | own | current._journal)
        current.write_single()
        self._out.delete_many(folded)
        self._out.remove_empty_folder(MANIFEST_JOURNAL)
        with self._lock:
            self.entries = current.entries
            self._journal.difference_update(folded)
            self._recorded.difference_update(recorded)

    def write_single(self) -> None:
        """Write the single file (`render`'s bytes, as they are rendered), then its index
        (`store/manifest_index.py`): a kill between the two leaves an index made for
        other bytes, which a load passes over."""
        table = self.entries
        rows = table.rows_in_order()
        digest = hashlib.sha256()
        size = 0

        def chunks() -> Iterator[bytes]:
            nonlocal size
            for chunk in _chunked(render_documents(_Members(table).texts(rows))):
                digest.update(chunk)
                size += len(chunk)
                yield chunk

        self._out.write_chunks(MANIFEST, chunks())
        self._out.write_chunks(MANIFEST_INDEX, index_chunks(table, rows, digest.hexdigest(), size))

    def render(self) -> bytes:
        """The single-file manifest: pretty (2-space indent), sorted, fields in contract order."""
        return b"".join(self.render_chunks())

    def render_chunks(self) -> Iterator[bytes]:
        """`render`'s bytes a chunk at a time, in the order they are written."""
        table = self.entries
        return _chunked(render_documents(_Members(table).texts(table.rows_in_order())))


def render_documents(members: Iterable[str]) -> Iterator[str]:
    """The single file's text around its members (each ``"<path>": {…}`` as `_Members`
    renders it), as ``json.dumps({"documents": …}, ensure_ascii=False, indent=2)`` and a
    final newline would give it, without ever holding it whole."""
    first = True
    for member in members:
        yield ('{\n  "documents": {\n    ' if first else ",\n    ") + member
        first = False
    yield '{\n  "documents": {}\n}\n' if first else "\n  }\n}\n"


def _chunked(texts: Iterable[str], size: int = 1 << 20) -> Iterator[bytes]:
    held: list[str] = []
    length = 0
    for text in texts:
        held.append(text)
        length += len(text)
        if length >= size:
            yield "".join(held).encode("utf-8")
            held, length = [], 0
    if held:
        yield "".join(held).encode("utf-8")


# The fields before `source_id` in contract order, and those after it up to `output`.
_BEFORE_SOURCE_ID = SHARED[: SHARED.index("date")]
_AFTER_SOURCE_ID = SHARED[SHARED.index("date") :]
assert ("sha256", *_BEFORE_SOURCE_ID, "source_id", *_AFTER_SOURCE_ID, "output") == MANIFEST_FIELDS


def _field(key: str, value: Any) -> str:
    """One field line of an entry, at the entry's depth in the single file."""
    text = json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n      ")
    return f'      "{key}": {text}'


class _Members:
    """Each document member's text, built from its row: the lines of the shared fields
    are rendered once per shared tuple, not once per entry."""

    def __init__(self, table: PackedEntries) -> None:
        self._table = table
        self._lines: dict[int, tuple[tuple[Any, ...], list[str], list[str]]] = {}

    def _shared(self, shared: tuple[Any, ...]) -> tuple[list[str], list[str]]:
        held = self._lines.get(id(shared))
        if held is None or held[0] is not shared:
            values = dict(zip(SHARED, shared, strict=True))
            before = [_field(k, values[k]) for k in _BEFORE_SOURCE_ID if values[k] is not ABSENT]
            after = [_field(k, values[k]) for k in _AFTER_SOURCE_ID if values[k] is not ABSENT]
            held = self._lines[id(shared)] = (shared, before, after)
        return held[1], held[2]

    def texts(self, rows: SortedRows) -> Iterator[str]:
        for index, source in rows.paths():
            yield self.text(source, rows.row(index))

    def text(self, source: str, row: Any) -> str:
        sha256, source_id, output, shared = self._table.unpack(row)
        before, after = self._shared(shared)
        lines: list[str] = []
        if sha256 is not ABSENT:
            lines.append(_field("sha256", sha256.hex() if type(sha256) is bytes else sha256))
        lines += before
        if source_id is not ABSENT:
            lines.append(_field("source_id", source_id))
        lines += after
        if output is DERIVED:
            output = output_name(source)
        if output is not ABSENT:
            lines.append(_field("output", output))
        body = "{\n" + ",\n".join(lines) + "\n    }" if lines else "{}"
        return json.dumps(source, ensure_ascii=False) + ": " + body


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
    layout = _Layout(packed)
    while True:
        # A key without escapes, its colon and the value's first character in the buffer:
        # read with one match (three JSON reads cost more than the entry's own).
        key = _PLAIN_KEY.match(stream.buffer, stream.pos)
        if key is not None and key.end() < len(stream.buffer):
            source: Any = key.group(1)
            stream.pos = key.end()
        else:
            source = stream.value()
            if not isinstance(source, str):
                raise ValueError(f"a documents key is not a string at character {stream.offset}")
            stream.expect(":")
            stream.peek()
        row = layout.row(stream, source)
        if row is None:
            entry = stream.value()
            if isinstance(entry, dict) and "sha256" in entry:
                row = packed.pack({**ENTRY_DEFAULTS, **entry}, source)
        if row is not None:
            packed.set_row(source, row)
        after = _SEPARATOR.match(stream.buffer, stream.pos)
        if after is not None:
            stream.pos = after.end()
            if after.group(1) == "}":
                return
        elif stream.separator("}"):
            return


_PLAIN_KEY = re.compile(r'[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
_SEPARATOR = re.compile(r"[ \t\n\r]*([,}])")


# The pretty layout this module (and the reference's serde_json) writes an entry in:
# its first line the digest, its last the output, and between them the lines a whole
# run's entries mostly share.
_HEAD = '{\n      "sha256": "'
_HEAD_END = '",\n'
_OUTPUT = ',\n      "output": "'
_END = '"\n    }'
_MIDDLE_AT = len(_HEAD) + 64 + len(_HEAD_END)
_LONGEST = 1 << 16  # an entry longer than this is decoded as any JSON
_LEARNED = 256  # middles remembered at most (a run with --source-id has one per entry)


class _Layout:
    """Entries in the pretty layout, read without a JSON decode when their middle (every
    line between the digest and the output) is one met before.

    The first entry with a given middle is decoded whole (json) and its middle is
    remembered only if the decode agrees: one object, the digest and output as the
    first and last lines read them. A later entry with the same middle text differs
    from it only in the digest and output lines, which are read as they stand: a
    64-character lowercase hex digest and an output string without escapes, or the
    entry is decoded as any JSON. So an entry reads the same either way.
    """

    def __init__(self, packed: PackedEntries) -> None:
        self._packed = packed
        self._middles: dict[str, tuple[tuple[Any, ...], Any]] = {}
        self._last: tuple[str, tuple[tuple[Any, ...], Any]] | None = None  # the middle met last

    def row(self, stream: _JsonStream, source: str) -> Any:
        """The row of the entry at the stream's position, the stream moved past it; None
        (the stream unmoved) when it must be decoded as any JSON."""
        last = self._last
        if last is not None:  # the usual entry: the middle met last, compared in place
            buffer, start = stream.buffer, stream.pos
            middle, known = last
            middle_at = start + _MIDDLE_AT
            output_at = middle_at + len(middle) + len(_OUTPUT)
            quote = buffer.find('"', output_at)
            if (
                quote >= 0
                and buffer.startswith(_END, quote)
                and buffer.startswith(_HEAD, start)
                and buffer.startswith(_HEAD_END, middle_at - len(_HEAD_END))
                and buffer.startswith(middle, middle_at)
                and buffer.startswith(_OUTPUT, output_at - len(_OUTPUT))
            ):
                sha256 = packed_sha(buffer[start + len(_HEAD) : middle_at - len(_HEAD_END)])
                output = buffer[output_at:quote]
                if type(sha256) is bytes and "\\" not in output:
                    stream.pos = quote + len(_END)
                    shared, source_id = known
                    return self._packed.pack_values(sha256, source_id, output, shared, source)
        return self._row(stream, source)

    def _row(self, stream: _JsonStream, source: str) -> Any:
        if not stream.buffer.startswith(_HEAD, stream.pos):
            if len(stream.buffer) - stream.pos >= len(_HEAD) or not stream.more():
                return None
            return self._row(stream, source)
        end = stream.buffer.find(_END, stream.pos)
        while end < 0:
            if len(stream.buffer) - stream.pos > _LONGEST or not stream.more():
                return None
            end = stream.buffer.find(_END, stream.pos)
        start = stream.pos
        text = stream.buffer[start : end + len(_END)]
        digest_at = len(_HEAD)
        middle_at = digest_at + 64 + len(_HEAD_END)
        output_at = text.rfind(_OUTPUT)
        if output_at < middle_at or text[middle_at - len(_HEAD_END) : middle_at] != _HEAD_END:
            return None
        sha256 = packed_sha(text[digest_at : middle_at - len(_HEAD_END)])
        output = text[output_at + len(_OUTPUT) : -len(_END)]
        if type(sha256) is not bytes or '"' in output or "\\" in output:
            return None
        middle = text[middle_at:output_at]
        known = self._middles.get(middle)
        if known is None:
            known = self._learn(text, middle, sha256, output)
            if known is None:
                return None
        self._last = (middle, known)
        stream.pos = start + len(text)
        shared, source_id = known
        return self._packed.pack_values(sha256, source_id, output, shared, source)

    def _learn(
        self, text: str, middle: str, sha256: bytes, output: str
    ) -> tuple[tuple[Any, ...], Any] | None:
        try:
            entry = json.loads(text)
        except ValueError:
            return None
        if (
            not isinstance(entry, dict)
            or packed_sha(entry.get("sha256")) != sha256
            or entry.get("output") != output
            # A middle that names the digest or the output again (JSON: the last one
            # wins) would give a later entry's first line the lie: never learned.
            or '"sha256"' in middle
            or '"output"' in middle
        ):
            return None
        merged = {**ENTRY_DEFAULTS, **entry}
        known = (self._packed.shared_tuple(merged), merged.get("source_id", ABSENT))
        if len(self._middles) < _LEARNED:
            self._middles[middle] = known
        return known


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# Below malloc's mmap threshold (128 KiB): a chunk freed never raises it (ADR 0042).
STREAM_CHUNK_CHARS = 1 << 15


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

    def more(self) -> bool:
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
            if not self.more():
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
                if self.more():
                    continue  # the value runs on into the next chunk
                raise
            # A number that ends the buffer may go on in the next chunk.
            if end == len(self.buffer) and self.more():
                continue
            self.pos = end
            return value


def _hex(sha256: Any) -> Any:
    return sha256.hex() if type(sha256) is bytes else sha256


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
