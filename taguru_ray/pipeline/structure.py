"""The `structure` step: a segment's headings, read from its own lines.

taguru ADR 0033 (``--chunk-context structure``): a chunk is read better knowing the
chapter it sits in and which article ``前条`` means, so the segment's own
structure is detected mechanically — no model, no dictionary, the same units
for the same text. Every line of every canonical paragraph is classified; a
heading line opens a *unit* with a level (1 = outermost in the segment's own
convention) and the paragraph range up to the next heading. What a heading is:

- Markdown ATX: one to six ``#`` and a space; the level is the ``#`` count.
- Statutes: ``第N章`` (level 1), ``第N節`` (2), ``第N条`` (3), N in kanji,
  ASCII or full-width digits. A ``第三条の二`` branch rides on the article; a
  parenthesized caption line just before an article (``（目的）``) names it:
  ``第一条（目的）``. A chapter or section keeps its title (``第一章　総則``),
  an article does not (its line goes on with the article's text). The number
  must be followed by nothing or White_Space: ``第二条の規定により`` is prose
  opening with a reference. ``附則`` (supplementary provisions) is chapter
  level, so an amendment's own ``第一条`` sits under it.
- Minutes: ``◆`` opens a section (level 1), ``○`` a speaker's turn (level 2,
  headed by the speaker's name, up to the first White_Space).
- Numbering: a dotted number of two or more parts (``1.2 Setup``) or a ``§``
  number (``§ 3``, ``§3.1 Scope``), on a line of at most 80 bytes not ending in
  a full stop; the level is the number's depth. A bare ``1.`` item is never a
  heading — it cannot be told from a list item.
- The title: the segment's first line, when it is not a heading and reads as a
  title (4–120 bytes, a letter, no markup opening), is a level-0 unit at the
  head of every position path — an act's name, so ``同法`` can be read, and
  the name an answer spells out is in the block the occurrence check reads.

Lines inside an HTML comment (a bilingual Markdown source keeps its original
headings there) or a fenced code block (``# comment`` in a shell snippet) are
never headings: they are not what a reader reads as the segment's outline.

A heading at its paragraph's first line — or preceded there only by its own
caption — ends the previous unit at the paragraph before; a heading further
down a paragraph shares that paragraph with the previous unit. The trace
carries one ``structure`` record per unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import StructureTrace
from taguru_ray.text.char_classes import is_alphabetic
from taguru_ray.text.paragraphs import WHITE_SPACE, Paragraph

MAX_HEADING_LINE_BYTES = 200
MAX_NUMBERED_LINE_BYTES = 80
MAX_CAPTION_CHARS = 40
MAX_SPEAKER_CHARS = 30
TITLE_LEVEL = 0
# How much of a unit's text, past its heading line, the unit keeps as its
# opening: what a chunk's References line quotes.
OPENING_BYTES = 240

_TRIM = "".join(sorted(WHITE_SPACE))
_WS = re.escape(_TRIM)
_KANJI_DIGITS = "一二三四五六七八九十百千〇"
_STATUTE = re.compile(
    f"第([{_KANJI_DIGITS}0-9０-９]+)([章節条])(?:(の[一二三四五六七八九十]+))?(.*)", re.DOTALL
)
_STATUTE_LEVEL = {"章": 1, "節": 2, "条": 3}
_NUMBERED = re.compile(r"(§[" + _WS + r"]*)?([0-9]+(?:\.[0-9]+)*)\.?(.*)", re.DOTALL)
_CAPTION = re.compile(r"（([^）]+)）")
_TITLE_REFUSED_OPENINGS = tuple("<[|-*`{（(#>")
_SPACES = re.compile(f"[{_WS}]+")
_SUPPLEMENTARY = re.compile(f"附　?則(?:$|[{_WS}（(])")
_SPEAKER = re.compile(f"([^{_WS}]*)([{_WS}]?)(.*)", re.DOTALL)
# An ATX heading's optional closing run: after White_Space only (``## C#`` keeps its #).
_CLOSING_HASHES = re.compile(f"(?:^|[{_WS}])#+$")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Unit:
    """One structural unit: a heading and the paragraphs it governs, both ends inclusive.

    ``opening`` is the start of the unit's own text past its heading line,
    one-lined and capped at ``OPENING_BYTES`` — what a References line quotes.
    It is not part of the trace record.
    """

    unit: int
    level: int
    heading: str
    paragraph_first: int
    paragraph_last: int
    opening: str = field(default="", compare=False)

    def record(self) -> Record:
        """The trace's ``structure`` record (CONTRACT.md section 4.1, item 4)."""
        return StructureTrace(
            unit=self.unit,
            level=self.level,
            heading=self.heading,
            paragraph_first=self.paragraph_first,
            paragraph_last=self.paragraph_last,
        ).record()


