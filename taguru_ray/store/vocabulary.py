"""``--vocabulary PATH``: the target context's own names, read from its export (taguru ADR 0015).

An exported source stream of the target context (``taguru export --out DIR``,
or ``GET /contexts/{id}/export`` saved to disk) steers each segment toward the
spellings the context already uses, so ``cargo-nextest`` and ``nextest`` never
become twins (seed 000, #496 S3). Extract stays offline: the operator hands it
the file, the way ``--schema`` is handed over.

What is read. PATH is a ``*.jsonl`` file, or a folder whose regular ``*.jsonl``
files are read in sorted order, non-recursively — the rule ``taguru import
DIR`` reads by, so an extract ``--out`` serves too (its manifest, checkpoints
and trace are not ``*.jsonl`` files of the folder itself and are left alone).
Local paths and fsspec URLs alike. A file is a stream: one source file or many
concatenated, each opened by a header line (``{"type":"source",…}`` or the
older ``{"taguru_batch":1,…}``); ``taguru_schema``/``taguru_group`` records
(and ``type`` ``schema``/``group``) close the source before them and are not
vocabulary. Each source's lines pass the source-file reader (`parse_source_file`)
— except aliases, which an export keeps in its last source, away from the
associations that use their canonicals; they are checked line by line here.
Anything unreadable, and a PATH that yields no name at all, is a
`VocabularyError` naming the file and line: asked-for steering never silently
turns off.

What is harvested (the reference's ``concept_vocabulary``/``label_vocabulary``):
concept names = association subjects and objects + concept alias canonicals;
labels = association labels + label alias canonicals; never alias spellings
(the variants a canonical exists to fold). Also, for ``--chunk-context
ingested`` (taguru ADR 0033 §3.2), each concept's strongest few relations, and for the
run's ledgers, label use counts and the alias table.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec

from taguru_ray.contract.context_schema import SCHEMA_TYPE_LABEL
from taguru_ray.contract.items import MAX_NAME_BYTES
from taguru_ray.contract.rust_text import debug_str, describe, rust_trim, utf8_len
from taguru_ray.contract.source_file import SourceFile, SourceFileError, parse_source_file
from taguru_ray.pipeline.vocabulary import Relation, Vocabulary
from taguru_ray.store.inputs import read_regular

# `--chunk-context ingested` offers at most this many relations per name.
KNOWN_RELATIONS_PER_NAME = 5

_BOM = b"\xef\xbb\xbf"
_RECORD_TYPES = ("schema", "group")


class VocabularyError(ValueError):
    """An export ``--vocabulary`` cannot use: ``<file>[: line <n>]: <what is wrong>``."""

    def __init__(self, file: str, line: int | None, detail: str) -> None:
        where = f"{file}: line {line}" if line is not None else file
        super().__init__(f"{where}: {detail}")
        self.file = file
        self.line = line
        self.detail = detail


# ---------------------------------------------------------------------- load


def load_vocabulary(path: str) -> Vocabulary:
    """Read ``--vocabulary PATH`` (a file or a folder of ``*.jsonl``; local or fsspec URL)."""
    try:
        fs, root = fsspec.core.url_to_fs(path)
    except (ValueError, ImportError) as error:
        raise VocabularyError(path, None, f"cannot be opened: {error}") from None
    harvest = _Harvest()
    for shown, location in _stream_files(fs, root, path):
        try:
            data = read_regular(location if "://" not in path else shown)
        except OSError as error:
            raise VocabularyError(shown, None, f"cannot be read: {error}") from None
        for source in _sources(data, shown):
            harvest.absorb(source)
    return harvest.finish(path)


def _stream_files(fs: Any, root: str, path: str) -> list[tuple[str, str]]:
    """(name to show, location) of each stream PATH names, in reading order."""
    try:
        if not fs.exists(root):
            raise VocabularyError(path, None, "no such file or folder")
        if not fs.isdir(root):
            return [(path, root)]
        entries = fs.ls(root, detail=True)
    except OSError as error:
        raise VocabularyError(path, None, f"cannot be read: {error}") from None
    names = sorted(
        entry["name"]
        for entry in entries
        if entry.get("type") == "file" and entry["name"].endswith(".jsonl")
    )
    if not names:
        raise VocabularyError(
            path,
            None,
            "holds no *.jsonl files — point --vocabulary at an export of the target "
            "context (taguru export --out DIR) or at one exported file",
        )
    return [(posixpath.join(path, posixpath.basename(name)), name) for name in names]


@dataclass
class _Source:
    """One source of a stream: its lines (aliases blanked) and its alias lines."""

    first_line: int
    lines: list[bytes]
    aliases: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def _sources(data: bytes, name: str) -> Iterator[tuple[SourceFile, list[tuple[str, str, str]]]]:
    """Each source of one stream, read: (source file without aliases, its aliases)."""
    for source in _split(data, name):
        body = b"\n".join(source.lines) + b"\n"
        try:
            parsed = parse_source_file(body, name=name)
        except SourceFileError as error:
            raise VocabularyError(name, source.first_line + error.line - 1, error.detail) from None
        yield parsed, _aliases(source.aliases, name)


def _split(data: bytes, name: str) -> Iterator[_Source]:
    """Cut a stream at its header and record lines; line numbers count from the file's first."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    current: _Source | None = None
    for number, raw in enumerate(pieces, start=1):
        record = _record(raw, name, number)
        kind = _kind(record)
        if kind in ("header", "record") and current is not None:
            yield current
            current = None
        if kind == "header":
            current = _Source(number, [raw])
        elif kind in ("blank", "record"):
            if current is not None:
                current.lines.append(b"")
        elif current is None:
            raise VocabularyError(name, number, "a line before any source header")
        elif kind == "alias":
            current.lines.append(b"")
            current.aliases.append((number, record or {}))
        else:
            current.lines.append(raw)
    if current is not None:
        yield current


