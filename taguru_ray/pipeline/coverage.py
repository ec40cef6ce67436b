"""The `verify` step's ``--coverage`` half: sentences the segment said and no fact covers.

taguru ADR 0016 is the recall-side mirror of the occurrence check (taguru ADR 0013): that
check removes what the model asserted and the segment never said; this one
reports what the segment said and the model never asserted. It is
report-only — the source file is written whole either way, no model call is
made, the flag is not a computation input — and it reads nothing but the
segment's paragraphs and the kept associations, so a skipped segment is judged
from the source file it already has (CONTRACT.md section 8 "Coverage").

- A sentence is a run of a canonical paragraph between the terminators
  ``。 ! ? ！ ？`` and line breaks, trimmed of White_Space, never empty. An ASCII
  ``.`` is not a terminator: it lives inside identifiers (``file.rs``,
  ``qwen2.5``), and missing one only makes a sentence longer, which can only
  make it easier to cover — the check errs toward flagging less.
- A sentence holding two or more distinct candidate names — taguru ADR 0014's
  segmentation (``candidates``) applied to the sentence itself — states
  something relational and is owed a triple.
- It is covered when one kept association lands at least two of its three
  parts (subject, label, object) in the sentence, each judged by the
  occurrence check (``name_occurs``, the same folding) against the sentence.
  Two, not three: the subject of a fact often lives in an earlier sentence or
  a heading.

Each gap is one stderr line (``uncovered: [paragraph N] <sentence>``, the quote
capped at 120 bytes) and one trace ``uncovered`` record carrying the full
sentence, the paragraph's text and the chunk that held it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from taguru_ray.contract.items import Association
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import UncoveredTrace
from taguru_ray.errors import MESSAGE_PREFIX
from taguru_ray.pipeline.plan import Chunk
from taguru_ray.text.candidates import candidates
from taguru_ray.text.occurrence import (
    COVERAGE_DEN,
    COVERAGE_NUM,
    VERBATIM_MAX,
    Haystack,
    fold,
    name_occurs,
)
from taguru_ray.text.paragraphs import WHITE_SPACE, Paragraph

# A sentence owes a triple once it holds this many distinct candidate names.
MIN_TERMS = 2
# An association covers a sentence when this many of its parts occur there.
MIN_PARTS = 2
# The stderr quote's byte cap: enough to find the sentence, never a second copy.
QUOTE_MAX_BYTES = 120

_SENTENCE_END = re.compile("[。!?！？\n]")
_TRIM = "".join(sorted(WHITE_SPACE))


@dataclass(frozen=True)
class Gap:
    """One sentence owed coverage that no kept association covers."""

    paragraph: int  # the canonical paragraph index, the numbering the model cites
    sentence: str  # in full; the stderr line quotes it capped


def sentences(paragraph_text: str) -> list[str]:
    """The paragraph's sentences, in order: split at terminators and line breaks, trimmed."""
    pieces = (piece.strip(_TRIM) for piece in _SENTENCE_END.split(paragraph_text))
    return [piece for piece in pieces if piece]


def uncovered(paragraphs: Iterable[Paragraph], associations: Iterable[Association]) -> list[Gap]:
    """Every sentence owed coverage that no kept association covers, in segment order.

    The candidate names are segmented from each sentence itself, as the
    reference does (``coverage.rs``): the segment-wide list is capped at 100
    names, and a sentence past the cap still owes its facts.
    """
    parts = _Parts([association.triple for association in associations])
    gaps: list[Gap] = []
    for paragraph in paragraphs:
        for sentence in sentences(paragraph.text):
            if len(candidates(sentence)) >= MIN_TERMS and not parts.cover(sentence):
                gaps.append(Gap(paragraph.index, sentence))
    return gaps


