"""The text the redaction rules read, and the way back to the text they mask.

A secret in full-width digits (``０９０－１２３４－５６７８``), with no-break
spaces between its groups or a zero-width space inside it, is the same secret
to a reader — and to the model. So the rules match a paragraph's *matching
form*: Unicode NFKC, which folds full-width and other compatibility forms to
ASCII, with every invisible character dropped first — the default-ignorable
code points and every format character (category Cf: zero-width space and
joiners, word joiner, BOM, soft hyphen, bidi controls, variation selectors,
interlinear annotation marks, …), which a renderer shows nothing for, so they
can only ever hide a match. Each character of the form remembers the span of
the original it came from, so a match found in the form is masked in the
original and everything else stays byte for byte.

A space character other than U+0020 (category Zs: U+00A0, U+1680, U+2000..200A,
U+202F, U+205F, U+3000) is read two ways, since it can be either: a space
between a phone number's groups (``090\u30001234\u30005678``), or a character
put inside one token to break it (``taro\u00a0yamada@example.com``). The
*spaced* form (`matching_form`) folds it to U+0020; the *joined* form
(`joined_form`) drops it like a zero-width space. The rules read both, and a
match in either is masked (`text/redact.py`).

NFKC is applied cluster by cluster, not character by character: a cluster is
a character and the characters after it that change its normal form (a
combining mark, a half-width voiced sound mark, a conjoining jamo). The
clusters' forms concatenate to the NFKC of the whole text — a per-character
NFKC would not, and would let a mask split a base from its marks — and every
character of a cluster's form maps to the whole cluster.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), what a
# renderer shows nothing for, and every other format character (category Cf, to
# Unicode 15.1; tests/test_matching_form.py checks Python's table against it).
# Dropped before NFKC, so `taro\u200b@example.com` reads as an address.
IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark
    (0x06DD, 0x06DD),  # Arabic end of ayah (Cf)
    (0x070F, 0x070F),  # Syriac abbreviation mark (Cf)
    (0x0890, 0x0891),  # Arabic pound and piastre marks above (Cf)
    (0x08E2, 0x08E2),  # Arabic disputed end of ayah (Cf)
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner, joiner; LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xFFF0, 0xFFFB),  # interlinear annotation marks (Cf) and unassigned specials
    (0x110BD, 0x110BD),  # Kaithi number sign (Cf)
    (0x110CD, 0x110CD),  # Kaithi number sign above (Cf)
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls (Cf)
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical formatting
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement
)

# The space separators (category Zs) besides U+0020: a space in the spaced form,
# nothing in the joined one. NFKC folds all but U+1680, which is folded here.
SPACE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A0, 0x00A0),  # no-break space
    (0x1680, 0x1680),  # Ogham space mark
    (0x2000, 0x200A),  # en quad .. hair space
    (0x202F, 0x202F),  # narrow no-break space
    (0x205F, 0x205F),  # medium mathematical space
    (0x3000, 0x3000),  # ideographic space
)

# Characters that are a cluster of their own, never ignorable, and whose NFKC
# is one character: most of an English or a Japanese text. A run of them skips
# the per-cluster normalisation: the plain ones are their own form, the folded
# ones (full-width ASCII, the space characters) are translated, one to one.
# tests/test_matching_form.py checks every one of them.
PLAIN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x007F),  # ASCII
    (0x3001, 0x3003),  # 、。〃
    (0x3005, 0x3011),  # 々〆〇 and the CJK brackets 〈〉《》「」『』【】
    (0x3041, 0x3096),  # hiragana
    (0x30A1, 0x30FA),  # katakana
    (0x30FC, 0x30FC),  # ー
    (0x4E00, 0x9FFF),  # CJK unified ideographs
)
FULL_WIDTH_RANGES: tuple[tuple[int, int], ...] = (
    (0xFF01, 0xFF5E),  # full-width ASCII: ０-９, Ａ-Ｚ, ａ-ｚ, ＠, －, ．, ：, ＝, …
)
FOLDED_RANGES: tuple[tuple[int, int], ...] = SPACE_RANGES + FULL_WIDTH_RANGES


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


def _code_points(ranges: tuple[tuple[int, int], ...]) -> list[str]:
    return [chr(point) for low, high in ranges for point in range(low, high + 1)]


@dataclass(frozen=True)
class _Reading:
    """One way to read the text: what is dropped, what runs one to one, and its folding."""

    ignorable: re.Pattern[str]
    one_to_one_run: re.Pattern[str]
    fold: dict[int, str]


def _reading(
    ignorable: tuple[tuple[int, int], ...], folded: tuple[tuple[int, int], ...]
) -> _Reading:
    spaces = set(_code_points(SPACE_RANGES))
    return _Reading(
        re.compile(f"[{_class(ignorable)}]"),
        re.compile(f"[{_class(PLAIN_RANGES + folded)}]+"),
        str.maketrans(
            {
                char: " " if char in spaces else unicodedata.normalize("NFKC", char)
                for char in _code_points(folded)
            }
        ),
    )


_SPACED = _reading(IGNORABLE_RANGES, FOLDED_RANGES)
_JOINED = _reading(IGNORABLE_RANGES + SPACE_RANGES, FULL_WIDTH_RANGES)
_SPACE = re.compile(f"[{_class(SPACE_RANGES)}]")


@dataclass(frozen=True)
class MatchingForm:
    """A text's matching form and, per character of it, the original span it came from.

    ``starts``/``ends`` are ``None`` when the form is the original itself.
    """

    text: str
    size: int
    starts: list[int] | None = None
    ends: list[int] | None = None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span a span of the form came from: whole clusters, never part of one."""
        if self.starts is None or self.ends is None:
            return start, end
        if end <= start:
            at = self.starts[start] if start < len(self.starts) else self.size
            return at, at
        return self.starts[start], self.ends[end - 1]


