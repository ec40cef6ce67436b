"""Where a name occurs in a text, as spans of the text itself, under the occurrence fold.

The occurrence check (`text/occurrence.py`) judges a name against a text after
folding both (White_Space dropped, each character lowercased), so ``PostgreSQL16``
occurs in ``PostgreSQL 16``. A person looking at the paragraph wants that same
occurrence marked in the text as written: `spans` finds the folded name in the
folded text and maps each hit back to the characters it came from, so a mark
never disagrees with the check that let the name through.
"""

from __future__ import annotations

from collections.abc import Iterable

from taguru_ray.text.occurrence import fold
from taguru_ray.text.paragraphs import WHITE_SPACE

Span = tuple[int, int]  # [start, end) in the original text


class Folded:
    """A text folded once, each folded character remembering the original it came from."""

    __slots__ = ("origin", "text")

    def __init__(self, text: str) -> None:
        chars: list[str] = []
        origin: list[int] = []
        for index, char in enumerate(text):
            if char in WHITE_SPACE:
                continue
            # Per character, as `fold` lowercases (a final Σ stays σ); one character may
            # lowercase into two (İ), both from the same original.
            for lowered in char.lower():
                chars.append(lowered)
                origin.append(index)
        self.text = "".join(chars)
        self.origin = origin

    def spans(self, name: str) -> list[Span]:
        """Every non-overlapping occurrence of `name` (folded here), left to right."""
        needle = fold(name)
        found: list[Span] = []
        if not needle:
            return found
        at = self.text.find(needle)
        while at >= 0:
            end = at + len(needle)
            found.append((self.origin[at], self.origin[end - 1] + 1))
            at = self.text.find(needle, end)
        return found


def spans(text: str, names: Iterable[str]) -> list[Span]:
    """The spans of `text` where any of `names` occurs, overlaps merged, in text order."""
    folded = Folded(text)
    hits = sorted(span for name in set(names) for span in folded.spans(name))
    merged: list[Span] = []
    for start, end in hits:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
