"""The report's segments: each segment's paragraphs with what was extracted from each and
what was removed beside it, and the run's label and concept counts. Nothing here draws.

A segment's items come from its source file, read with the import parser
(`tools/knowledge.py`); what did not reach the file comes from its trace's
``loss`` records (CONTRACT.md 4.1: the item as the model wrote it, the rule that
removed, dropped or folded it, the paragraph it cited). Each item sits beside the
paragraph it cites; an alias, which cites none, beside the first paragraph of its
piece's range (the trace's ``item`` and ``piece`` records) that holds its spelling;
what cites no paragraph, in the segment's own list. A name is marked in its
paragraph where the occurrence check finds it (`text/spans.py`), so a mark never
disagrees with the check that let the name through, and a name with no mark is
one the paragraph does not write.

The counts cover every segment. The segments shown are all of them up to
`SHOWN`; past it a deterministic sample (`sample`): the segments that wrote no
association first, then those whose source name hashes lowest — the same
segments every time the same folder is reported, whatever the machine.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.items import Alias, Association, Question
from taguru_ray.contract.records.trace import AliasItem, LossTrace, PieceTrace
from taguru_ray.contract.source_file import SourceFile, SourceFileError
from taguru_ray.documents.converted import describe as describe_locator
from taguru_ray.text.occurrence import fold
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.text.spans import Span, spans
from taguru_ray.tools.knowledge import Tally, parse
from taguru_ray.tools.locators import paragraph_locators
from taguru_ray.tools.records import Lines, SegmentFiles, attempts_log_path

SHOWN = 300  # segments shown in full on one page; the rest are counted and sampled
PARAGRAPHS = 400  # paragraphs shown per segment
TEXT_CHARS = 4000  # characters shown of one paragraph
RAW_CHARS = 300  # characters shown of a lost item that is no item shape (a bare string…)
REASONS = ("removed", "dropped", "duplicate")


@dataclass(frozen=True)
class Lost:
    """An item that did not reach the source file, as the page says it."""

    item: str  # association | alias | question
    reason: str  # removed | dropped | duplicate
    rule: str
    path: str | None
    shown: str  # the item as the model wrote it, in one line

    @classmethod
    def of(cls, loss: LossTrace) -> Lost:
        path = loss.path if isinstance(loss.path, str) else None
        return cls(str(loss.item), str(loss.reason), str(loss.rule), path, describe(loss.raw))


@dataclass
class Paragraph:
    """One canonical paragraph (or, with `index` None, what cites none) and its items.

    `locator` is where the paragraph sits in its document (a PDF page, a slide, a
    heading path) when the segment's records say so; the page shows it beside the
    paragraph's number."""

    index: int | None
    text: str = ""
    more: int = 0  # characters of the paragraph not shown
    marks: list[Span] = field(default_factory=list)
    associations: list[Association] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    lost: list[Lost] = field(default_factory=list)
    locator: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.associations or self.aliases or self.questions or self.lost)

    def holds(self, name: str) -> bool:
        """Whether the occurrence fold finds `name` in the shown text."""
        return fold(name) in fold(self.text)


@dataclass
class SegmentView:
    name: str  # as the metrics scope names it (the source, or "<source> (<out>)")
    status: str  # written | failed | untraced
    inspect: str | None  # the `taguru-ray inspect` command of its attempts log
    paragraphs: list[Paragraph] = field(default_factory=list)
    loose: Paragraph = field(default_factory=lambda: Paragraph(None))
    hidden: int = 0  # paragraphs past PARAGRAPHS
    passage: bool = True
    error: str | None = None  # the import parser's refusal of its source file
    associations: int = 0
    aliases: int = 0
    questions: int = 0
    lost: Counter[str] = field(default_factory=Counter)  # reason -> items
    labels: set[str] = field(default_factory=set)

    @property
    def zero(self) -> bool:
        """Written, and no association in it."""
        return self.status == "written" and self.error is None and not self.associations


@dataclass
class Knowledge:
    """One run's segments as the page shows them, and the counts over every segment."""

    tally: Tally = field(default_factory=Tally)
    lost: Counter[tuple[str, str]] = field(default_factory=Counter)  # (item, reason) -> n
    segments: int = 0
    zero: int = 0  # written segments holding no association
    failed: int = 0
    refused: list[str] = field(default_factory=list)  # source files the parser refused
    shown: list[SegmentView] = field(default_factory=list)
    sampled: str | None = None  # how the shown ones were chosen, when not all are


