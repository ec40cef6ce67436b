"""The `reconcile` step's judgements: Stage 2, once per segment, after every chunk answered.

Shadowing and conflicting aliases can only be judged across the segment's
outputs. Each offending output earns one corrective turn (the engine spends
it); whatever the turn leaves standing is removed here with accounting (taguru ADR
0022): an alias records a spelling, never a fact, so losing one costs what the
consolidation audit can propose later, while failing the segment over it cost
every fact it held. A standing issue about anything but an alias fails the
segment — a --schema domain/range or closed-labels finding among them. Then
two mechanical prunes no model could fix: an alias whose
canonical names nothing the associations contain (taguru ADR 0013 Stage 2), and one
that would rewire a spelling an earlier segment claimed. Item paths index
each output's own aliases, as the corrective turn's replayed answer does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.context_schema import ContextSchema
from taguru_ray.contract.items import Association
from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.pipeline.claims import AliasItem, Proposal, rewire_reason
from taguru_ray.pipeline.cross_items import cross_output_issues, dangling_aliases
from taguru_ray.pipeline.mechanical import Removal
from taguru_ray.pipeline.merge import MergeInput, MergeRules, merge_associations
from taguru_ray.pipeline.plan import Piece
from taguru_ray.pipeline.schema_check import schema_issues_by_output
from taguru_ray.pipeline.steer import Contribution

STILL_STANDING = " — still so after the corrective turn; removed"


@dataclass
class PieceState:
    """One accepted piece, as merge will read it, with its accounting so far."""

    piece: Piece
    output: PieceOutput
    attempt: dict[str, Any] | None
    answer: str
    user: str
    removed: list[Removal] = field(default_factory=list)  # Stage 1, then Stage 2 prunes
    dropped: list[Removal] = field(default_factory=list)  # --lossy parse-time drops
    reused: bool = False

    @property
    def piece_id(self) -> str:
        return self.piece.sha256

    @property
    def chunk_index(self) -> int:
        return self.piece.index

    def drop_aliases(self, doomed: list[tuple[int, Removal]]) -> None:
        """Remove aliases by their current index; record the removals in the order given."""
        gone = {index for index, _ in doomed}
        aliases = [item for index, item in enumerate(self.output.aliases) if index not in gone]
        self.output = dataclasses.replace(self.output, aliases=aliases)
        self.removed.extend(removal for _, removal in doomed)


class StandingIssue(Exception):
    """A Stage 2 issue about something other than an alias survived its corrective turn."""

    def __init__(self, piece: PieceState, issues: list[str]) -> None:
        super().__init__("; ".join(issues))
        self.piece = piece
        self.issues = issues


def stage2_issues(
    pieces: Sequence[PieceState], schema: ContextSchema | None = None
) -> list[tuple[int, list[str]]]:
    """(piece index, issues) for every piece whose aliases clash across the segment,
    or (under --schema) whose answer the schema refuses; alias issues first."""
    outputs = [piece.output for piece in pieces]
    found: dict[int, list[str]] = {}
    for index, issues in cross_output_issues(outputs):
        found.setdefault(index, []).extend(issues)
    if schema is not None:
        for index, issues in schema_issues_by_output(outputs, schema):
            found.setdefault(index, []).extend(issues)
    return sorted(found.items())


def alias_index(issue: str) -> int | None:
    """The alias an issue path names (``aliases[3].alias: …``, ``aliases[3]: …``), if any."""
    if not issue.startswith("aliases["):
        return None
    digits = issue[len("aliases[") :].split("]", 1)[0]
    return int(digits) if digits.isdigit() else None


def prune_standing(pieces: Sequence[PieceState], found: list[tuple[int, list[str]]]) -> None:
    """Remove the alias issues the corrective turn left standing; raise on any other."""
    for piece_index, issues in found:
        piece = pieces[piece_index]
        others = [issue for issue in issues if alias_index(issue) is None]
        if others:
            raise StandingIssue(piece, others)
        doomed: dict[int, str] = {}
        for issue in issues:
            index = alias_index(issue)
            assert index is not None
            doomed.setdefault(index, issue)
        # Recorded highest index first, as the reference does.
        removals = []
        for index in sorted(doomed, reverse=True):
            if index < len(piece.output.aliases):
                path, _, finding = doomed[index].partition(": ")
                item = piece.output.aliases[index]
                removals.append((index, Removal(path, finding + STILL_STANDING, item)))
        piece.drop_aliases(removals)


def prune_dangling(pieces: Sequence[PieceState]) -> None:
    """Remove every alias whose canonical names nothing the associations contain."""
    found = dangling_aliases([piece.output for piece in pieces])
    for piece_index, piece in enumerate(pieces):
        piece.drop_aliases(
            [
                (d.alias_index, Removal(d.path, d.reason, piece.output.aliases[d.alias_index]))
                for d in found
                if d.output_index == piece_index
            ]
        )


def proposal_of(
    pieces: Sequence[PieceState], rules: MergeRules, merged: Iterable[Association] | None = None
) -> Proposal:
    """What the segment brings to its commit turn (`claims.judge`); `merged`: the
    associations merge keeps, when the caller has merged already."""
    if merged is None:
        inputs = [MergeInput(piece.piece_id, piece.output) for piece in pieces]
        merged = merge_associations(inputs, rules)
    return Proposal(
        Contribution.of_associations(merged),
        tuple(
            AliasItem(position, index, piece.piece_id, item)
            for position, piece in enumerate(pieces)
            for index, item in enumerate(piece.output.aliases)
        ),
    )


def prune_claimed(pieces: Sequence[PieceState], pruned: Sequence[tuple[int, int]]) -> None:
    """Remove the aliases the commit turn found would route a claimed spelling elsewhere."""
    doomed: dict[int, list[int]] = {}
    for position, index in pruned:
        doomed.setdefault(position, []).append(index)
    for position, indexes in sorted(doomed.items()):
        piece = pieces[position]
        removals = []
        for index in sorted(indexes):
            item = piece.output.aliases[index]
            reason = rewire_reason(item["alias"], item["kind"])
            removals.append((index, Removal(f"aliases[{index}]", reason, item)))
        piece.drop_aliases(removals)
