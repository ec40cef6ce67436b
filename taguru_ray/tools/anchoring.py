"""``taguru-ray anchoring``: written source files judged against their own passage text.

Per source file and overall, over its associations:

- **strict** anchoring: the subject and the object both occur in the cited
  paragraph (no citation, or one past the passage's last paragraph: the whole
  passage). "Occur" is substring containment after the occurrence check's own
  folding (`taguru_ray.text.occurrence.fold`: White_Space dropped,
  lowercased) — one normal form for "does the text say this name" across the
  tool chain. The hallucination floor: a strict miss names something the text
  never writes under that folding.
- **with aliases**: any spelling of the name's alias group counts — the file's
  own concept aliases, joined transitively. Aliases are model output too, so
  the gap between the two rates is the alias-dependent share, shown on purpose.
- **locator validity**: of the associations citing a paragraph, those whose
  paragraph exists and holds the subject or the object (alias groups
  included).

Every association that is not strictly anchored, or whose locator is
invalid, is named: its source-file line, triple, cited paragraph and reason
(``unanchored``, ``alias-only``, ``invalid locator``; an association can carry
two). Read the strict rate within one segment type: a table-shaped segment
whose rows never repeat the title's name scores low however faithful it is.

Source files are all it needs — no trace — so any past output qualifies. A
file is read with the import parser, except that a paragraph past the
passage's end is tolerated, as import tolerates it (dropped at store time):
on an association it is an invalid locator, a question citing it is ignored.
A file without a passage cannot be judged (skipped); a file the parser
refuses is named and counted under failed, never stopping the others.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.items import Alias, Association
from taguru_ray.contract.source_file import SourceFileError, parse_source_file
from taguru_ray.text.occurrence import Haystack, fold
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.tools.tables import Column, Table, render

_BOM = b"\xef\xbb\xbf"
UNANCHORED = "unanchored"
ALIAS_ONLY = "alias-only"
INVALID_LOCATOR = "invalid locator"


@dataclass
class Counts:
    associations: int = 0
    anchored_strict: int = 0
    anchored_with_aliases: int = 0
    cited: int = 0
    locator_valid: int = 0

    def add(self, other: Counts) -> None:
        for key, value in vars(other).items():
            setattr(self, key, getattr(self, key) + value)

    def rates(self) -> dict[str, float | None]:
        return {
            "rate_strict": _ratio(self.anchored_strict, self.associations),
            "rate_with_aliases": _ratio(self.anchored_with_aliases, self.associations),
            "locator_validity": _ratio(self.locator_valid, self.cited),
        }

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), **self.rates()}


@dataclass(frozen=True)
class Judged:
    """One association's three judgments. An uncited one has no locator to be wrong."""

    line: int | None  # its line in the source file
    association: Association
    paragraph: int | None  # as cited, in range or not
    strict: bool
    with_aliases: bool
    locator_valid: bool

    @property
    def reason(self) -> str:
        """Why it is listed: ``unanchored``/``alias-only``, ``invalid locator``; "" if not."""
        parts = []
        if not self.with_aliases:
            parts.append(UNANCHORED)
        elif not self.strict:
            parts.append(ALIAS_ONLY)
        if not self.locator_valid:
            parts.append(INVALID_LOCATOR)
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "subject": self.association.subject,
            "label": self.association.label,
            "object": self.association.object,
            "paragraph": self.paragraph,
            "reason": self.reason,
            "strict": self.strict,
            "with_aliases": self.with_aliases,
            "locator_valid": self.locator_valid,
        }


@dataclass
class SegmentAnchoring:
    source: str  # the header's id
    file: str  # the source file's path, as found
    context: str
    counts: Counts
    unanchored: list[Judged]

    def to_json(self) -> dict[str, Any]:
        rows = [judged.to_json() for judged in self.unanchored]
        return {
            "file": self.file,
            "context": self.context,
            **self.counts.to_json(),
            "unanchored": rows,
        }


