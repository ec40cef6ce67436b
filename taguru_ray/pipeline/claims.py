"""Names earlier segments settled on, and the aliases that would rewire them.

Import interns every name a source file uses and routes every alias spelling
to its canonical's record; an alias whose spelling an earlier file already
routes elsewhere is refused (one spelling, one referent), stopping the import
stream. So an alias that would rewire a claimed spelling is pruned at
extraction time, with accounting (seed 000, issue #758). The ledger folds
segments in name order; segment *i* sees the claims of segments ``0 .. i-W``
only (`upto`), whatever later segments have been folded since.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from taguru_ray.contract.rust_text import quote_for_issue
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
