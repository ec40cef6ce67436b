"""The `validate` step's mechanical pass (taguru ADR 0013): removal before correction.

Items that could never import as answered are removed here, deterministically
and with accounting, instead of spending corrective turns that measurably fix
nothing: a non-object element, a required field missing or empty, an alias
mapping a spelling to itself, a single-character label, a name holding a
control or bidi character (NUL, an ANSI escape, U+202E: never a name, and
written verbatim it would reach a terminal or reorder a reader's view), a
spelling written in another language's ideographs (taguru ADR 0039), a subject or
object the segment never states (taguru ADR 0013 §4, taguru ADR 0036). What removal
cannot judge — a present but wrong-typed, oversized or out-of-range value — stays an
issue for the corrective turn. If any issue remains, the whole answer goes back and
these removals are discarded with it; otherwise it is accepted with them recorded.

Under ``--lossy`` nothing is corrected or removed: `lossy_pass` drops every
element with an issue as a counted ``dropped`` loss instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.contract.rust_text import describe, quote_for_issue, rust_trim
from taguru_ray.pipeline.validate import COLLECTIONS, Rules, item_issues, normalise
from taguru_ray.text.occurrence import Haystack, fold, name_occurs, occurrence_reason
from taguru_ray.text.redact import contains_placeholder
from taguru_ray.text.scripts import (
    foreign_ideographs,
    foreign_reason,
    hidden_characters,
    hidden_reason,
    is_empty_name,
)

Item = Any


@dataclass(frozen=True)
class Removal:
    """One item taken out of an answer: its address, why, and the item as written."""

    path: str
    reason: str
    item: Item = None

    @property
    def text(self) -> str:
        """``<path>: <reason>`` — the stderr, report and `removed_items` form."""
        return f"{self.path}: {self.reason}"

    @property
    def kind(self) -> str:
        """The source-file item kind the path names."""
        if self.path.startswith("associations"):
            return "association"
        return "question" if self.path.startswith("questions") else "alias"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "item": self.item}

    @staticmethod
    def from_json(data: Any) -> Removal:
        """Reads the checkpoint's shape, and the older plain ``"<path>: <reason>"`` string."""
        if isinstance(data, str):
            path, _, reason = data.partition(": ")
            return Removal(path, reason)
        return Removal(str(data.get("path", "")), str(data.get("reason", "")), data.get("item"))


@dataclass(frozen=True)
class Offered:
    """What the prompt itself offered: spellings that never fail the occurrence check."""

    allowlist: frozenset[str] = frozenset()  # folded spellings

    def allows(self, name: str) -> bool:
        return fold(name) in self.allowlist


@dataclass
class Judgement:
    """The mechanical pass's verdict on one parsed answer."""

    kept: dict[str, list[Item]] = field(default_factory=dict)
    removals: list[Removal] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)

    def output(self, rules: Rules) -> PieceOutput:
        return normalise(self.kept, rules)


def judge(
    value: Mapping[str, Any], rules: Rules, haystack: Haystack, offered: Offered
) -> Judgement:
    """Stage 1 in strict mode: removals and the issues left for a corrective turn."""
    judgement = Judgement()
    for collection in COLLECTIONS:
        items = value.get(collection)
        kept: list[Item] = []
        judgement.kept[collection] = kept
        if items is None:
            continue
        if not isinstance(items, list):
            if collection != "questions" or rules.questions_cap > 0:
                judgement.issues.append(f"{collection}: expected an array, got {describe(items)}")
            continue
        for index, item in enumerate(items):
            path = f"{collection}[{index}]"
            if collection == "associations":
                keep = _association(path, index, item, rules, haystack, offered, judgement)
            elif collection == "aliases":
                keep = _alias(path, index, item, rules, haystack, judgement)
            else:
                keep = True
                if rules.questions_cap > 0:  # questions have no mechanical rule
                    judgement.issues.extend(item_issues(collection, index, item, rules))
            if keep:
                kept.append(item)
    return judgement


def placeholder_reason(fields: list[tuple[str, str]]) -> str:
    """``subject "«redacted email 3f9a»" is a redaction placeholder, not an entity``
    (taguru ADR 0038), naming each field that holds one."""
    return ", ".join(
        f"{field} {quote_for_issue(name)} is a redaction placeholder, not an entity"
        for field, name in fields
        if contains_placeholder(name)
    )