@dataclass(frozen=True)
class _Seen:
    position: int
    name: str
    zero: bool


def read_knowledge(out: str, scopes: Sequence[tuple[str, SegmentFiles]]) -> Knowledge:
    """The knowledge of one --out from its segments' files (scope name, files), in order."""
    knowledge = Knowledge(segments=len(scopes))
    seen = []
    for position, (name, files) in enumerate(scopes):
        source = _source(files, knowledge.refused)
        if source is not None:
            knowledge.tally.add(source)
        if files.trace is not None:
            for loss in _losses(files.trace):
                knowledge.lost[(str(loss.item), str(loss.reason))] += 1
        zero = files.status == "written" and source is not None and not source.associations
        knowledge.zero += zero
        knowledge.failed += files.status == "failed"
        seen.append(_Seen(position, name, zero))
    chosen, knowledge.sampled = sample(seen, SHOWN)
    knowledge.shown = [segment_view(out, *scopes[i]) for i in chosen]
    return knowledge


def sample(seen: Sequence[_Seen], limit: int) -> tuple[list[int], str | None]:
    """The positions to show, in order, and how they were chosen when not all are."""
    if len(seen) <= limit:
        return [s.position for s in seen], None
    empty = [s for s in seen if s.zero]
    zero = empty[: limit // 2]
    taken = {s.position for s in zero}
    rest = sorted((s for s in seen if s.position not in taken), key=lambda s: _digest(s.name))
    chosen = taken | {s.position for s in rest[: limit - len(zero)]}
    how = (
        f"{len(chosen)} of {len(seen)} segments shown: the first {len(zero)} (in name order) "
        f"of the {len(empty)} that wrote no association, then the {len(chosen) - len(zero)} "
        "whose source name has the lowest SHA-256 — the same segments each time this folder "
        "is reported"
    )
    return sorted(chosen), how


def _digest(name: str) -> bytes:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()


def _source(files: SegmentFiles, refused: list[str] | None = None) -> SourceFile | None:
    if files.source_file is None:
        return None
    try:
        return parse(f"{files.stem}.jsonl", files.source_file)
    except SourceFileError as error:
        if refused is not None:
            refused.append(str(error))
        return None


def _losses(trace: Lines) -> list[LossTrace]:
    return [loss for record in trace.records if (loss := LossTrace.view(record)) is not None]


def segment_view(out: str, name: str, files: SegmentFiles) -> SegmentView:
    """One segment's paragraphs, each with its items, losses and marked names."""
    log = attempts_log_path(out, files.stem) if files.attempts is not None else None
    command = f"taguru-ray inspect {shlex.quote(log)}" if log else None
    view = SegmentView(name, files.status, command)
    if files.source_file is not None:
        try:
            source: SourceFile | None = parse(f"{files.stem}.jsonl", files.source_file)
        except SourceFileError as error:
            view.error, source = str(error), None
    else:
        source = None
    trace = files.trace or Lines()
    losses = _losses(trace)
    view.lost = Counter(str(loss.reason) for loss in losses)
    texts = _paragraph_texts(source)
    view.passage = source is None or source.passage is not None
    view.paragraphs = [Paragraph(i, *_cut(text)) for i, text in enumerate(texts[:PARAGRAPHS])]
    view.hidden = max(len(texts) - PARAGRAPHS, 0)
    # A document's paragraphs: where each sits in it, from the trace (ADR 0078).
    for index, locator in paragraph_locators(trace.records).items():
        if 0 <= index < len(view.paragraphs):
            view.paragraphs[index].locator = describe_locator(locator)

    def at(index: int | None) -> Paragraph | None:
        """The shown paragraph `index`; None when hidden past the cap; loose when none."""
        if index is None or not 0 <= index < len(texts):
            return view.loose
        return view.paragraphs[index] if index < PARAGRAPHS else None

    if source is not None:
        view.associations, view.aliases = len(source.associations), len(source.aliases)
        view.questions = len(source.questions)
        view.labels = {a.label for a in source.associations}
        for association in source.associations:
            if (where := at(association.paragraph)) is not None:
                where.associations.append(association)
        for question in source.questions:
            if (where := at(question.paragraph)) is not None:
                where.questions.append(question)
        ranges = _alias_ranges(trace)
        for alias in source.aliases:
            first, last = ranges.get((alias.kind, alias.alias, alias.canonical), (0, len(texts)))
            if (where := at(_first_holding(texts, first, last, alias))) is not None:
                where.aliases.append(alias)
    for loss in losses:
        cited = loss.paragraph if isinstance(loss.paragraph, int) else None
        if (where := at(cited)) is not None:
            where.lost.append(Lost.of(loss))
    quotes = _quotes(trace)
    for paragraph in view.paragraphs:
        names = [n for a in paragraph.associations for n in (a.subject, a.object)]
        # Labels are never occurrence-checked (CONTRACT.md 8): only concept names are marked.
        names += [
            n for a in paragraph.aliases if a.kind == "concept" for n in (a.alias, a.canonical)
        ]
        # A session's fact is anchored by the verbatim quote code located (SESSIONS.md):
        # the quote is marked whole, the names inside it with it.
        names += [q for a in paragraph.associations for q in quotes.get(a.triple, ())]
        paragraph.marks = spans(paragraph.text, names)
    return view


def _quotes(trace: Lines) -> dict[tuple[str, str, str], list[str]]:
    """A session trace's ``fact`` records: (subject, predicate, value) -> their quotes."""
    quotes: dict[tuple[str, str, str], list[str]] = {}
    for record in trace.of_type("fact"):
        fields = [record.get(key) for key in ("subject", "predicate", "value", "quote")]
        texts = [field for field in fields if isinstance(field, str)]
        if len(texts) == 4 and texts[3]:
            quotes.setdefault((texts[0], texts[1], texts[2]), []).append(texts[3])
    return quotes


def _paragraph_texts(source: SourceFile | None) -> list[str]:
    if source is None or source.passage is None:
        return []
    return [p.text for p in split_paragraphs(source.passage.text)]


def _cut(text: str) -> tuple[str, int]:
    if len(text) <= TEXT_CHARS:
        return text, 0
    return text[:TEXT_CHARS], len(text) - TEXT_CHARS


def _alias_ranges(trace: Lines) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(kind, alias, canonical) -> the paragraph range of the piece that gave it."""
    pieces: dict[str, tuple[int, int]] = {}
    for record in trace.of_type(PieceTrace.TYPE):
        piece = PieceTrace.view(record)
        if (
            piece is not None
            and isinstance(piece.paragraph_first, int)
            and isinstance(piece.paragraph_last, int)
        ):
            pieces[str(piece.piece_id)] = (piece.paragraph_first, piece.paragraph_last + 1)
    ranges = {}
    for record in trace.of_type(AliasItem.TYPE):
        if record.get("item") not in ("concept", "label"):
            continue
        item = AliasItem.view(record)
        if item is not None and str(item.piece_id) in pieces:
            key = (str(item.item), str(item.alias), str(item.canonical))
            ranges[key] = pieces[str(item.piece_id)]
    return ranges


def _first_holding(texts: list[str], first: int, last: int, alias: Alias) -> int | None:
    """The first paragraph of [first, last) writing the alias's spelling, else its
    canonical; None when neither is written there."""
    for name in (alias.alias, alias.canonical):
        folded = fold(name)
        for index in range(max(first, 0), min(last, len(texts))):
            if folded and folded in fold(texts[index]):
                return index
    return None


def describe(raw: Any) -> str:
    """A lost item as the model wrote it, in one line: ``subject | label | object``,
    ``alias → canonical (kind)``, ``[paragraph] question``, else its JSON, cut."""
    if isinstance(raw, dict):
        if {"subject", "label", "object"} & raw.keys():
            return " | ".join(_text(raw.get(key)) for key in ("subject", "label", "object"))
        if {"alias", "canonical"} & raw.keys():
            kind = f" ({_text(raw.get('kind'))})" if "kind" in raw else ""
            return f"{_text(raw.get('alias'))} → {_text(raw.get('canonical'))}{kind}"
        if "question" in raw:
            return f"[{_text(raw.get('paragraph'))}] {_text(raw.get('question'))}"
    return _text(raw)


def _text(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= RAW_CHARS else shown[:RAW_CHARS] + "…"