@dataclass
class AnchoringReport:
    segments: dict[str, SegmentAnchoring] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # files without a passage
    failed: dict[str, str] = field(default_factory=dict)  # file -> why it was refused

    def totals(self) -> Counts:
        total = Counts()
        for segment in self.segments.values():
            total.add(segment.counts)
        return total

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "anchoring",
            "segments": {key: segment.to_json() for key, segment in self.segments.items()},
            "totals": self.totals().to_json(),
            "skipped_no_passage": self.skipped,
            "failed": [{"file": name, "error": error} for name, error in self.failed.items()],
        }


def judge_files(files: dict[str, bytes]) -> AnchoringReport:
    """Judge every source file (path -> bytes, in the order given)."""
    report = AnchoringReport()
    for name, data in files.items():
        try:
            judged = judge_file(name, data)
        except SourceFileError as error:
            report.failed[name] = str(error)
            continue
        if judged is None:
            report.skipped.append(name)
            continue
        key = judged.source
        if key in report.segments:  # one source in two OUTs: keep both, named by folder
            key = f"{judged.source} ({posixpath.basename(posixpath.dirname(name)) or name})"
        report.segments[key] = judged
    return report


def judge_file(name: str, data: bytes) -> SegmentAnchoring | None:
    """One source file's judgment; None without a passage; `SourceFileError` if refused."""
    tolerated, lines, far = tolerate_far_citations(data)
    source = parse_source_file(tolerated, name=name)
    if source.passage is None:
        return None
    numbers: list[int | None] = list(lines)
    if len(numbers) != len(source.associations):  # cannot happen: both count "subject" lines
        numbers = [None] * len(source.associations)
    counts, listed = judge(source.passage.text, source.associations, source.aliases, numbers, far)
    header = source.header
    return SegmentAnchoring(header.id, name, header.context_id, counts, listed)


def judge(
    passage: str,
    associations: list[Association],
    aliases: list[Alias],
    lines: list[int | None],
    far: dict[int, int],
) -> tuple[Counts, list[Judged]]:
    """The counts, and every association not strictly anchored or with an invalid locator.

    `lines` holds each association's source-file line; `far` maps a line to
    the out-of-range paragraph it cited (the parsed association carries none).
    """
    groups = AliasGroups(
        (alias.alias, alias.canonical) for alias in aliases if alias.kind == "concept"
    )
    paragraphs = [Haystack(paragraph.text) for paragraph in split_paragraphs(passage)]
    whole = Haystack(passage)
    counts, listed = Counts(), []
    for line, association in zip(lines, associations, strict=True):
        cited = association.paragraph
        haystack = whole if cited is None else paragraphs[cited]
        subject, object_ = fold(association.subject), fold(association.object)
        strict = haystack.contains(subject) and haystack.contains(object_)
        subject_hit = any(haystack.contains(name) for name in groups.group(subject))
        object_hit = any(haystack.contains(name) for name in groups.group(object_))
        claimed = far.get(line) if line is not None else None
        locator_valid = (cited is None and claimed is None) or (
            cited is not None and (subject_hit or object_hit)
        )
        judged = Judged(
            line,
            association,
            cited if cited is not None else claimed,
            strict,
            subject_hit and object_hit,
            locator_valid,
        )
        counts.associations += 1
        counts.anchored_strict += judged.strict
        counts.anchored_with_aliases += judged.with_aliases
        counts.cited += judged.paragraph is not None
        counts.locator_valid += judged.paragraph is not None and judged.locator_valid
        if judged.reason:
            listed.append(judged)
    return counts, listed


