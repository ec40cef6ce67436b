"""What an --out's source files hold: associations, concepts and labels, as tables and counts.

Every file is read with the import parser (`contract/source_file.py`), as
import reads it (``strict=False``: a paragraph past the passage's end is
import's to drop, an alias may name a concept another file interned), so a
table here holds exactly what ``taguru import`` would load — no second reading
of the format. Files come in name order, one folder level (`read_source_files`:
``.extract-trace/`` and other hidden names are never read).

- `associations_table`: a row per association line, in file order —
  ``source`` (the header's id), ``file``, ``paragraph`` (null when the line
  cites none), ``subject``, ``label``, ``object``, ``weight``; with texts,
  ``paragraph_text``, the cited canonical paragraph (null when none or past
  the end).
- `concepts_table`: a row per concept (a subject or object spelling), most
  used first — ``concept``, ``folded`` (the occurrence check's fold: spellings
  sharing it are one name to a reader, two to import), ``uses``,
  ``as_subject``, ``as_object``, ``segments`` (files using it) and
  ``aliases`` (the concept-alias spellings any file maps to it).
- `Tally`: the same counts folded as files are read, for the report page: labels
  and concepts by uses and by segment, and the spellings a fold joins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.source_file import SourceFile, SourceFileError, parse_source_file
from taguru_ray.errors import TaguruRayError, UsageError
from taguru_ray.text.occurrence import fold
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.tools.records import read_source_files
from taguru_ray.tools.tables import Column, Table


class NoSourceFiles(TaguruRayError):
    """An OUT holding no source file: nothing to read."""


@dataclass(frozen=True)
class Read:
    """One source file as import reads it."""

    file: str  # its name in --out, or the path given
    source: SourceFile

    @property
    def paragraphs(self) -> list[str]:
        """The passage's canonical paragraphs (none without a passage)."""
        passage = self.source.passage
        return [p.text for p in split_paragraphs(passage.text)] if passage is not None else []


def parse(file: str, data: bytes) -> SourceFile:
    """A source file as import reads it, or `SourceFileError` naming its line."""
    return parse_source_file(data, name=file, strict=False)


def read_out(out: str) -> Iterator[Read]:
    """Every source file of the --out folder OUT (or the one file OUT names), parsed, in
    name order. `UsageError` for a missing OUT, an unreadable file or one import would
    refuse (named, with its line); `NoSourceFiles` when it holds none."""
    try:
        found = read_source_files(out)
    except FileNotFoundError:
        raise UsageError(f"{out}: no such folder or file") from None
    except OSError as error:
        raise UsageError(f"{out}: {error.strerror or error}") from None
    if found.unreadable:
        name, why = next(iter(found.unreadable.items()))
        raise UsageError(f"{name}: {why}")
    if not found.files:
        raise NoSourceFiles(f"{out}: no source file (<out>/<stem>.jsonl) to read")
    for name, data in found.files.items():
        try:
            yield Read(name, parse(name, data))
        except SourceFileError as error:
            raise UsageError(
                f"{error} — import would refuse it; `taguru-ray verify {out}` lists every such file"
            ) from None


ASSOCIATION_COLUMNS = [
    Column("source", "str"),
    Column("file", "str"),
    Column("paragraph", "int"),
    Column("subject", "str"),
    Column("label", "str"),
    Column("object", "str"),
    Column("weight", "float"),
]
TEXT_COLUMN = Column("paragraph_text", "str")


def association_rows(read: Read, *, texts: bool = False) -> Iterator[dict[str, Any]]:
    """One row per association line of one file, in file order."""
    paragraphs = read.paragraphs if texts else []
    for association in read.source.associations:
        row: dict[str, Any] = {
            "source": read.source.header.id,
            "file": read.file,
            "paragraph": association.paragraph,
            "subject": association.subject,
            "label": association.label,
            "object": association.object,
            "weight": association.weight,
        }
        if texts:
            cited = association.paragraph
            row[TEXT_COLUMN.name] = (
                paragraphs[cited] if cited is not None and cited < len(paragraphs) else None
            )
        yield row


