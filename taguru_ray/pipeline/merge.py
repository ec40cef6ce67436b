"""The `merge` step: every piece's accepted output folded into one extraction.

Pieces arrive in chunk order and merge in that order, so the result never
depends on which completion returned first. Merge is the contract's last
judge: whatever the earlier steps let through that a source file cannot hold
is dropped here and accounted for (reason ``dropped``), and exact repeats fold
into their first occurrence (reason ``duplicate``). Nothing leaves silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from taguru_ray.contract.items import (
    MAX_NAME_BYTES,
    MAX_QUESTION_BYTES,
    MAX_WEIGHT,
    Alias,
    Association,
    Question,
)
from taguru_ray.text.scripts import is_empty_name


class PieceItems(Protocol):
    """What merge reads of one piece: its items as normalised dicts."""

    associations: list[dict[str, Any]]
    aliases: list[dict[str, Any]]
    questions: list[dict[str, Any]]


@dataclass(frozen=True)
class MergeInput:
    piece_id: str
    output: PieceItems


@dataclass(frozen=True)
class Loss:
    """One item a piece's accepted answer held that the source file does not."""

    item: str  # association | alias | question
    reason: str  # dropped | duplicate (removals are validate's and reconcile's)
    rule: str
    raw: dict[str, Any]
    piece_id: str
    paragraph: int | None = None
    kept_piece_id: str | None = None


@dataclass(frozen=True)
class MergeRules:
    paragraph_count: int
    questions_cap: int  # --questions N; 0 = questions were not asked for
    passage: bool  # False under --no-passage: paragraph tags have nothing to cite


@dataclass
class Extraction:
    """The merged truth of a segment, with the piece each kept item came from."""

    associations: list[tuple[Association, str]] = field(default_factory=list)
    aliases: list[tuple[Alias, str]] = field(default_factory=list)
    questions: list[tuple[Question, str]] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)

    def count(self, reason: str) -> int:
        return sum(1 for loss in self.losses if loss.reason == reason)


def merge(pieces: Sequence[MergeInput], rules: MergeRules) -> Extraction:
    result = Extraction()
    _merge_associations(pieces, rules, result)
    _merge_questions(pieces, rules, result)
    names = concept_and_label_names(a for a, _ in result.associations)
    items = ((piece.piece_id, raw) for piece in pieces for raw in piece.output.aliases)
    aliases, losses = merge_aliases(items, *names)
    result.aliases.extend(aliases)
    result.losses.extend(losses)
    return result


def merge_associations(pieces: Sequence[MergeInput], rules: MergeRules) -> list[Association]:
    """The associations merge keeps (aliases never change which): what the commit step
    proposes before the rewire check decides the aliases."""
    result = Extraction()
    _merge_associations(pieces, rules, result)
    return [association for association, _ in result.associations]


def concept_and_label_names(
    associations: Iterable[Association],
) -> tuple[frozenset[str], frozenset[str]]:
    """The concept names (subjects and objects) and labels an alias may settle on."""
    concepts: set[str] = set()
    labels: set[str] = set()
    for association in associations:
        concepts.add(association.subject)
        concepts.add(association.object)
        labels.add(association.label)
    return frozenset(concepts), frozenset(labels)


def _name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    if is_empty_name(trimmed) or len(trimmed.encode("utf-8")) > MAX_NAME_BYTES:
        return None
    return trimmed


def _paragraph(value: Any, rules: MergeRules) -> int | None:
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value < rules.paragraph_count
    ):
        return value
    return None


def _merge_associations(
    pieces: Sequence[MergeInput], rules: MergeRules, result: Extraction
) -> None:
    kept: dict[tuple[str, str, str], str] = {}
    for piece in pieces:
        for raw in piece.output.associations:
            cited = _paragraph(raw.get("paragraph"), rules)
            subject, label, obj = (_name(raw.get(key)) for key in ("subject", "label", "object"))
            weight = raw.get("weight", 1.0)
            weight = 1.0 if weight is None else weight
            rule = None
            if subject is None or label is None or obj is None:
                rule = "a name is missing, empty or over the 1024-byte cap"
            elif (
                isinstance(weight, bool)
                or not isinstance(weight, (int, float))
                or not math.isfinite(weight)
                or weight == 0
                or abs(weight) > MAX_WEIGHT
            ):
                rule = "weight is not a finite non-zero number within ±1000000"
            if rule is not None:
                result.losses.append(
                    Loss("association", "dropped", rule, raw, piece.piece_id, cited)
                )
                continue
            assert subject is not None and label is not None and obj is not None
            triple = (subject, label, obj)
            if triple in kept:
                result.losses.append(
                    Loss(
                        "association",
                        "duplicate",
                        "duplicate triple folded",
                        raw,
                        piece.piece_id,
                        cited,
                        kept_piece_id=kept[triple],
                    )
                )
                continue
            kept[triple] = piece.piece_id
            tag = cited if rules.passage else None
            result.associations.append(
                (Association(subject, label, obj, float(weight), tag), piece.piece_id)
            )