def one_line(text: str) -> str:
    """Every run of White_Space folded to one space, both ends trimmed."""
    return _SPACES.sub(" ", text).strip(" ")


class Heading(NamedTuple):
    """What a heading line says: its level, its heading, and any body text after it.

    ``rest`` is the unit's own text on the heading line itself: an article's
    provision (``第一条　この法律は…``) or a speaker's words (``○議長　ただいまから…``);
    empty for a heading that is the whole line.
    """

    level: int
    text: str
    rest: str = ""


def heading_of(line: str) -> Heading | None:
    """The heading ``line`` opens a unit with, or None (captions and the title aside)."""
    trimmed = line.strip(_TRIM)
    if not trimmed or len(trimmed.encode("utf-8")) > MAX_HEADING_LINE_BYTES:
        return None
    for detect in (_markdown, _statute, _minutes, _numbered):
        found = detect(trimmed)
        if found is not None:
            return found
    return None


def _markdown(trimmed: str) -> Heading | None:
    hashes = len(trimmed) - len(trimmed.lstrip("#"))
    if not 1 <= hashes <= 6 or not trimmed[hashes:].startswith(" "):
        return None
    text = _CLOSING_HASHES.sub("", trimmed[hashes:].strip(_TRIM)).strip(_TRIM)
    return Heading(hashes, text) if text.strip("#") else None


def _statute(trimmed: str) -> Heading | None:
    if _SUPPLEMENTARY.match(trimmed):
        return Heading(1, one_line(trimmed))
    match = _STATUTE.fullmatch(trimmed)
    if match is None:
        return None
    number, kind, branch, tail = match.groups()
    if tail and tail[0] not in WHITE_SPACE:
        return None  # 第二条の規定により…: prose that opens with a reference
    heading = f"第{number}{kind}{branch or ''}"
    title = tail.strip(_TRIM)
    if kind == "条":
        return Heading(_STATUTE_LEVEL[kind], heading, title)
    return Heading(_STATUTE_LEVEL[kind], f"{heading}　{title}" if title else heading)


def _minutes(trimmed: str) -> Heading | None:
    if trimmed.startswith("◆"):
        text = trimmed[1:].strip(_TRIM)
        return Heading(1, f"◆{text}") if text else None
    if trimmed.startswith("○"):
        speaker, _, words = _SPEAKER.match(trimmed, 1).groups()
        speaker = speaker[:MAX_SPEAKER_CHARS]
        return Heading(2, f"○{speaker}", words.strip(_TRIM)) if speaker else None
    return None


def _numbered(trimmed: str) -> Heading | None:
    """``1.2 Setup``, ``§ 3``, ``§3.1 Scope``: never a bare ``1.`` item, never a sentence."""
    if len(trimmed.encode("utf-8")) > MAX_NUMBERED_LINE_BYTES:
        return None
    match = _NUMBERED.fullmatch(trimmed)
    if match is None:
        return None
    section, number, rest = match.groups()
    depth = number.count(".") + 1
    if rest and rest[0] not in WHITE_SPACE:
        return None  # 10.5%, 3.14159, v1.2-beta: a value, not a heading
    title = rest.strip(_TRIM)
    if title.endswith(("。", ".")):
        return None
    if section is None and (depth < 2 or not title):
        return None
    return Heading(min(depth, 6), trimmed)


def _caption(trimmed: str) -> str | None:
    """``（目的）`` alone on a line: the caption of the article that follows."""
    match = _CAPTION.fullmatch(trimmed)
    if match is None or len(match.group(1)) > MAX_CAPTION_CHARS:
        return None
    return match.group(1)


def _looks_like_title(trimmed: str) -> bool:
    return (
        4 <= len(trimmed.encode("utf-8")) <= 120
        and not trimmed.startswith(_TITLE_REFUSED_OPENINGS)
        and any(is_alphabetic(char) for char in trimmed)
    )


@dataclass
class _Draft:
    """A unit while the lines are read: where its heading and its text start."""

    level: int
    heading: str
    paragraph_first: int
    paragraph_last: int
    starts_at: tuple[int, int]  # (position in the paragraph list, line): heading or caption
    body_at: tuple[int, int]  # the first line past the heading
    lead: str = ""  # the unit's own text on its heading line