def associations_table(reads: Iterable[Read], *, texts: bool = False) -> Table:
    columns = ASSOCIATION_COLUMNS + ([TEXT_COLUMN] if texts else [])
    rows = [row for read in reads for row in association_rows(read, texts=texts)]
    return Table("associations", "associations, a row per source-file line", columns, rows)


@dataclass
class Tally:
    """Counts over many source files, folded one file at a time."""

    files: int = 0
    associations: int = 0
    questions: int = 0
    concept_aliases: int = 0
    label_aliases: int = 0
    labels: Counter[str] = field(default_factory=Counter)  # label -> associations
    label_segments: Counter[str] = field(default_factory=Counter)  # label -> files using it
    as_subject: Counter[str] = field(default_factory=Counter)
    as_object: Counter[str] = field(default_factory=Counter)
    concept_segments: Counter[str] = field(default_factory=Counter)
    aliases_of: dict[str, set[str]] = field(default_factory=dict)  # canonical -> spellings

    def add(self, source: SourceFile) -> None:
        self.files += 1
        self.associations += len(source.associations)
        self.questions += len(source.questions)
        concepts: set[str] = set()
        labels: set[str] = set()
        for association in source.associations:
            self.labels[association.label] += 1
            self.as_subject[association.subject] += 1
            self.as_object[association.object] += 1
            concepts.update((association.subject, association.object))
            labels.add(association.label)
        self.concept_segments.update(concepts)
        self.label_segments.update(labels)
        for alias in source.aliases:
            if alias.kind == "concept":
                self.concept_aliases += 1
                self.aliases_of.setdefault(alias.canonical, set()).add(alias.alias)
            else:
                self.label_aliases += 1

    @property
    def concepts(self) -> Counter[str]:
        """Concept -> uses as a subject or an object."""
        return self.as_subject + self.as_object

    def spellings(self) -> list[Spelled]:
        """Names written two or more ways that the occurrence fold joins (case, spacing),
        concepts then labels, most used first."""
        found = []
        for kind, uses in (("concept", self.concepts), ("label", self.labels)):
            groups: dict[str, Counter[str]] = {}
            for name, count in uses.items():
                groups.setdefault(fold(name), Counter())[name] = count
            found += [
                Spelled(kind, folded, spelled.most_common())
                for folded, spelled in groups.items()
                if len(spelled) > 1
            ]
        found.sort(key=lambda s: (s.kind != "concept", -s.uses, s.folded))
        return found


@dataclass(frozen=True)
class Spelled:
    """One name under several spellings: its kind, its fold, each spelling with its uses."""

    kind: str  # concept | label
    folded: str
    spellings: list[tuple[str, int]]

    @property
    def uses(self) -> int:
        return sum(count for _, count in self.spellings)


CONCEPT_COLUMNS = [
    Column("concept", "str"),
    Column("folded", "str"),
    Column("uses", "int"),
    Column("as_subject", "int"),
    Column("as_object", "int"),
    Column("segments", "int"),
    Column("aliases", "strs"),
]


def concepts_table(tally: Tally) -> Table:
    """A row per concept, most used first (then by spelling, in code point order)."""
    uses = tally.concepts
    rows = [
        {
            "concept": name,
            "folded": fold(name),
            "uses": count,
            "as_subject": tally.as_subject[name],
            "as_object": tally.as_object[name],
            "segments": tally.concept_segments[name],
            "aliases": sorted(tally.aliases_of.get(name, ())),
        }
        for name, count in sorted(uses.items(), key=lambda item: (-item[1], item[0]))
    ]
    title = "concepts, a row per subject or object spelling"
    return Table("concepts", title, CONCEPT_COLUMNS, rows)
