"""Stage 2 alias checks: what only the whole segment's outputs can judge.

CONTRACT.md section 5, Stage 2. Run by `reconcile` once every piece of a
segment has answered, over the pieces' normalised outputs in chunk order (so
Stage 1 is already clean: every name trimmed, kinds valid):

- shadowing — ``aliases[i].alias: names something the associations already
  contain``: the alias spelling is itself a name of its namespace;
- conflict — ``aliases[i]: conflicts with an earlier alias mapping "<a>" to
  "<c>"``: a spelling already mapped (earlier in this output or an earlier
  one) to another canonical; the later output is blamed; an identical repeat
  is merge's duplicate fold, not a conflict;
- dangling — the canonical names nothing the segment's associations use in its
  namespace (concepts = subjects + objects, labels = labels). Under taguru ADR 0013
  that is no corrective issue but a prune after the corrective turns
  (``dangling_aliases``); ``dangling_issues=True`` also reports it as the older
  corrective issue ``aliases[i].canonical: names nothing the associations
  contain``, for a reconcile that asks about it first.

Item indices are the output's own, so they match the answer a corrective turn
replays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.contract.rust_text import debug_str


@dataclass(frozen=True)
class _Names:
    concept: frozenset[str]
    label: frozenset[str]

    @classmethod
    def of(cls, outputs: Sequence[PieceOutput]) -> _Names:
        associations = [item for output in outputs for item in output.associations]
        concepts = {item.get(key) for item in associations for key in ("subject", "object")}
        labels = {item.get("label") for item in associations}
        return cls(frozenset(concepts - {None}), frozenset(labels - {None}))

    def of_kind(self, kind: str) -> frozenset[str]:
        return self.concept if kind == "concept" else self.label


@dataclass(frozen=True)
class DanglingAlias:
    """An alias whose canonical resolves to nothing: pruned with accounting."""

    output_index: int
    alias_index: int
    canonical: str

    @property
    def path(self) -> str:
        return f"aliases[{self.alias_index}]"

    @property
    def reason(self) -> str:
        return f"canonical {debug_str(self.canonical)} names nothing the associations contain"

    @property
    def record(self) -> str:
        """The ``<path>: <reason>`` line stderr and ``removed_items`` show."""
        return f"{self.path}: {self.reason}"


def cross_output_issues(
    outputs: Sequence[PieceOutput], *, dangling_issues: bool = False
) -> list[tuple[int, list[str]]]:
    """(output index, its Stage 2 issues) for each output that has any, in order."""
    names = _Names.of(outputs)
    registry: dict[tuple[str, str], str] = {}  # (kind, alias) -> first canonical
    found: list[tuple[int, list[str]]] = []
    for output_index, output in enumerate(outputs):
        issues: list[str] = []
        for alias_index, item in enumerate(output.aliases):
            issue = _alias_issue(item, f"aliases[{alias_index}]", names, registry, dangling_issues)
            if issue is not None:
                issues.append(issue)
        if issues:
            found.append((output_index, issues))
    return found


def cross_item_issues(output: PieceOutput, *, dangling_issues: bool = False) -> list[str]:
    """Stage 2 issues of one output judged alone (a one-chunk segment)."""
    found = cross_output_issues([output], dangling_issues=dangling_issues)
    return found[0][1] if found else []


def dangling_aliases(outputs: Sequence[PieceOutput]) -> list[DanglingAlias]:
    """Every alias whose canonical names nothing the segment's associations contain."""
    names = _Names.of(outputs)
    dangling: list[DanglingAlias] = []
    for output_index, output in enumerate(outputs):
        for alias_index, item in enumerate(output.aliases):
            alias, canonical, kind = _fields(item)
            if alias is None or canonical is None or kind is None or alias == canonical:
                continue  # Stage 1's to judge
            if canonical not in names.of_kind(kind):
                dangling.append(DanglingAlias(output_index, alias_index, canonical))
    return dangling


def _alias_issue(
    item: Mapping[str, Any],
    path: str,
    names: _Names,
    registry: dict[tuple[str, str], str],
    dangling_issues: bool,
) -> str | None:
    alias, canonical, kind = _fields(item)
    if alias is None or canonical is None or kind is None or alias == canonical:
        return None  # Stage 1 already names these
    known = names.of_kind(kind)
    if alias in known:
        return f"{path}.alias: names something the associations already contain"
    if canonical not in known:
        return (
            f"{path}.canonical: names nothing the associations contain" if dangling_issues else None
        )
    first = registry.setdefault((kind, alias), canonical)
    if first != canonical:
        mapping = f"{debug_str(alias)} to {debug_str(first)}"
        return f"{path}: conflicts with an earlier alias mapping {mapping}"
    return None


def _fields(item: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    return item.get("alias"), item.get("canonical"), item.get("kind")