@dataclass
class _Reader:
    """The line classifier's state across one segment's lines."""

    drafts: list[_Draft] = field(default_factory=list)
    caption: tuple[str, tuple[int, int]] | None = None
    in_comment: bool = False
    in_fence: bool = False
    first_line: bool = True

    def skipped(self, trimmed: str) -> bool:
        """Lines inside an HTML comment or a code fence, and the markers themselves."""
        if self.in_comment:
            self.in_comment = "-->" not in trimmed
            return True
        if trimmed.startswith("<!--"):
            self.in_comment = "-->" not in trimmed
            return True
        if trimmed.startswith(("```", "~~~")):
            self.in_fence = not self.in_fence
            self.caption = None
            return True
        return self.in_fence

    def read(self, paragraph: int, at: tuple[int, int], trimmed: str, opens: bool) -> bool:
        """Classify one line; False for a caption line (it stays part of what follows)."""
        was_first, self.first_line = self.first_line, False
        found = heading_of(trimmed)
        caption = _caption(trimmed)
        if caption is not None:
            self.caption = (caption, at)
            return False
        if was_first and found is None and _looks_like_title(trimmed):
            self.drafts.append(_Draft(TITLE_LEVEL, one_line(trimmed), paragraph, paragraph, at, at))
        elif found is not None:
            self.open(found, paragraph, at, opens)
        self.caption = None
        return True

    def open(self, found: Heading, paragraph: int, at: tuple[int, int], opens: bool) -> None:
        """Open a unit at ``paragraph``; the previous one ends before it or shares the paragraph."""
        level, heading, lead = found
        starts_at = at
        if self.caption is not None and level == _STATUTE_LEVEL["条"] and heading.startswith("第"):
            caption, starts_at = self.caption
            heading = f"{heading}（{caption}）"
        if self.drafts:
            self.drafts[-1].paragraph_last = paragraph - 1 if opens else paragraph
        self.drafts.append(
            _Draft(level, heading, paragraph, paragraph, starts_at, (at[0], at[1] + 1), lead)
        )


def units(paragraphs: Sequence[Paragraph]) -> list[Unit]:
    """The segment's units in order, numbered from 0; none for a segment without headings."""
    reader = _Reader()
    for position, paragraph in enumerate(paragraphs):
        opens = True  # nothing but a caption precedes the line in its paragraph
        for line_no, line in enumerate(paragraph.text.split("\n")):
            trimmed = line.strip(_TRIM)
            if reader.skipped(trimmed):
                reader.first_line = False
                continue
            if reader.read(paragraph.index, (position, line_no), trimmed, opens):
                opens = False
    drafts = reader.drafts
    if drafts:
        drafts[-1].paragraph_last = paragraphs[-1].index
    following = [*drafts[1:], None]
    return [
        Unit(
            number,
            draft.level,
            draft.heading,
            draft.paragraph_first,
            max(draft.paragraph_first, draft.paragraph_last),
            _opening(paragraphs, draft, following[number]),
        )
        for number, draft in enumerate(drafts)
    ]


def _opening(paragraphs: Sequence[Paragraph], draft: _Draft, following: _Draft | None) -> str:
    """The unit's text past its heading line, up to the next unit's, one-lined and capped."""
    if draft.level == TITLE_LEVEL:
        return ""  # on every position path, never quoted as a reference
    end = following.starts_at if following is not None else (len(paragraphs), 0)
    parts = [one_line(draft.lead)] if draft.lead else []
    gathered = len(draft.lead.encode("utf-8"))
    position, line_no = draft.body_at
    while (position, 0) < end and position < len(paragraphs) and gathered < OPENING_BYTES:
        lines = paragraphs[position].text.split("\n")
        stop = end[1] if position == end[0] else len(lines)
        text = one_line(_COMMENT.sub(" ", "\n".join(lines[line_no:stop])))
        if text:
            parts.append(text)
            gathered += len(text.encode("utf-8")) + 1
        position, line_no = position + 1, 0
    return _cut_bytes(" ".join(parts), OPENING_BYTES)


def _cut_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes (at a character boundary)."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def outermost_level(found: Sequence[Unit]) -> int | None:
    """The outermost heading level the segment uses (the level-0 title aside), or None."""
    levels = [unit.level for unit in found if unit.level > TITLE_LEVEL]
    return min(levels) if levels else None


def position_path(found: Sequence[Unit], paragraph: int) -> list[Unit]:
    """The heading path in force at ``paragraph``, outermost first.

    Read as a stack: a unit at level L closes every open unit at level L or
    deeper, so ``第二章 › 第三条`` even when the chapter's range (up to its
    first article) has ended.
    """
    stack: list[Unit] = []
    for unit in found:
        if unit.paragraph_first > paragraph:
            break
        while stack and stack[-1].level >= unit.level:
            stack.pop()
        stack.append(unit)
    return stack