class AliasGroups:
    """Folded spellings joined by alias pairs (union-find): a name's group is all it reaches."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._parent: dict[str, str] = {}
        for alias, canonical in pairs:
            self._parent[self._root(fold(alias))] = self._root(fold(canonical))
        self._members: dict[str, set[str]] = {}
        for name in list(self._parent):
            self._members.setdefault(self._root(name), set()).add(name)

    def group(self, folded: str) -> list[str]:
        """`folded` first, then the other spellings of its group (alone: just itself)."""
        if folded not in self._parent:
            return [folded]
        return [folded, *sorted(self._members[self._root(folded)] - {folded})]

    def _root(self, name: str) -> str:
        self._parent.setdefault(name, name)
        while self._parent[name] != name:
            self._parent[name] = self._parent[self._parent[name]]  # path halving
            name = self._parent[name]
        return name


def tolerate_far_citations(data: bytes) -> tuple[bytes, list[int], dict[int, int]]:
    """The file with citations past the passage's end lifted, as import tolerates them.

    Returns the bytes to parse (same line numbers), each association's line
    number in file order, and line -> the out-of-range paragraph it cited. A
    question citing past the end becomes a blank line (import drops it).
    """
    body = data[len(_BOM) :] if data.startswith(_BOM) else data
    pieces = body.split(b"\n")
    records = [_object(piece) for piece in pieces]
    passage = next((r["passage"] for r in records if isinstance(r.get("passage"), str)), None)
    count = len(split_paragraphs(passage)) if passage is not None else None
    first = next((i for i, piece in enumerate(pieces) if piece.strip()), len(pieces))
    lines: list[int] = []
    far: dict[int, int] = {}
    for index in range(first + 1, len(pieces)):  # the first non-blank line is the header
        record = records[index]
        cited = record.get("paragraph")
        beyond = count is not None and _index(cited) and cited >= count
        if "subject" in record:
            lines.append(index + 1)
            if beyond:
                far[index + 1] = cited
                del record["paragraph"]
                pieces[index] = json.dumps(record, ensure_ascii=False).encode("utf-8")
        elif "question" in record and beyond:
            pieces[index] = b""
    return b"\n".join(pieces), lines, far


def _object(raw: bytes) -> dict[str, Any]:
    """A line as a JSON object; {} for a blank or unreadable one (the parser judges it)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def table(report: AnchoringReport) -> Table:
    """Per source file and in total: associations and the three rates."""
    columns = [
        Column("source", "str"),
        Column("assocs", "int"),
        Column("strict", "float"),
        Column("with_aliases", "float"),
        Column("locator_validity", "float"),
    ]
    rows = [_row(key, segment.counts) for key, segment in report.segments.items()]
    rows.append(_row("TOTAL", report.totals()))
    return Table(
        "anchoring", "anchoring — strict and alias-group rates, locator validity", columns, rows
    )


def render_text(report: AnchoringReport, listed: int) -> str:
    """The table, then per source file its first `listed` associations not strictly anchored."""
    out = [render(table(report))]
    notes = []
    if report.skipped:
        notes.append(f"{len(report.skipped)} without a passage skipped")
    if report.failed:
        notes.append(f"{len(report.failed)} failed")
    if notes:
        out.append(f"source files: {len(report.segments)} judged, {', '.join(notes)}\n")
    for key, segment in report.segments.items() if listed > 0 else ():
        if not segment.unanchored:
            continue
        lines = [
            f"{key}: {len(segment.unanchored)} association(s) not strictly anchored or mislocated"
        ]
        for judged in segment.unanchored[:listed]:
            lines.append(f"  {describe(judged)}")
        if len(segment.unanchored) > listed:
            lines.append(f"  … and {len(segment.unanchored) - listed} more (all in --json)")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def describe(judged: Judged) -> str:
    """``line 9: Alpha Service | uses | MongoDB (paragraph 1): unanchored``."""
    a = judged.association
    where = "no paragraph" if judged.paragraph is None else f"paragraph {judged.paragraph}"
    line = "?" if judged.line is None else judged.line
    return f"line {line}: {a.subject} | {a.label} | {a.object} ({where}): {judged.reason}"


def _row(name: str, counts: Counts) -> dict[str, Any]:
    rates = counts.rates()
    return {
        "source": name,
        "assocs": counts.associations,
        "strict": rates["rate_strict"],
        "with_aliases": rates["rate_with_aliases"],
        "locator_validity": rates["locator_validity"],
    }
