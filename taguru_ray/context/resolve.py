"""The lexical resolve tier (EVALUATE.md §2.2): free wording onto stored spellings.

One `EntryIndex` per namespace (concepts, labels) holds every canonical
spelling and every alias spelling, each pointing at its canonical name, in
normalized form. A cue is scored against them:

- exact normalized match: 1.0, kind ``exact`` (``alias`` when the canonical's
  own normalized name is not the cue);
- containment either way: shorter / longer character count, ``containment``;
- only when nothing matched exactly, spellings not already contained that share
  an informative character bigram with the cue: Dice over informative bigrams,
  kept at or above ``dice_floor``, ``fuzzy``. A bigram carried by more than
  max(64, spellings / 20) spellings is a stop-gram, ignored on both sides.

Each canonical keeps its best score (the first seen on a tie); results sort by
score descending, then name in code-point order (= Rust's byte order).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from taguru_ray.context.normalize import normalize_entry

DEFAULT_DICE_FLOOR = 0.3


@dataclass(frozen=True)
class Resolution:
    name: str
    score: float
    kind: str  # exact | alias | containment | fuzzy

    def wire(self) -> dict[str, object]:
        return {"name": self.name, "score": self.score, "tier": "lexical", "kind": self.kind}


def clamp_floor(value: float | None, fallback: float) -> float:
    """A floor clamped to 0..1; NaN reads as 1 (nothing fuzzy passes), as the reference."""
    if value is None:
        return fallback
    if math.isnan(value):
        return 1.0
    return min(1.0, max(0.0, value))


def _bigrams(text: str) -> set[str]:
    return {text[i : i + 2] for i in range(len(text) - 1)}


class EntryIndex:
    """One namespace's spellings, normalized, with a bigram posting index."""

    def __init__(self, spellings: Iterable[tuple[str, str]]) -> None:
        """`spellings`: (spelling, canonical name) pairs — canonical names map to themselves."""
        self.forms: list[str] = []
        self.targets: list[str] = []
        self.postings: dict[str, list[int]] = defaultdict(list)
        for spelling, canonical in spellings:
            form = normalize_entry(spelling)
            index = len(self.forms)
            self.forms.append(form)
            self.targets.append(canonical)
            for gram in _bigrams(form):
                self.postings[gram].append(index)
        self.stop_at = max(len(self.forms) // 20, 64)

    def _is_stop(self, gram: str) -> bool:
        return len(self.postings.get(gram, ())) > self.stop_at

    def resolve(self, cue: str, dice_floor: float = DEFAULT_DICE_FLOOR) -> list[Resolution]:
        needle = normalize_entry(cue)
        if not needle:
            return []
        best: dict[str, tuple[float, str]] = {}

        def record(target: str, score: float, kind: str) -> None:
            if target not in best or score > best[target][0]:
                best[target] = (score, kind)

        contained: set[int] = set()
        exact = False
        for index, form in enumerate(self.forms):
            if not form:
                continue
            if form == needle:
                exact = True
                record(self.targets[index], 1.0, "exact")
            elif needle in form or form in needle:
                shorter, longer = sorted((len(needle), len(form)))
                record(self.targets[index], shorter / longer, "containment")
            else:
                continue
            contained.add(index)
        if not exact:
            self._fuzzy(needle, dice_floor, contained, record)
        resolutions = []
        for target, (score, kind) in best.items():
            if kind == "exact" and normalize_entry(target) != needle:
                kind = "alias"
            resolutions.append(Resolution(target, score, kind))
        resolutions.sort(key=lambda r: (-r.score, r.name))
        return resolutions

    def _fuzzy(
        self,
        needle: str,
        floor: float,
        contained: set[int],
        record: Callable[[str, float, str], None],
    ) -> None:
        grams = _bigrams(needle)
        informative_needle = sum(1 for gram in grams if not self._is_stop(gram))
        shared: dict[int, int] = defaultdict(int)
        for gram in grams:
            postings = self.postings.get(gram)
            if postings and len(postings) <= self.stop_at:
                for index in postings:
                    if index not in contained:
                        shared[index] += 1
        for index, count in shared.items():
            informative = sum(1 for gram in _bigrams(self.forms[index]) if not self._is_stop(gram))
            if informative == 0:
                continue
            dice = 2.0 * count / (informative_needle + informative)
            if dice >= floor:
                record(self.targets[index], dice, "fuzzy")