class _Parts:
    """The kept associations' parts, indexed so a sentence is judged against few of them.

    The occurrence check passes a name either as a substring of the folded
    sentence or by a cover of runs of two characters or more, each a
    substring; either way some two-character slice of the folded name occurs
    in the sentence. So a sentence only asks the parts sharing one of its
    two-character slices — and, before the full check, only those whose
    slices present could reach the 3/4 cover at all. The verdicts are the
    check's own (``name_occurs``); the index only skips certain misses.
    """

    def __init__(self, triples: Sequence[tuple[str, str, str]]) -> None:
        self.folded: dict[str, str] = {}
        self.triples_of: dict[str, list[int]] = defaultdict(list)  # one entry per position
        self.by_pair: dict[str, Counter[str]] = defaultdict(Counter)  # pair -> part -> positions
        self.single: list[str] = []  # one folded character: only a verbatim match lands
        # An empty part is never indexed, so it lands nowhere.
        for number, triple in enumerate(triples):
            for part in triple:
                self.triples_of[part].append(number)
                if part and part not in self.folded:
                    self._index(part)

    def _index(self, part: str) -> None:
        folded = self.folded[part] = fold(part)
        if not folded:
            return  # an all-White_Space part lands nowhere
        if len(folded) < 2:
            self.single.append(part)
        for start in range(len(folded) - 1):
            self.by_pair[folded[start : start + 2]][part] += 1

    def cover(self, sentence: str) -> bool:
        """Whether some triple lands ``MIN_PARTS`` of its parts in ``sentence``.

        Verbatim parts are counted first (a substring probe each), the
        partial covers after, and the first triple reaching ``MIN_PARTS`` ends
        the search.
        """
        haystack = Haystack(sentence)
        pairs = {haystack.text[i : i + 2] for i in range(len(haystack.text) - 1)}
        shared: Counter[str] = Counter()  # part -> positions of its pairs the sentence has
        for pair in pairs:
            shared.update(self.by_pair.get(pair, {}))
        shared.update(part for part in self.single if self.folded[part] in haystack.text)
        verbatim = [part for part in shared if haystack.contains(self.folded[part])]
        partial = (
            part
            for part, positions in shared.items()
            if self._reaches(part, positions, haystack, pairs)
        )
        landed: Counter[int] = Counter()
        for part in chain(verbatim, partial):
            for number in self.triples_of[part]:
                landed[number] += 1
                if landed[number] >= MIN_PARTS:
                    return True
        return False

    def _reaches(self, part: str, positions: int, haystack: Haystack, pairs: set[str]) -> bool:
        """A part that is no substring: the occurrence check's cover, when it could pass at all.

        Each present pair covers two characters at most, and each character
        needs a present pair around it: both bounds must reach 3/4 first.
        """
        folded = self.folded[part]
        needed = len(folded) * COVERAGE_NUM
        if len(folded) <= VERBATIM_MAX or 2 * positions * COVERAGE_DEN < needed:
            return False
        if haystack.contains(folded):
            return False  # counted with the verbatim parts
        reachable = sum(
            1
            for i in range(len(folded))
            if (i > 0 and folded[i - 1 : i + 1] in pairs) or folded[i : i + 2] in pairs
        )
        return reachable * COVERAGE_DEN >= needed and name_occurs(part, haystack)


def quote(sentence: str) -> str:
    """The sentence as stderr quotes it: whole up to 120 bytes, else cut there and ``…`` added."""
    encoded = sentence.encode("utf-8")
    if len(encoded) <= QUOTE_MAX_BYTES:
        return sentence
    return encoded[:QUOTE_MAX_BYTES].decode("utf-8", errors="ignore") + "…"


def stderr_line(source: str, gap: Gap) -> str:
    """``taguru: extract: <source>: uncovered: [paragraph N] <quote>`` (CONTRACT.md section 6)."""
    return f"{MESSAGE_PREFIX}{source}: uncovered: [paragraph {gap.paragraph}] {quote(gap.sentence)}"


def uncovered_records(
    gaps: Iterable[Gap], paragraphs: Sequence[Paragraph], chunks: Sequence[Chunk]
) -> list[Record]:
    """The trace's ``uncovered`` records (CONTRACT.md section 4.1, item 10), one per gap.

    Each carries the full sentence, the paragraph's text, and the first chunk
    of the plan whose paragraph range holds the paragraph (an oversized
    paragraph spans several; the first one owns the gap).
    """
    texts = {paragraph.index: paragraph.text for paragraph in paragraphs}
    records: list[Record] = []
    for gap in gaps:
        owner = next(
            (c for c in chunks if c.paragraph_first <= gap.paragraph <= c.paragraph_last), None
        )
        records.append(
            UncoveredTrace(
                paragraph=gap.paragraph,
                sentence=gap.sentence,
                text=texts.get(gap.paragraph, ""),
                chunk_index=owner.index if owner is not None else None,
                chunk_sha256=owner.sha256 if owner is not None else None,
            ).record()
        )
    return records
