"""The `annotate` step: the chunk context block that tells a chunk where it sits.

taguru ADR 0033 (``--chunk-context``): by default a chunk is read alone and cannot
tell which act ``同法`` names or what ``前条`` provided. The block prefixes the
chunk's user turn with the segment's own text around it. Its lines, in this
order, each added only while the block stays within its cap — a quarter of
``--chunk-bytes``, never under 512 bytes, the whole block (first line
included) counted:

1. A first line telling the model the block is context and that facts come
   from the numbered paragraphs only.
2. ``Position:`` the heading path in force at the chunk's first paragraph,
   outermost first, joined by `` › `` (``第二章 › 第三条``).
3. ``References:`` for every unit the chunk names and does not itself hold —
   an article by number (``第三条``, ``第三条の二``), ``前条``, ``§2``, a heading
   quoted verbatim — its heading and opening, in mention order, at most four.
4. ``Cast:`` (overview mode) the merged cast, ``name — gloss``.
5. ``Known:`` (ingested mode) for each name the target context's export
   knows, its relations.
6. ``Before:`` (overview mode) the synopses of the units wholly before the
   chunk.
7. ``Preceding text:`` the paragraphs just before the chunk: whole ones, the
   nearest first, as far as the cap allows, else the nearest one's tail.

Entries within a line are joined by `` | ``, a line ends at the first entry that
does not fit, and a line with no entry is left out; a block with nothing
after its first line is no block. Three rules keep it out of the source file:
it carries no ``[N]`` paragraph label (so no fact can cite it); it is the
segment's own text, so the occurrence check reads it — except the ``Cast:``,
``Known:`` and ``Before:`` lines, which are the overview model's or the
export's words (``haystack_text``); and it is recorded (``ContextBlock.record``).

In the user turn the block follows the preamble line directly and a blank
line separates it from the chunk (``Segment '<path>', part K of N:`` ``\n``
block ``\n\n`` chunk), so the block holds no blank line itself; a split
sub-piece keeps its chunk's block. ``occurrence_text`` reads a turn of that
shape back.

Its length (over 400 lines) is one block's: the position, references, cast,
known relations and synopses share one byte budget and one ordering.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import ChunkContextTrace
from taguru_ray.pipeline.plan import BLOCK_SEPARATOR, Chunk
from taguru_ray.pipeline.structure import TITLE_LEVEL, Unit, one_line, position_path
from taguru_ray.text.paragraphs import Paragraph

MIN_BLOCK_BYTES = 512
REFERENCE_CAP = 4
# A tail shorter than this (after its prefix) says nothing; the line is skipped.
MIN_PRECEDING_BYTES = 24
# An unnumbered heading shorter than this is too common a word to be a quotation.
MIN_QUOTED_HEADING_CHARS = 4

BLOCK_OPENING = "Chunk context ("
POSITION_PREFIX = "Position: "
REFERENCES_PREFIX = "References: "
CAST_PREFIX = "Cast: "
KNOWN_PREFIX = "Known: "
SYNOPSIS_PREFIX = "Before: "
PRECEDING_PREFIX = "Preceding text: "
PATH_SEPARATOR = " › "
ENTRY_SEPARATOR = " | "
GLOSS_SEPARATOR = " — "
ELLIPSIS = "…"
# Lines that are not the segment's words: the occurrence check leaves them out.
NOT_THE_SEGMENTS_WORDS = (CAST_PREFIX, KNOWN_PREFIX, SYNOPSIS_PREFIX)

_ARTICLE_MENTION = re.compile(
    "第[一二三四五六七八九十百千〇0-9０-９]+[章節条](?:の[一二三四五六七八九十]+)?"
)
_SECTION_NUMBER = re.compile(r"§\s*([0-9]+(?:\.[0-9]+)*)")
_PREVIOUS_ARTICLE = "前条"


def block_cap(chunk_bytes: int) -> int:
    """The block's byte cap: a quarter of ``--chunk-bytes``, never under 512."""
    return max(chunk_bytes // 4, MIN_BLOCK_BYTES)


@dataclass(frozen=True)
class ContextBlock:
    """One chunk's block and what it was built from (the ``chunk_context`` trace record)."""

    text: str
    sha256: str
    bytes: int
    position: list[int]  # units on the position path, outermost first
    references: list[int]  # units quoted as references, in mention order
    overlap_paragraphs: tuple[int, int] | None  # the preceding paragraphs carried
    cast: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    synopsis: list[int] = field(default_factory=list)

    def record(self, chunk_index: int) -> Record:
        """CONTRACT.md section 4.1 item 5: cast/known/synopsis and overlap only when present."""
        overlap = self.overlap_paragraphs
        return ChunkContextTrace(
            chunk_index=chunk_index,
            sha256=self.sha256,
            bytes=self.bytes,
            position=list(self.position),
            references=list(self.references),
            cast=tuple(self.cast),
            known=tuple(self.known),
            synopsis=tuple(self.synopsis),
            overlap_paragraphs=list(overlap) if overlap is not None else None,
        ).record()


def first_line(chunk_index: int, chunk_total: int) -> str:
    """The block's own first line: context only, facts from the numbered paragraphs."""
    part = f"part {chunk_index + 1} of {chunk_total}" if chunk_total > 1 else "the segment"
    return (
        f"{BLOCK_OPENING}from this segment, to read {part} by; "
        "extract facts only from the numbered paragraphs below):"
    )


class _Lines:
    """The block's lines as they are added, with the bytes they take against the cap."""

    def __init__(self, cap: int, opening: str) -> None:
        self.cap = cap
        self.lines = [opening]
        self.used = len(opening.encode("utf-8"))

    def room(self) -> int:
        """Bytes a further line may take, its newline paid."""
        return self.cap - self.used - 1

    def add(self, line: str) -> bool:
        size = len(line.encode("utf-8"))
        if size > self.room():
            return False
        self.lines.append(line)
        self.used += size + 1
        return True

    def add_entries(self, prefix: str, entries: Iterable[str]) -> int:
        """One line of ``entries`` joined by `` | ``, up to the first that does not fit."""
        kept: list[str] = []
        size = len(prefix.encode("utf-8"))
        for entry in entries:
            cost = len(entry.encode("utf-8")) + (len(ENTRY_SEPARATOR) if kept else 0)
            if size + cost > self.room():
                break
            kept.append(entry)
            size += cost
        if kept:
            self.add(prefix + ENTRY_SEPARATOR.join(kept))
        return len(kept)


def context_block(
    chunk: Chunk,
    units: Sequence[Unit],
    paragraphs: Sequence[Paragraph],
    chunk_bytes: int,
    *,
    cast: Iterable[tuple[str, str]] = (),
    synopses: Mapping[int, str] | Iterable[tuple[int, str]] = (),
    known: Iterable[tuple[str, str]] = (),
) -> ContextBlock | None:
    """The chunk's block under the cap of ``block_cap(chunk_bytes)``, or None when it has nothing.

    ``cast`` is the merged overview cast as ``(name, gloss)`` pairs; ``known``
    the ingested relations as ``(name, relations)`` pairs, the relations already
    rendered (``決定 → 予算案; 設置 → 作業部会``); ``synopses`` the overview's
    summaries by unit index — only those of units wholly before the chunk are
    carried. All three are empty under ``structure``.
    """
    lines = _Lines(block_cap(chunk_bytes), first_line(chunk.index, chunk.total))
    path = position_path(units, chunk.paragraph_first)
    position: list[int] = []
    if path and lines.add(POSITION_PREFIX + PATH_SEPARATOR.join(one_line(u.heading) for u in path)):
        position = [unit.unit for unit in path]
    cited = references(units, chunk, path)
    carried = lines.add_entries(REFERENCES_PREFIX, (_glossed(u.heading, u.opening) for u in cited))
    cast_entries = list(cast)
    cast_count = lines.add_entries(CAST_PREFIX, (_glossed(n, g) for n, g in cast_entries))
    known_entries = list(known)
    known_count = lines.add_entries(KNOWN_PREFIX, (_glossed(n, r) for n, r in known_entries))
    before = _wholly_before(units, chunk, set(position), dict(synopses))
    before_count = lines.add_entries(SYNOPSIS_PREFIX, (_glossed(u.heading, s) for u, s in before))
    overlap = _add_preceding(lines, paragraphs, chunk.paragraph_first)
    if len(lines.lines) == 1:
        return None
    text = "\n".join(lines.lines)
    encoded = text.encode("utf-8")
    return ContextBlock(
        text=text,
        sha256=hashlib.sha256(encoded).hexdigest(),
        bytes=len(encoded),
        position=position,
        references=[unit.unit for unit in cited[:carried]],
        overlap_paragraphs=overlap,
        cast=[name for name, _ in cast_entries[:cast_count]],
        known=[name for name, _ in known_entries[:known_count]],
        synopsis=[unit.unit for unit, _ in before[:before_count]],
    )


def _glossed(name: str, gloss: str) -> str:
    """``name — gloss`` on one line; the name alone when there is no gloss."""
    name, gloss = one_line(name), one_line(gloss)
    return f"{name}{GLOSS_SEPARATOR}{gloss}" if gloss else name


def _wholly_before(
    units: Sequence[Unit], chunk: Chunk, on_path: set[int], synopses: dict[int, str]
) -> list[tuple[Unit, str]]:
    """Units ending before the chunk and off its path (a parent is where the chunk is), in order."""
    return [
        (unit, synopses[unit.unit])
        for unit in units
        if unit.unit in synopses
        and unit.level != TITLE_LEVEL
        and unit.paragraph_last < chunk.paragraph_first
        and unit.unit not in on_path
    ]


def _add_preceding(
    lines: _Lines, paragraphs: Sequence[Paragraph], first: int
) -> tuple[int, int] | None:
    """The paragraphs just before paragraph ``first``: whole ones, else the nearest one's tail.

    Each paragraph is one-lined; they are joined by a space in reading order.
    Returns the range carried, or None when nothing was.
    """
    budget = lines.room() - len(PRECEDING_PREFIX.encode("utf-8"))
    if budget < MIN_PRECEDING_BYTES:
        return None
    before = paragraphs[: bisect_left(paragraphs, first, key=_paragraph_index)]
    pieces: list[str] = []
    used = 0
    for paragraph in reversed(before):
        text = one_line(paragraph.text)
        size = len(text.encode("utf-8")) + (1 if pieces else 0)
        if not pieces and size > budget:
            pieces.append(ELLIPSIS + tail_within(text, budget - len(ELLIPSIS.encode("utf-8"))))
            break
        if used + size > budget:
            break
        pieces.append(text)
        used += size
    if not pieces:
        return None
    lines.add(PRECEDING_PREFIX + " ".join(reversed(pieces)))
    return before[-len(pieces)].index, before[-1].index


def _paragraph_index(paragraph: Paragraph) -> int:
    return paragraph.index


def tail_within(text: str, limit: int) -> str:
    """The longest suffix of ``text`` within ``limit`` UTF-8 bytes, cut at a character boundary."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[len(encoded) - limit :].decode("utf-8", errors="ignore")


def references(units: Sequence[Unit], chunk: Chunk, path: Sequence[Unit]) -> list[Unit]:
    """The units ``chunk`` names and does not hold, in mention order, at most four.

    A name is a statute number (``第三条``, ``第二章``; never ``第三条`` inside
    ``第三条の二``), ``§N``, ``前条`` (the article before the one in force where
    it is written), or a heading of four characters or more quoted verbatim.
    Minutes' ◆/○ headings are positions, never references, and neither is the
    title. A number several units share (an amendment's ``第一条`` in the
    supplementary provisions) means the nearest one at or before the chunk,
    else the first after it. A unit the chunk holds or its path carries is
    not a reference.
    """
    keyed = _keyed_units(units, chunk.paragraph_first)
    mentions: dict[int, int] = {}  # unit -> offset of its first mention in the chunk text

    def note(offset: int, unit: Unit | None) -> None:
        if unit is not None and offset < mentions.get(unit.unit, offset + 1):
            mentions[unit.unit] = offset

    text = chunk.text
    for match in _ARTICLE_MENTION.finditer(text):
        note(match.start(), keyed.get(match.group()))
    for match in _SECTION_NUMBER.finditer(text):
        note(match.start(), keyed.get("§" + match.group(1)))
    for key, unit in keyed.items():
        if not key.startswith(("第", "§")):
            offset = _find_quoted(text, key)
            if offset >= 0:
                note(offset, unit)
    for offset, unit in _previous_article_mentions(units, chunk):
        note(offset, unit)
    by_unit = {unit.unit: unit for unit in units}
    held_or_on_path = {unit.unit for unit in path} | {
        unit.unit
        for unit in units
        if unit.paragraph_first <= chunk.paragraph_last
        and unit.paragraph_last >= chunk.paragraph_first
    }
    ordered = sorted((offset, number) for number, offset in mentions.items())
    cited = [by_unit[number] for _, number in ordered if number not in held_or_on_path]
    return cited[:REFERENCE_CAP]


def reference_key(unit: Unit) -> str | None:
    """What a chunk writes to name ``unit``; None for a unit that is never a reference."""
    heading = unit.heading
    if unit.level == TITLE_LEVEL or heading.startswith(("◆", "○")):
        return None
    if heading.startswith("第"):
        match = _ARTICLE_MENTION.match(heading)
        return match.group() if match else None
    section = _SECTION_NUMBER.match(heading)
    if section is not None:
        return "§" + section.group(1)
    return heading if len(heading) >= MIN_QUOTED_HEADING_CHARS else None


def _keyed_units(units: Sequence[Unit], chunk_first: int) -> dict[str, Unit]:
    """Each key's unit: the nearest at or before the chunk's first paragraph, else the first."""
    keyed: dict[str, Unit] = {}
    for unit in units:
        key = reference_key(unit)
        if key is None:
            continue
        if key not in keyed or unit.paragraph_first <= chunk_first:
            keyed[key] = unit
    return keyed


def _find_quoted(text: str, key: str) -> int:
    """The first offset where ``key`` stands as a whole, or -1.

    At an ASCII letter or digit edge the quotation must not run on into
    another one: ``Part 1`` is not quoted by ``Part 10``. Other scripts are
    written without spaces and take the substring as it is.
    """
    head, tail = key[0].isascii() and key[0].isalnum(), key[-1].isascii() and key[-1].isalnum()
    offset = text.find(key)
    while offset >= 0:
        end = offset + len(key)
        before_ok = not head or offset == 0 or not _ascii_alnum(text[offset - 1])
        after_ok = not tail or end == len(text) or not _ascii_alnum(text[end])
        if before_ok and after_ok:
            return offset
        offset = text.find(key, offset + 1)
    return -1


def _ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _previous_article_mentions(units: Sequence[Unit], chunk: Chunk) -> list[tuple[int, Unit]]:
    """``前条`` at each offset: the article before the one in force at that block's paragraph."""
    articles = [unit for unit in units if _is_article(unit)]
    found: list[tuple[int, Unit]] = []
    offset = 0
    for block in chunk.blocks:
        at = block.text.find(_PREVIOUS_ARTICLE)
        if at >= 0:
            in_force = [u for u in position_path(units, block.paragraph) if _is_article(u)]
            if in_force:
                number = articles.index(in_force[-1])
                if number > 0:
                    found.append((offset + at, articles[number - 1]))
        offset += len(block.text) + len(BLOCK_SEPARATOR)
    return found


def _is_article(unit: Unit) -> bool:
    """A statute article (``第N条``, branch and caption or not): what ``前条`` counts back over."""
    return unit.heading.startswith("第") and "条" in unit.heading.split("（", 1)[0]


def haystack_text(block_text: str | None, chunk_text: str) -> str:
    """The text the occurrence check judges a piece's names against: block and chunk.

    The block counts — it is the segment's own text — except its first line
    (taguru's words) and its ``Cast:``, ``Known:`` and ``Before:`` lines (the
    overview model's or the export's words: a name found only there is still
    unattested). Without a block it is the chunk alone.
    """
    if not block_text:
        return chunk_text
    lines = block_text.split("\n")
    if lines[0].startswith(BLOCK_OPENING):
        lines = lines[1:]
    kept = [line for line in lines if not line.startswith(NOT_THE_SEGMENTS_WORDS)]
    return "\n".join([*kept, "", chunk_text]) if kept else chunk_text


def occurrence_text(user_turn: str) -> str:
    """``haystack_text`` from a whole user turn (a checkpointed one, say), never its preamble.

    The turn is ``<preamble line>\\n[<block>\\n]\\n<chunk>``: the preamble names the
    source path and is dropped; a block, when there is one, runs from the
    line opening with ``Chunk context (`` to the first blank line.
    """
    rest = user_turn.split("\n", 1)[1] if "\n" in user_turn else user_turn
    if not rest.startswith(BLOCK_OPENING):
        return rest.removeprefix("\n")
    block, _, chunk = rest.partition("\n\n")
    return haystack_text(block, chunk)
