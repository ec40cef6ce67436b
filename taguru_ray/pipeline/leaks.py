"""The answer scan under --redact (taguru ADR 0038): what the masked text never showed.

The segment reached the model with every match masked, so a label or a
question that still carries a rule's shape came from somewhere else — the
model's own knowledge, a guess at what the placeholder hid — and must not be
written. Subjects, objects and aliases need no scan here: they pass the
occurrence check against the masked text, and one that is a placeholder is
removed as not an entity. Each finding names the source-file line and the
rule, never the matched text.
"""

from __future__ import annotations

from collections.abc import Sequence

from taguru_ray.contract.records import Record
from taguru_ray.text.redact import Rule, scan_answer_text

# The fields of each item kind a rule may not match, in the order they are reported.
_SCANNED = {
    "question": ("question",),
    "association": ("label", "subject", "object"),
    "concept": ("alias", "canonical"),
    "label": ("alias", "canonical"),
}


def answer_leaks(items: Sequence[Record], rules: Sequence[Rule], first_line: int) -> list[str]:
    """One finding per offending item; `first_line` is the 1-based line of the first item."""
    if not rules:
        return []
    findings = []
    for offset, item in enumerate(items):
        kind = item["item"]
        for key in _SCANNED.get(kind, ()):
            hits = scan_answer_text(str(item.get(key, "")), rules)
            if hits:
                findings.append(
                    f"source-file line {first_line + offset}: the {kind}'s {key} carries what "
                    f"the redaction masks (rule {', '.join(hits)})"
                )
                break
    return findings
