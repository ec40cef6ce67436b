"""The foreign-ideograph check: a spelling in another language's repertoire (taguru ADR 0039).

A multilingual model answering a Japanese segment that says ``適用法律`` can
write the simplified-Chinese ``适用法律``. That reads as the same term but is a
different string, so ``query``, ``resolve`` and the run's label vocabulary would
all see a second label, and a label is offered back to every later segment.
The mechanical removal pass therefore removes a label, subject, object or alias
spelling that uses such an ideograph (CONTRACT.md section 8 "Foreign
ideographs"):

- an ideograph is a character of U+3400–4DBF (Extension A), U+4E00–9FFF
  (Unified), U+F900–FAFF (compatibility) or U+20000–3347F (Extensions B–J
  and the compatibility supplement); kana, hangul, punctuation and every
  other character are never judged;
- the repertoire is JIS X 0208's 6,356 ideographs, taken as the characters of
  U+4E00–9FFF Python's ``shift_jis`` codec encodes: a fixed, dictionary-free
  set that separates an ideograph Japanese text uses from one only another
  orthography uses; everything outside that block is outside the repertoire;
- an ideograph outside the repertoire is flagged only when the folded
  haystack does not contain it. A Chinese or Korean segment, or a Japanese
  one quoting either, writes the character itself and so clears it: nothing
  about the segment's language is judged.

Not an occurrence check (labels stay unchecked for occurrence) and not a
fingerprint input. Known limit (taguru ADR 0039 section 4): an older form inside
JIS X 0208 (``辭``) passes, a rare Japanese ideograph outside it (``髙``)
is flagged unless the segment writes it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from taguru_ray.contract.rust_text import quote_for_issue
from taguru_ray.text.matching_form import drop_invisibles
from taguru_ray.text.occurrence import Haystack
from taguru_ray.text.paragraphs import is_white_space

_IDEOGRAPH_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3347F),
)
_UNIFIED_FIRST = 0x4E00
_UNIFIED_LAST = 0x9FFF


_ANY_IDEOGRAPH = re.compile(
    "[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in _IDEOGRAPH_RANGES) + "]"
)


def is_ideograph(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph: Unified, Extension A, compatibility, B–J."""
    code_point = ord(char)
    return any(first <= code_point <= last for first, last in _IDEOGRAPH_RANGES)


def in_jis_x0208(char: str) -> bool:
    """Whether ``char`` is one of JIS X 0208's 6,356 ideographs."""
    return char in _jis_x0208_ideographs()


def foreign_ideographs(spelling: str, haystack: Haystack) -> list[str]:
    """The ideographs of ``spelling`` outside JIS X 0208 that the haystack never writes.

    First-appearance order, each once. Containment is by character in the
    folded haystack, which folding leaves ideographs untouched in.
    """
    if not _ANY_IDEOGRAPH.search(spelling):
        return []  # most spellings hold none: skip the per-character walk
    found: list[str] = []
    for char in spelling:
        if char in found or not is_ideograph(char) or in_jis_x0208(char):
            continue
        if not haystack.contains(char):
            found.append(char)
    return found


def foreign_reason(findings: list[tuple[str, str, list[str]]]) -> str:
    """The one removal reason naming every offending field of an item.

    ``findings`` is ``[(field, spelling, chars)]`` in field order (label,
    subject, object; or alias). ``label "适用法律" uses 适, object "处分" uses 处
    — ideographs outside the segment's script``; ``an ideograph`` when exactly
    one character is flagged in all.
    """
    parts = [
        f"{field} {quote_for_issue(spelling)} uses {', '.join(chars)}"
        for field, spelling, chars in findings
    ]
    total = sum(len(chars) for _, _, chars in findings)
    noun = "an ideograph" if total == 1 else "ideographs"
    return f"{', '.join(parts)} — {noun} outside the segment's script"


@cache
def _jis_x0208_ideographs() -> frozenset[str]:
    """The repertoire, built on first use (about 10 ms) from Python's ``shift_jis`` codec.

    ``shift_jis`` is JIS X 0201 + JIS X 0208 with no vendor extension (unlike
    ``cp932``), so its ideographs are exactly JIS X 0208's, all in U+4E00–9FFF.
    """
    return frozenset(
        chr(code_point)
        for code_point in range(_UNIFIED_FIRST, _UNIFIED_LAST + 1)
        if _encodes(chr(code_point))
    )


def _encodes(char: str) -> bool:
    try:
        char.encode("shift_jis")
    except UnicodeEncodeError:
        return False
    return True


# Characters a name never holds: C0/C1 controls (NUL, ESC of an ANSI sequence, line
# breaks) and the bidirectional controls that reorder what a reader sees (U+202E
# shows "txt.exe" as "exe.txt"). Zero-width joiners are left alone: scripts need them.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def is_empty_name(name: str) -> bool:
    """Whether a reader sees nothing of ``name``: White_Space and invisible characters
    only (format characters such as U+200B, fillers, the default-ignorables). A lone
    zero-width space is as empty a name as ``""`` (issue 37, item 15)."""
    return is_white_space(drop_invisibles(name))


def hidden_characters(name: str) -> list[str]:
    """The code points of `name` a name may not hold, as ``U+001B``, first-seen order."""
    found: dict[str, None] = {}
    for char in name:
        if unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS:
            found.setdefault(f"U+{ord(char):04X}")
    return list(found)


def hidden_reason(fields: list[tuple[str, str, list[str]]]) -> str:
    """``label "a\\u{1b}b" holds a control character (U+001B) — never part of a name``."""
    return ", ".join(
        f"{field} {quote_for_issue(name)} holds a control character ({', '.join(codes)}) — "
        "never part of a name"
        for field, name, codes in fields
    )
