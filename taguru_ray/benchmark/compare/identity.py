"""When two extracted associations are the same one (BENCHMARK.md §2.5).

Every same-ness judgement of `stability` and `differences` goes through here:
`normalize_term` (one spelling's matching form), the batch-local `AliasMap`
(alias chains and cycles resolved), the association key, the per-run
`Presence` of a key, and the Jaccard index. The parameters are the
`Matching` block both artifacts record, so a reader can re-derive any
judgement without this module.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from taguru_ray.contract.rust_text import rust_trim

# The alias kinds with an identity namespace; other kinds are kept for the
# orphan check only.
ALIAS_KINDS = ("concept", "label")


@dataclass(frozen=True)
class Matching:
    """How spellings are folded before comparison; the default is what compare uses."""

    case_fold: bool = True
    unicode_normalization: str = "NFKC"  # or "none"
    alias_expansion: str = "batch-local"  # or "none"
    weight_tolerance: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "module": "benchmark::identity",
            "case_fold": self.case_fold,
            "unicode_normalization": self.unicode_normalization,
            "alias_expansion": self.alias_expansion,
            "weight_tolerance": self.weight_tolerance,
        }


DEFAULT_MATCHING = Matching()


def _lowercase(text: str) -> str:
    # Per character: a whole-string lower() applies Greek final-sigma context,
    # which Rust's char-wise to_lowercase does not.
    return "".join(char.lower() for char in text)


def normalize_term(raw: str, matching: Matching = DEFAULT_MATCHING) -> str:
    """trim → lowercase → NFKC → lowercase → trim (each step only when its flag is on).

    Katakana is deliberately not folded to hiragana (unlike the server's
    entry folding): which script a model chose between runs is part of the
    variation being measured. The second lowercase and the final trim make the
    function idempotent — NFKC can produce capitals or leading space (U+00A8
    becomes SPACE + U+0308).
    """
    text = rust_trim(raw)
    if matching.case_fold:
        text = _lowercase(text)
    if matching.unicode_normalization == "NFKC":
        text = unicodedata.normalize("NFKC", text)
    if matching.case_fold:
        text = _lowercase(text)
    return rust_trim(text)


@dataclass(frozen=True)
class RawAssociation:
    """One association line of a batch, spellings as written."""

    subject: str
    label: str
    object: str
    weight: float
    paragraph: int | None


@dataclass(frozen=True)
class AliasLine:
    """One alias line of a batch whose kind is `concept` or `label`."""

    alias: str
    canonical: str
    kind: str


def resolve_chains(direct: dict[str, str]) -> dict[str, str]:
    """Each alias's terminal: follow alias → canonical until a non-alias.

    A cycle resolves every member, and every chain running into it, to the
    cycle's smallest member, so the answer never depends on line order.
    """
    resolved: dict[str, str] = {}
    for start in sorted(direct):
        path: list[str] = []
        seen: dict[str, int] = {}
        term = start
        while term in direct and term not in resolved and term not in seen:
            seen[term] = len(path)
            path.append(term)
            term = direct[term]
        if term in resolved:
            terminal = resolved[term]
        elif term in seen:
            terminal = min(path[seen[term] :])
        else:
            terminal = term
        for member in path:
            resolved[member] = terminal
    return resolved


class AliasMap:
    """One batch's aliases, per kind, resolved to their terminals."""

    def __init__(self, resolved: dict[str, dict[str, str]] | None = None) -> None:
        self._resolved = resolved or {}

    @classmethod
    def from_lines(cls, lines: Iterable[AliasLine], matching: Matching) -> AliasMap:
        """Self-maps skipped, first declaration of an alias wins, chains resolved."""
        if matching.alias_expansion == "none":
            return cls()
        direct: dict[str, dict[str, str]] = {kind: {} for kind in ALIAS_KINDS}
        for line in lines:
            if line.kind not in direct:
                continue
            alias = normalize_term(line.alias, matching)
            canonical = normalize_term(line.canonical, matching)
            if alias != canonical:
                direct[line.kind].setdefault(alias, canonical)
        return cls({kind: resolve_chains(table) for kind, table in direct.items()})

    def resolve(self, kind: str, term: str) -> str:
        """A normalized spelling's canonical; an unregistered one is itself."""
        return self._resolved.get(kind, {}).get(term, term)


class AssocKey(NamedTuple):
    """An association's identity: its segment and its three resolved terms."""

    document_id: str
    subject: str
    label: str
    object: str


@dataclass
class Observation:
    """Everything one run said about one key (several lines may merge into it)."""

    weights: list[float] = field(default_factory=list)
    paragraphs: set[int | None] = field(default_factory=set)
    spellings: set[tuple[str, str, str]] = field(default_factory=set)

    def merge(self, other: Observation) -> None:
        self.weights.extend(other.weights)
        self.paragraphs |= other.paragraphs
        self.spellings |= other.spellings


def keyed_associations(
    document_id: str,
    rows: Iterable[RawAssociation],
    aliases: AliasMap,
    matching: Matching = DEFAULT_MATCHING,
) -> dict[AssocKey, Observation]:
    """One batch's associations by key; lines that fold together merge."""
    keyed: dict[AssocKey, Observation] = {}
    for row in rows:
        key = AssocKey(
            document_id,
            aliases.resolve("concept", normalize_term(row.subject, matching)),
            aliases.resolve("label", normalize_term(row.label, matching)),
            aliases.resolve("concept", normalize_term(row.object, matching)),
        )
        seen = keyed.setdefault(key, Observation())
        seen.weights.append(row.weight)
        seen.paragraphs.add(row.paragraph)
        seen.spellings.add((row.subject, row.label, row.object))
    return keyed


def sign(weight: float) -> int:
    """A weight's polarity; zero is a polarity of its own."""
    return (weight > 0) - (weight < 0)


@dataclass
class Presence:
    """One key across a model's runs: what each run that produced it observed."""

    by_run: dict[int, Observation] = field(default_factory=dict)

    @property
    def runs(self) -> list[int]:
        return sorted(self.by_run)

    @property
    def n_present(self) -> int:
        return len(self.by_run)

    def add(self, run_index: int, observation: Observation) -> None:
        if run_index in self.by_run:
            self.by_run[run_index].merge(observation)
        else:
            self.by_run[run_index] = observation


def polarity_varies(presence: Presence) -> bool:
    """More than one sign among all weights, within-run merges included."""
    signs = {sign(w) for seen in presence.by_run.values() for w in seen.weights}
    return len(signs) > 1


def weight_varies(presence: Presence, tolerance: float) -> bool:
    """The spread of all weights exceeds the tolerance (equal to it is no variation)."""
    weights = [w for seen in presence.by_run.values() for w in seen.weights]
    return bool(weights) and max(weights) - min(weights) > tolerance


def attribution_varies(presence: Presence) -> bool:
    """The runs' paragraph sets are not all equal."""
    sets = [frozenset(seen.paragraphs) for seen in presence.by_run.values()]
    return len(set(sets)) > 1


def jaccard(a: set[Any], b: set[Any]) -> float | None:
    """|A∩B| / |A∪B|; None when both are empty (nothing to compare)."""
    union = len(a | b)
    return None if union == 0 else len(a & b) / union