@dataclass
class _Cluster:
    start: int
    end: int
    source: str  # the original characters, ignorables left out
    one_to_one: bool  # a run of one-to-one characters, each its own cluster


def drop_invisibles(text: str) -> str:
    """``text`` without its invisible characters: what a reader sees of it, unnormalised."""
    return _SPACED.ignorable.sub("", text)


def matching_form(text: str) -> MatchingForm:
    """``text`` as the redaction rules read it: invisibles dropped, then NFKC by cluster,
    every space character a U+0020 (the spaced form)."""
    if text.isascii() or (
        _SPACED.ignorable.search(text) is None
        and _SPACE.search(text) is None
        and unicodedata.is_normalized("NFKC", text)
    ):
        return MatchingForm(text, len(text))
    return _form(text, _SPACED)


def joined_form(text: str) -> MatchingForm | None:
    """The joined form: the spaced form with every space character but U+0020 dropped
    too, as a zero-width space is; None when ``text`` holds none (the forms agree)."""
    if text.isascii() or _SPACE.search(text) is None:
        return None
    return _form(text, _JOINED)


def _form(text: str, reading: _Reading) -> MatchingForm:
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for cluster in _clusters(text, reading):
        if cluster.one_to_one:
            pieces.append(cluster.source.translate(reading.fold))
            starts.extend(range(cluster.start, cluster.end))
            ends.extend(range(cluster.start + 1, cluster.end + 1))
            continue
        form = _nfkc(cluster.source)
        pieces.append(form)
        starts.extend([cluster.start] * len(form))
        ends.extend([cluster.end] * len(form))
    return MatchingForm("".join(pieces), len(text), starts, ends)


def _clusters(text: str, reading: _Reading) -> list[_Cluster]:
    clusters: list[_Cluster] = []
    index = 0
    while index < len(text):
        run = reading.one_to_one_run.match(text, index)
        if run is not None:
            clusters.append(_Cluster(index, run.end(), run.group(), one_to_one=True))
            index = run.end()
            continue
        char = text[index]
        if reading.ignorable.match(char) is None:
            if clusters and _joins(_tail(clusters[-1]), char):
                _join(clusters, index, char)
            else:
                clusters.append(_Cluster(index, index + 1, char, one_to_one=False))
        index += 1
    return clusters


def _tail(cluster: _Cluster) -> str:
    """What a next character may join: the cluster, or the last character of a run."""
    return cluster.source[-1] if cluster.one_to_one else cluster.source


def _join(clusters: list[_Cluster], index: int, char: str) -> None:
    """Add ``char`` to the last cluster; of a run, only the last character takes it."""
    last = clusters.pop()
    if last.one_to_one:
        if len(last.source) > 1:
            clusters.append(_Cluster(last.start, last.end - 1, last.source[:-1], one_to_one=True))
        last = _Cluster(last.end - 1, last.end, last.source[-1], one_to_one=False)
    clusters.append(last)
    last.source += char
    last.end = index + 1


def _joins(before: str, char: str) -> bool:
    """Whether ``char`` changes the normal form of the cluster ``before`` it.

    A character whose form opens with a combining mark always joins (it would
    reorder or compose with what precedes it); any other joins when the two
    normalise differently together than apart (Hangul jamo, some Indic vowels).
    """
    form = _nfkc(char)
    if form and unicodedata.combining(form[0]):
        return True
    return _nfkc(before + char) != _nfkc(before) + form


@lru_cache(maxsize=4096)
def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)
