"""The occurrence check: does a subject or object name appear in the segment text?

Model output is untrusted. A subject or object the piece never says is a
fabrication no corrective turn can un-invent, so the mechanical removal pass
drops it (taguru ADR 0013 section 4) — deterministically, with no tokenizer and no
dictionary, the same answer on every attempt. The rule, CONTRACT.md section 8
"Occurrence":

1. Fold both sides: drop every Unicode White_Space character, lowercase.
   Spacing and case are exactly what an extractor legitimately normalizes
   (``PostgreSQL16`` for a text saying ``PostgreSQL 16``).
2. The folded name passes when it is a substring of the folded haystack.
3. Otherwise a name of three characters or fewer fails: it has no room for a
   partial cover to mean anything.
4. Otherwise a greedy left-to-right cover: at each position take the longest
   run of the name the haystack contains; a run of two or more characters is
   counted and skipped, a shorter one advances one character. The name passes
   when at least 3/4 of its characters are covered — a dropped particle
   (``プールの最大接続数`` -> ``プール最大接続数``) still passes, a fabricated
   entity sharing one fragment does not.
5. taguru ADR 0036: in a sparse-script name (no alphabetic character of a dense
   script — ideographs, kana, hangul, bopomofo, half-width katakana) two shared
   letters are a bigram any text of the language supplies, so a run made of
   letters only is clipped at the first word end of the name and counts only
   as a stem of five or more letters or as a whole word of three or more.
   Word boundaries come from the original name (its edges and its
   non-alphanumeric characters, whitespace included), so ``Copy trait`` still
   knows where ``copy`` ends after folding. A run holding a digit or symbol
   keeps the two-character rule (``20→100``, ``v1.2``).

Names the prompt itself offered (``--vocabulary`` concept names, candidates,
schema types) are an allowlist of folded spellings: steering and validation
agree by construction (taguru ADR 0015). Relation labels are never checked here.
"""

from __future__ import annotations

from taguru_ray.contract.rust_text import quote_for_issue
from taguru_ray.text.char_classes import is_alphabetic, is_alphanumeric
from taguru_ray.text.paragraphs import WHITE_SPACE

# A covering run shorter than this asserts nothing: single shared characters
# would let any name assemble itself out of an unrelated text's alphabet.
MIN_RUN = 2
# Names this short must appear verbatim (``k6``, ``S3``).
VERBATIM_MAX = 3
# The cover threshold, covered / length >= 3 / 4.
COVERAGE_NUM = 3
COVERAGE_DEN = 4
# taguru ADR 0036 section 3.3: a two-letter whole word is a function word (``of``,
# ``is``) present in any text; three admits real identifiers (``std``, ``API``).
SPARSE_WORD_MIN_RUN = 3
# ... and five is the shortest stem that survives inflection
# (``selects``/``selection``) without being a fragment any paragraph supplies.
SPARSE_STEM_MIN_RUN = 5