def _record(raw: bytes, name: str, number: int) -> dict[str, Any] | None:
    """One line as a JSON object, None when blank."""
    try:
        text = rust_trim(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise VocabularyError(name, number, f"not UTF-8 (byte {error.start + 1})") from None
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise VocabularyError(
            name, number, f"not JSON: {error.msg} at column {error.colno}"
        ) from None
    if not isinstance(value, dict):
        raise VocabularyError(name, number, f"a line must be a JSON object, got {describe(value)}")
    return value


def _kind(record: dict[str, Any] | None) -> str:
    if record is None:
        return "blank"
    if "type" in record:
        return "record" if record["type"] in _RECORD_TYPES else "header"
    if "taguru_batch" in record:
        return "header"
    if "taguru_schema" in record or "taguru_group" in record:
        return "record"
    return "alias" if "alias" in record else "item"


def _aliases(lines: list[tuple[int, dict[str, Any]]], name: str) -> list[tuple[str, str, str]]:
    """(spelling, canonical, kind) of each alias line; one spelling per namespace per source."""
    seen: dict[tuple[str, str], int] = {}
    aliases: list[tuple[str, str, str]] = []
    for number, record in lines:
        try:
            spelling, canonical, kind = _alias(record)
        except ValueError as refusal:
            raise VocabularyError(name, number, str(refusal)) from None
        earlier = seen.setdefault((kind, spelling), number)
        if earlier != number:
            detail = f"{kind} alias {debug_str(spelling)} appears twice (first at line {earlier})"
            raise VocabularyError(name, number, detail)
        aliases.append((spelling, canonical, kind))
    return aliases


def _alias(record: dict[str, Any]) -> tuple[str, str, str]:
    for key in record:
        if key not in ("alias", "canonical", "kind"):
            raise ValueError(f"unknown field {debug_str(key)} on an alias line")
    spelling, canonical = _name(record, "alias"), _name(record, "canonical")
    kind = record.get("kind")
    if kind not in ("concept", "label") or not isinstance(kind, str):
        raise ValueError(f'kind: expected "concept" or "label", got {describe(kind)}')
    if spelling == canonical:
        raise ValueError(f"alias {debug_str(spelling)} equals its canonical")
    return spelling, canonical, kind


def _name(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key}: expected a non-empty string, got {describe(value)}")
    if utf8_len(value) > MAX_NAME_BYTES:
        raise ValueError(f"{key} of {utf8_len(value)} bytes exceeds the {MAX_NAME_BYTES}-byte cap")
    return value


@dataclass
class _Harvest:
    """The names and relations gathered so far, in export order."""

    concepts: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    relations: dict[str, list[Relation]] = field(default_factory=dict)
    uses: Counter[str] = field(default_factory=Counter)
    aliases: dict[str, list[tuple[str, str]]] = field(
        default_factory=lambda: {"concept": [], "label": []}
    )

    def absorb(self, source: tuple[SourceFile, list[tuple[str, str, str]]]) -> None:
        parsed, aliases = source
        for fact in parsed.associations:
            self.concepts.update((fact.subject, fact.object))
            self._label(fact.label)
            self.relations.setdefault(fact.subject, []).append(
                Relation(fact.label, fact.object, True, fact.weight)
            )
            self.relations.setdefault(fact.object, []).append(
                Relation(fact.label, fact.subject, False, fact.weight)
            )
        for spelling, canonical, kind in aliases:
            if kind == "concept":
                self.concepts.add(canonical)
            else:
                self._label(canonical)
            self.aliases[kind].append((spelling, canonical))

    def _label(self, label: str) -> None:
        self.labels.add(label)
        if label != SCHEMA_TYPE_LABEL:
            self.uses[label] += 1

    def finish(self, path: str) -> Vocabulary:
        if not self.concepts and not self.labels:
            raise VocabularyError(
                path,
                None,
                "no names to offer: the export holds no associations or aliases — "
                "export the target context again, or leave --vocabulary off",
            )
        return Vocabulary(
            concepts=frozenset(self.concepts),
            labels=frozenset(self.labels),
            relations={name: _strongest(self.relations[name]) for name in sorted(self.relations)},
            label_uses={label: self.uses[label] for label in sorted(self.uses)},
            concept_aliases=tuple(self.aliases["concept"]),
            label_aliases=tuple(self.aliases["label"]),
        )


def _strongest(relations: list[Relation]) -> list[Relation]:
    """At most five by |weight|, export order among equals; a repeated relation counts once.

    An export re-renders an association asserted N times as N identical lines,
    so one relation may arrive many times; only its strongest copy is kept.
    """
    ranked = sorted(relations, key=lambda relation: -abs(relation.weight))
    unique: dict[tuple[str, str, bool], Relation] = {}
    for relation in ranked:
        unique.setdefault((relation.label, relation.other, relation.outgoing), relation)
    return list(unique.values())[:KNOWN_RELATIONS_PER_NAME]