def _absent(item: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    """Required fields mechanically absent: missing (or null) or a string a reader sees
    nothing of (White_Space and invisible characters only)."""
    absent = []
    for key in keys:
        value = item.get(key)
        if value is None:
            absent.append(f"{key} missing")
        elif isinstance(value, str) and is_empty_name(value):
            absent.append(f"{key} empty")
    return absent


def _association(
    path: str,
    index: int,
    item: Item,
    rules: Rules,
    haystack: Haystack,
    offered: Offered,
    judgement: Judgement,
) -> bool:
    if not isinstance(item, dict):
        judgement.removals.append(Removal(path, f"expected an object, got {describe(item)}", item))
        return False
    absent = _absent(item, ("subject", "label", "object"))
    if absent:
        judgement.removals.append(Removal(path, ", ".join(absent), item))
        return False
    issues = item_issues("associations", index, item, rules)
    if issues:
        judgement.issues.extend(issues)
        return True
    subject, label, obj = (rust_trim(item[key]) for key in ("subject", "label", "object"))
    hidden = _hidden((("subject", subject), ("label", label), ("object", obj)))
    if hidden:
        judgement.removals.append(Removal(path, hidden_reason(hidden), item))
        return False
    masked = [(name, spelling) for name, spelling in (("subject", subject), ("object", obj))]
    if any(contains_placeholder(spelling) for _, spelling in masked):
        judgement.removals.append(Removal(path, placeholder_reason(masked), item))
        return False
    if len(label) < 2:
        reason = (
            f"label {quote_for_issue(label)} is a single character — too generic to be a relation"
        )
        judgement.removals.append(Removal(path, reason, item))
        return False
    foreign = [
        (name, spelling, chars)
        for name, spelling, checked in (
            ("label", label, True),
            ("subject", subject, not offered.allows(subject)),
            ("object", obj, not offered.allows(obj)),
        )
        if checked and (chars := foreign_ideographs(spelling, haystack))
    ]
    if foreign:
        judgement.removals.append(Removal(path, foreign_reason(foreign), item))
        return False
    unattested = [
        (name, spelling)
        for name, spelling in (("subject", subject), ("object", obj))
        if not offered.allows(spelling) and not name_occurs(spelling, haystack)
    ]
    if unattested:
        judgement.removals.append(Removal(path, occurrence_reason(unattested), item))
        return False
    return True


def _alias(
    path: str, index: int, item: Item, rules: Rules, haystack: Haystack, judgement: Judgement
) -> bool:
    if not isinstance(item, dict):
        judgement.removals.append(Removal(path, f"expected an object, got {describe(item)}", item))
        return False
    absent = _absent(item, ("alias", "canonical", "kind"))
    if absent:
        judgement.removals.append(Removal(path, ", ".join(absent), item))
        return False
    spelling, canonical = item.get("alias"), item.get("canonical")
    both = isinstance(spelling, str) and isinstance(canonical, str)
    if both and rust_trim(spelling) == rust_trim(canonical):
        judgement.removals.append(Removal(path, "alias equals its canonical", item))
        return False
    named = [
        (key, rust_trim(item[key])) for key in ("alias", "canonical") if isinstance(item[key], str)
    ]
    hidden = _hidden(named)
    if hidden:
        judgement.removals.append(Removal(path, hidden_reason(hidden), item))
        return False
    if any(contains_placeholder(spelling) for _, spelling in named):
        judgement.removals.append(Removal(path, placeholder_reason(named), item))
        return False
    if isinstance(spelling, str):
        chars = foreign_ideographs(rust_trim(spelling), haystack)
        if chars:
            reason = foreign_reason([("alias", rust_trim(spelling), chars)])
            judgement.removals.append(Removal(path, reason, item))
            return False
    judgement.issues.extend(item_issues("aliases", index, item, rules))
    return True


def lossy_pass(value: Mapping[str, Any], rules: Rules) -> tuple[PieceOutput, list[Removal]]:
    """``--lossy``: every element with an issue is dropped and counted, nothing corrected.

    Volunteered questions are left for merge, which drops them by policy.
    """
    kept: dict[str, list[Item]] = {}
    dropped: list[Removal] = []
    for collection in COLLECTIONS:
        items = value.get(collection)
        kept[collection] = []
        if not isinstance(items, list):
            continue
        judged = collection != "questions" or rules.questions_cap > 0
        for index, item in enumerate(items):
            issues = item_issues(collection, index, item, rules) if judged else []
            if not judged and not isinstance(item, dict):
                issues = [f"{collection}[{index}]: expected an object, got {describe(item)}"]
            if not issues and collection != "questions" and isinstance(item, dict):
                hidden = _hidden(
                    (key, rust_trim(value))
                    for key, value in item.items()
                    if key in NAME_KEYS and isinstance(value, str)
                )
                issues = [f"{collection}[{index}]: {hidden_reason(hidden)}"] if hidden else []
            if issues:
                path = f"{collection}[{index}]"
                findings = [_finding(issue, path) for issue in issues]
                dropped.append(Removal(path, "; ".join(findings), item))
                continue
            kept[collection].append(item)
    return normalise(kept, rules), dropped


NAME_KEYS = ("subject", "label", "object", "alias", "canonical")


def _hidden(named: Iterable[tuple[str, str]]) -> list[tuple[str, str, list[str]]]:
    return [(key, name, codes) for key, name in named if (codes := hidden_characters(name))]


def _finding(issue: str, path: str) -> str:
    """An issue relative to its element: ``aliases[2].kind: …`` → ``kind: …``."""
    rest = issue.removeprefix(path)
    return rest.removeprefix(".").removeprefix(": ")
