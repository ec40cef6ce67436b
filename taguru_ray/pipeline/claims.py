"""Names earlier segments settled on, and the aliases that would rewire them.

Import interns every name a source file uses and routes every alias spelling
to its canonical's record; an alias whose spelling an earlier file already
routes elsewhere is refused (one spelling, one referent), stopping the import
stream. So an alias that would rewire a claimed spelling is pruned at
extraction time, with accounting (seed 000, issue #758).

Segments commit in name order (ADR 0019): segment *i* is judged against the
claims of every segment ``0 .. i-1`` (and the --vocabulary context), never a
lagging view, so what it writes imports after all of them whatever the
window. `judge` is that turn: which of a segment's aliases are pruned, and
what the segment then hands later segments — computed by the same merge code
that renders its source file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.rust_text import quote_for_issue
from taguru_ray.pipeline.merge import merge_aliases
from taguru_ray.pipeline.steer import Contribution

NAMESPACES = ("concept", "label")


@dataclass
class ClaimLedger:
    """Per namespace: spelling → (index of the first segment to claim it, its record)."""

    claims: dict[str, dict[str, tuple[int, str]]] = field(
        default_factory=lambda: {namespace: {} for namespace in NAMESPACES}
    )

    def absorb(self, index: int, contribution: Contribution) -> None:
        """Fold one segment's names; call in increasing index order."""
        for namespace, names, aliases in (
            ("concept", contribution.concept_names, contribution.concept_aliases),
            ("label", contribution.label_names, contribution.label_aliases),
        ):
            table = self.claims[namespace]
            for name in names:
                table.setdefault(name, (index, name))
            for spelling, canonical in aliases:
                table.setdefault(canonical, (index, canonical))
                # Aliasing an alias lands on the true record, as import routes it.
                target = table[canonical][1]
                table.setdefault(spelling, (index, target))

    def resolve(self, namespace: str, spelling: str, upto: int) -> str | None:
        """The record `spelling` names for a segment that sees segments below `upto`."""
        claim = self.claims.get(namespace, {}).get(spelling)
        return claim[1] if claim is not None and claim[0] < upto else None

    def lookups(self, queries: Iterable[tuple[str, str]], upto: int) -> dict[tuple[str, str], str]:
        """Resolve many (namespace, spelling) pairs at once; unclaimed ones are left out."""
        found: dict[tuple[str, str], str] = {}
        for namespace, spelling in queries:
            target = self.resolve(namespace, spelling, upto)
            if target is not None:
                found[(namespace, spelling)] = target
        return found


def rewire_reason(spelling: str, kind: str) -> str:
    return (
        f"alias {quote_for_issue(spelling)} already names a {kind} an earlier segment or the "
        "target context settled on; an alias cannot rewire it (import would refuse the "
        "source file)"
    )


def rewires(spelling: str, canonical: str, kind: str, claimed: dict[tuple[str, str], str]) -> bool:
    """Whether aliasing `spelling` to `canonical` would route a claimed spelling elsewhere."""
    existing = claimed.get((kind, spelling))
    if existing is None:
        return False
    return existing != claimed.get((kind, canonical), canonical)


@dataclass(frozen=True)
class AliasItem:
    """One alias of a segment's accepted answers, where it sits, as answered."""

    piece: int  # the piece's position in merge order
    index: int  # its index among that piece's aliases
    piece_id: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Proposal:
    """What a segment brings to its commit turn: what its associations settle (merge's
    kept associations; aliases never change them) and every alias, in merge order."""

    base: Contribution
    aliases: tuple[AliasItem, ...] = ()

    def queries(self) -> list[tuple[str, str]]:
        """The (namespace, spelling) pairs the rewire check looks up."""
        found: dict[tuple[str, str], None] = {}
        for item in self.aliases:
            kind, spelling, canonical = _fields(item.raw)
            if kind in NAMESPACES and spelling and canonical:
                found.setdefault((kind, spelling))
                found.setdefault((kind, canonical))
        return list(found)


@dataclass(frozen=True)
class Verdict:
    """The commit turn's answer: the aliases to prune, by (piece, index), and what the
    segment's source file then settles for every later segment."""

    pruned: tuple[tuple[int, int], ...]
    contribution: Contribution


def judge(proposal: Proposal, claimed: dict[tuple[str, str], str]) -> Verdict:
    """Prune what would rewire a claimed spelling; the rest is adopted as merge adopts it."""
    if not proposal.aliases:  # the common case: nothing to judge, nothing to adopt
        return Verdict((), proposal.base)
    pruned: list[tuple[int, int]] = []
    kept: list[tuple[str, dict[str, Any]]] = []
    for item in proposal.aliases:
        kind, spelling, canonical = _fields(item.raw)
        if (
            kind in NAMESPACES
            and spelling
            and canonical
            and rewires(spelling, canonical, kind, claimed)
        ):
            pruned.append((item.piece, item.index))
        else:
            kept.append((item.piece_id, item.raw))
    concepts = frozenset(proposal.base.concept_names)
    labels = frozenset(proposal.base.label_names)
    adopted, _ = merge_aliases(kept, concepts, labels)
    return Verdict(tuple(pruned), proposal.base.with_aliases(alias for alias, _ in adopted))


def judge_alone(proposal: Proposal) -> Verdict:
    """The verdict for a segment nothing precedes (no ledger, as in unit tests)."""
    return judge(proposal, {})


def _fields(raw: dict[str, Any]) -> tuple[Any, Any, Any]:
    return raw.get("kind"), raw.get("alias"), raw.get("canonical")
