"""The `steer` step: what taguru-ray itself offers the model before it answers.

For now that is the relation-label vocabulary: the labels earlier segments of
the run settled on, most-reused first, so one run converges on one set of
labels instead of minting synonyms per file. A label's count is the number of
associations that used it plus the label aliases that settled on it as their
canonical. The fold over segments is `LabelLedger`; which segments feed it
(``0 .. i-W``) is the engine's business, the fold itself is pure.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter

from taguru_ray.contract.items import Alias, Association

# Offered labels are capped so the block stays a small, stable part of the prompt.
VOCABULARY_CAP = 200


@dataclass(frozen=True)
class LabelUse:
    label: str
    count: int

    def to_json(self) -> dict[str, object]:
        return {"label": self.label, "count": self.count}


@dataclass(frozen=True)
class Contribution:
    """What one finished segment hands to later segments.

    Its label uses (first-use order) for the reuse vocabulary, and the names
    its source file settles on for the claimed-names check: concept and label
    names as the associations use them, and its aliases sorted by spelling
    (the order import interns them in).
    """

    labels: tuple[LabelUse, ...] = ()
    concept_names: tuple[str, ...] = ()
    label_names: tuple[str, ...] = ()
    concept_aliases: tuple[tuple[str, str], ...] = ()
    label_aliases: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(associations: Iterable[Association], aliases: Iterable[Alias]) -> Contribution:
        return Contribution.of_associations(associations).with_aliases(aliases)

    @staticmethod
    def of_associations(associations: Iterable[Association]) -> Contribution:
        """What the associations alone settle: aliases are decided at the commit turn."""
        associations = list(associations)
        counts: dict[str, int] = {}
        concepts: dict[str, None] = {}
        for association in associations:
            counts[association.label] = counts.get(association.label, 0) + 1
            concepts.setdefault(association.subject)
            concepts.setdefault(association.object)
        return Contribution(
            labels=tuple(LabelUse(label, n) for label, n in counts.items()),
            concept_names=tuple(concepts),
            label_names=tuple(dict.fromkeys(a.label for a in associations)),
        )

    def with_aliases(self, aliases: Iterable[Alias]) -> Contribution:
        """This contribution plus the aliases the source file holds (a label alias counts
        one more use of its canonical)."""
        aliases = list(aliases)
        counts = {use.label: use.count for use in self.labels}
        for alias in aliases:
            if alias.kind == "label":
                counts[alias.canonical] = counts.get(alias.canonical, 0) + 1
        return dataclasses.replace(
            self,
            labels=tuple(LabelUse(label, n) for label, n in counts.items()),
            concept_aliases=tuple(
                sorted((a.alias, a.canonical) for a in aliases if a.kind == "concept")
            ),
            label_aliases=tuple(
                sorted((a.alias, a.canonical) for a in aliases if a.kind == "label")
            ),
        )


@dataclass
class LabelLedger:
    """The label counts folded from segments in name order; ties keep first-seen order.

    Every segment's job carries its ranking to a worker, and pickle ships an object
    once per call, a reference after that: so a ranking is made of the same
    `LabelUse` objects as the one before it wherever a label's count has not changed,
    and an unchanged ranking is the same tuple. At 200 labels that cut the driver's
    pickling of a 14-job call from 0.69 to 0.07 ms a segment, and the worker's
    unpickling from 0.35 to 0.02 ms (benchmarks/vocabulary_wire.py).
    """

    counts: dict[str, int] = field(default_factory=dict)
    _ranked: dict[int, tuple[LabelUse, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _uses: dict[str, LabelUse] = field(default_factory=dict, compare=False, repr=False)

    def absorb(self, contribution: Contribution) -> None:
        for use in contribution.labels:
            self.counts[use.label] = self.counts.get(use.label, 0) + use.count
        if contribution.labels:
            self._ranked.clear()

    def ranked(self, cap: int = VOCABULARY_CAP) -> tuple[LabelUse, ...]:
        """Most-reused first; among equals the label seen first (`nlargest` is stable)."""
        ranked = self._ranked.get(cap)
        if ranked is None:
            top = heapq.nlargest(cap, self.counts.items(), key=itemgetter(1))
            ranked = self._ranked[cap] = tuple(self._use(label, n) for label, n in top)
        return ranked

    def _use(self, label: str, count: int) -> LabelUse:
        use = self._uses.get(label)
        if use is None or use.count != count:
            use = self._uses[label] = LabelUse(label, count)
        return use


@dataclass(frozen=True)
class Steering:
    """Everything taguru-ray puts into a segment's system prompt besides the rules.

    `blocks` are the rendered optional blocks in prompt order (the context's
    names, the schema, the candidates, the carryover), each empty when off;
    the other fields are what the trace's `steering` record lists, computed by
    the same code that rendered the blocks.
    """

    vocabulary: tuple[LabelUse, ...] = ()
    questions: int = 0
    fact_budget: int = 0
    blocks: tuple[str, ...] = ()
    context_names: tuple[str, ...] = ()  # --vocabulary's capped list
    schema: dict[str, list[str]] | None = None  # {types, constrained_relations} prompted
    candidates: tuple[str, ...] = ()  # --candidates, as offered


def render_vocabulary(vocabulary: tuple[LabelUse, ...]) -> str:
    """The prompt lines of the label block; ``(×N)`` marks a label used more than once."""
    return "\n".join(
        f"- {use.label} (×{use.count})" if use.count > 1 else f"- {use.label}" for use in vocabulary
    )