def _merge_questions(pieces: Sequence[MergeInput], rules: MergeRules, result: Extraction) -> None:
    kept: dict[tuple[int, str], str] = {}
    per_paragraph: dict[int, int] = {}
    for piece in pieces:
        for raw in piece.output.questions:
            cited = _paragraph(raw.get("paragraph"), rules)
            text = raw.get("question")
            text = text.strip() if isinstance(text, str) else None
            rule = None
            if rules.questions_cap == 0 or not rules.passage:
                rule = "question volunteered (--questions is off)"
            elif cited is None:
                rule = "question cites no paragraph of the segment"
            elif not text or len(text.encode("utf-8")) > MAX_QUESTION_BYTES:
                rule = "question text is empty or over the 512-byte cap"
            if rule is not None:
                result.losses.append(Loss("question", "dropped", rule, raw, piece.piece_id, cited))
                continue
            assert cited is not None and text is not None
            key = (cited, text)
            if key in kept:
                result.losses.append(
                    Loss(
                        "question",
                        "duplicate",
                        "duplicate question folded",
                        raw,
                        piece.piece_id,
                        cited,
                        kept_piece_id=kept[key],
                    )
                )
                continue
            if per_paragraph.get(cited, 0) >= rules.questions_cap:
                result.losses.append(
                    Loss(
                        "question",
                        "dropped",
                        f"over the --questions cap of {rules.questions_cap} per paragraph",
                        raw,
                        piece.piece_id,
                        cited,
                    )
                )
                continue
            kept[key] = piece.piece_id
            per_paragraph[cited] = per_paragraph.get(cited, 0) + 1
            result.questions.append((Question(cited, text), piece.piece_id))


def merge_aliases(
    items: Iterable[tuple[str, dict[str, Any]]],
    concepts: frozenset[str],
    labels: frozenset[str],
) -> tuple[list[tuple[Alias, str]], list[Loss]]:
    """Adopt an alias only when import would: its canonical is a name this file's
    associations use in that namespace, and its spelling is not itself one.

    `items` are (piece id, alias as answered) in merge order. One function for
    merge and for the claims ledger's commit, so what a segment hands later
    segments is exactly what its source file holds.
    """
    adopted: list[tuple[Alias, str]] = []
    losses: list[Loss] = []
    mapped: dict[tuple[str, str], tuple[str, str]] = {}  # (kind, alias) -> (canonical, piece)
    for piece_id, raw in items:
        alias, canonical, kind = (
            _name(raw.get("alias")),
            _name(raw.get("canonical")),
            raw.get("kind"),
        )
        names = concepts if kind == "concept" else labels
        rule = None
        if alias is None or canonical is None or kind not in ("concept", "label"):
            rule = "alias is missing a spelling, a canonical or a valid kind"
        elif alias == canonical:
            rule = "alias equals its canonical"
        elif canonical not in names:
            rule = f'canonical "{canonical}" names nothing the associations contain'
        elif alias in names:
            rule = f'alias "{alias}" names something the associations already contain'
        elif (kind, alias) in mapped and mapped[(kind, alias)][0] != canonical:
            first = mapped[(kind, alias)][0]
            rule = f'conflicts with an earlier alias mapping "{alias}" to "{first}"'
        if rule is not None:
            losses.append(Loss("alias", "dropped", rule, raw, piece_id))
            continue
        assert alias is not None and canonical is not None
        if (kind, alias) in mapped:
            losses.append(
                Loss(
                    "alias",
                    "duplicate",
                    "duplicate alias folded",
                    raw,
                    piece_id,
                    kept_piece_id=mapped[(kind, alias)][1],
                )
            )
            continue
        mapped[(kind, alias)] = (canonical, piece_id)
        adopted.append((Alias(alias, canonical, kind), piece_id))
    return adopted, losses
