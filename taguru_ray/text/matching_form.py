"""The text the redaction rules read, and the way back to the text they mask.

A secret in full-width digits (``０９０－１２３４－５６７８``), with no-break
spaces between its groups or a zero-width space inside it, is the same secret
to a reader — and to the model. So the rules match a paragraph's *matching
form*: Unicode NFKC, which folds full-width and other compatibility forms to
ASCII and every space character (U+00A0, U+3000, …) to U+0020, with the
default-ignorable code points dropped first (zero-width space and joiners,
word joiner, BOM, soft hyphen, bidi controls, variation selectors: invisible
by definition, so they can only ever hide a match). Each character of the form
remembers the span of the original it came from, so a match found in the form
is masked in the original and everything else stays byte for byte.

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

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): what a
# renderer shows nothing for. Dropped before NFKC, so `taro\u200b@example.com`
# reads as an address.
IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
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
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical formatting
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement
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
FOLDED_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A0, 0x00A0),  # no-break space
    (0x2000, 0x200A),  # en quad .. hair space
    (0x202F, 0x202F),  # narrow no-break space
    (0x205F, 0x205F),  # medium mathematical space
    (0x3000, 0x3000),  # ideographic space
    (0xFF01, 0xFF5E),  # full-width ASCII: ０-９, Ａ-Ｚ, ａ-ｚ, ＠, －, ．, ：, ＝, …
)


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


def _code_points(ranges: tuple[tuple[int, int], ...]) -> list[str]:
    return [chr(point) for low, high in ranges for point in range(low, high + 1)]


_IGNORABLE = re.compile(f"[{_class(IGNORABLE_RANGES)}]")
_ONE_TO_ONE_RUN = re.compile(f"[{_class(PLAIN_RANGES + FOLDED_RANGES)}]+")
_FOLD = str.maketrans(
    {char: unicodedata.normalize("NFKC", char) for char in _code_points(FOLDED_RANGES)}
)


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


def matching_form(text: str) -> MatchingForm:
    """``text`` as the redaction rules read it: ignorables dropped, then NFKC by cluster."""
    if text.isascii() or (
        _IGNORABLE.search(text) is None and unicodedata.is_normalized("NFKC", text)
    ):
        return MatchingForm(text, len(text))
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for cluster in _clusters(text):
        if cluster.one_to_one:
            pieces.append(cluster.source.translate(_FOLD))
            starts.extend(range(cluster.start, cluster.end))
            ends.extend(range(cluster.start + 1, cluster.end + 1))
            continue
        form = _nfkc(cluster.source)
        pieces.append(form)
        starts.extend([cluster.start] * len(form))
        ends.extend([cluster.end] * len(form))
    return MatchingForm("".join(pieces), len(text), starts, ends)


def _clusters(text: str) -> list[_Cluster]:
    clusters: list[_Cluster] = []
    index = 0
    while index < len(text):
        run = _ONE_TO_ONE_RUN.match(text, index)
        if run is not None:
            clusters.append(_Cluster(index, run.end(), run.group(), one_to_one=True))
            index = run.end()
            continue
        char = text[index]
        if _IGNORABLE.match(char) is None:
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