# Alphabetic characters in these ranges make a name dense-script (taguru ADR 0036
# section 3.1): hangul jamo, the CJK block range (radicals, kana, bopomofo,
# ideographs), hangul jamo extended-A, hangul syllables and extended-B, the
# compatibility ideographs, half-width katakana, the ideograph planes.
_DENSE_RANGES = (
    (0x1100, 0x11FF),
    (0x2E80, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)

_DROP_WHITE_SPACE = dict.fromkeys(map(ord, WHITE_SPACE))


def fold(text: str) -> str:
    """The occurrence check's normal form: every White_Space character dropped, lowercased.

    Lowercasing is per character, as the reference's ``char::to_lowercase``:
    ``str.lower`` would turn a word-final ``Σ`` into ``ς``, the reference keeps
    ``σ``. That context rule is the only one ``str.lower`` has, so text without
    ``Σ`` takes the fast path.
    """
    kept = text.translate(_DROP_WHITE_SPACE)
    if "Σ" not in kept:
        return kept.lower()
    return "".join(char.lower() for char in kept)


class Haystack:
    """The folded text a piece's names are judged against, built once per piece.

    ``text`` is ``fold`` of the user turn after its preamble (the chunk-context
    block and the labelled chunk, CONTRACT.md section 7). Every containment
    probe goes through ``contains``, the one place a probe is made.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = fold(text)

    def __repr__(self) -> str:
        return f"Haystack({len(self.text)} folded chars)"

    def contains(self, folded: str) -> bool:
        """Whether ``folded`` (already in the normal form) occurs in the haystack."""
        return folded in self.text


def name_occurs(name: str, haystack: Haystack, allowlist: frozenset[str] = frozenset()) -> bool:
    """Whether a subject/object ``name`` plausibly appears in the haystack
    (taguru ADRs 0013 + 0036).

    ``allowlist`` holds folded spellings the prompt itself offered; such a name
    always passes. An empty name passes: emptiness is another rule's finding.
    """
    folded = fold(name)
    # Most names occur verbatim: answer those without building the glyph walk.
    if folded in allowlist or haystack.contains(folded):
        return True
    glyphs = _Glyphs(name)
    if glyphs.text in allowlist or haystack.contains(glyphs.text):
        return True
    if len(glyphs.text) <= VERBATIM_MAX:
        return False
    covered = _covered(glyphs, haystack)
    return covered * COVERAGE_DEN >= len(glyphs.text) * COVERAGE_NUM


def occurrence_reason(fields: list[tuple[str, str]]) -> str:
    """The removal reason for the ``(field, name)`` pairs that failed, in field order.

    ``object "MongoDB" does not appear in the segment text``; when subject and
    object both fail, one record names both, joined with ``, `` (the reference
    checks both positions before recording anything).
    """
    return ", ".join(
        f"{field} {quote_for_issue(name)} does not appear in the segment text"
        for field, name in fields
    )


class _Glyphs:
    """A name folded, each character remembering the word boundaries of the original.

    A word starts at the name's start or after a non-alphanumeric character and
    ends at the name's end or before one, read before whitespace is dropped.
    When lowercasing expands a character (``İ`` -> ``i̇``) the start flag stays
    on the first of its characters and the end flag on the last.
    """

    __slots__ = ("letter", "text", "word_end", "word_start")

    def __init__(self, name: str) -> None:
        chars: list[str] = []
        self.word_start: list[bool] = []
        self.word_end: list[bool] = []
        last = len(name) - 1
        for index, char in enumerate(name):
            if char in WHITE_SPACE:
                continue
            starts = index == 0 or not is_alphanumeric(name[index - 1])
            ends = index == last or not is_alphanumeric(name[index + 1])
            lowered = char.lower()
            for offset, folded in enumerate(lowered):
                chars.append(folded)
                self.word_start.append(starts and offset == 0)
                self.word_end.append(ends and offset == len(lowered) - 1)
        self.text = "".join(chars)
        self.letter = [is_alphabetic(char) for char in chars]

    def is_sparse(self) -> bool:
        """True when no character is an alphabetic dense-script one
        (taguru ADR 0036 section 3.1)."""
        return not any(_is_dense(char) for char in self.text)

    def clip(self, start: int, length: int) -> int:
        """taguru ADR 0036 section 3.2: a letters-only run ends at the first word end inside it.

        The cover then takes the longest run within the word, and letters of two
        adjacent words never assemble a stem neither word has. A run holding a
        digit or symbol stays whole.
        """
        if not all(self.letter[start : start + length]):
            return length
        for index in range(start, start + length):
            if self.word_end[index]:
                return index - start + 1
        return length

    def sparse_run_counts(self, start: int, length: int) -> bool:
        """A run of a sparse name counts if it holds a digit/symbol, or is a stem or whole word."""
        if not all(self.letter[start : start + length]):
            return True
        whole_word = self.word_start[start] and self.word_end[start + length - 1]
        return length >= SPARSE_STEM_MIN_RUN or (length >= SPARSE_WORD_MIN_RUN and whole_word)


def _covered(glyphs: _Glyphs, haystack: Haystack) -> int:
    """How many of the name's characters the greedy cover counts.

    At each position the longest run the haystack contains is found by
    extending one character at a time. ``end`` only moves forward: every part
    of a contained run is contained too, so the next position's run is known
    to reach at least as far and its probing resumes there. Every probe either
    moves ``end`` or ends a position, so a name of n characters costs at most
    2n probes, whatever the haystack.
    """
    text = glyphs.text
    sparse = glyphs.is_sparse()
    covered = start = end = 0
    while start < len(text):
        end = max(end, start)
        while end < len(text) and haystack.contains(text[start : end + 1]):
            end += 1
        run = glyphs.clip(start, end - start) if sparse else end - start
        if run >= MIN_RUN and (not sparse or glyphs.sparse_run_counts(start, run)):
            covered += run
            start += run
        else:
            start += 1
    return covered


def _is_dense(char: str) -> bool:
    code_point = ord(char)
    if code_point < _DENSE_RANGES[0][0]:
        return False
    in_range = any(first <= code_point <= last for first, last in _DENSE_RANGES)
    return in_range and is_alphabetic(char)
