"""The schema's answer checks: ``schema_output_issues`` (taguru ADR 0009 §11.2, CONTRACT.md 5).

With a ``--schema`` document, an answer is also judged against it; a finding
earns its own targeted corrective turn (seed 000), bounded by the same
``TAGURU_EXTRACT_MAX_ATTEMPTS`` as the rest. Three findings, exact texts:

- ``aliases[i].canonical: 'schema:type' is reserved for type assertions (ADR
  0009 §6.3) — rename the alias`` — a label alias whose canonical is the
  reserved label. Whatever the mode: this guards the namespace, not a rule.
- ``associations[i].subject|object: '<name>' must be typed as one of [<T…>]
  (or a subtype, via a schema:type assertion) for relation '<label>', but is
  typed as [<asserted…>]`` — under ``warn``/``strict``, a relation whose
  ``domain``/``range`` the concept's asserted types miss. Both lists name at
  most 8 types, then ``, … (+N more)``; the expected list is the declared set
  as written, the actual one what was asserted (never the ``is_a`` closure).
- ``associations[i].label: '<label>' names no relation declared in this
  context's schema (closed_labels)`` — a label outside ``relations`` when the
  document closes its labels.

Types come from ``schema:type`` associations (subject → type name) across the
outputs judged together: all of them are gathered first, so a type asserted in
a later output licenses a fact in an earlier one. A concept is judged by the
``is_a`` closure of what it was asserted as (a subtype satisfies its parent);
an untyped concept, an unconstrained side and a ``schema:type`` association
itself are never violations. Names are trimmed (``str::trim``) as merge will
store them; indices are each output's own, so they match the answer a
corrective turn replays.

Works on a parsed answer (Stage 1, one answer: ``schema_issues(answer.value,
schema)``) and on a segment's normalised outputs (Stage 2:
`schema_issues_by_output`). An item that is not an object, or a field that
is not a string, is left to the contract checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.context_schema import SCHEMA_TYPE_LABEL, ContextSchema
from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.contract.rust_text import rust_trim

# A concept's asserted set is unbounded, so findings list at most this many names.
MAX_ISSUE_TYPE_NAMES = 8

Output = PieceOutput | Mapping[str, Any]


@dataclass(frozen=True)
class AssertedTypes:
    """One concept's types: what was asserted, and its ``is_a`` closure."""

    asserted: tuple[str, ...]
    expanded: frozenset[str]


def schema_issues(outputs: Output | Sequence[Output], schema: ContextSchema) -> list[str]:
    """The findings for one answer, or for several judged together, in output order."""
    group: list[Output] = [outputs] if isinstance(outputs, PieceOutput | Mapping) else list(outputs)
    return [issue for _, issues in schema_issues_by_output(group, schema) for issue in issues]


def schema_issues_by_output(
    outputs: Sequence[Output], schema: ContextSchema
) -> list[tuple[int, list[str]]]:
    """(output index, its findings) for each output that has any, in order.

    The per-output shape `reconcile` needs: one corrective turn per offending
    output, merged with the Stage 2 alias issues of the same output.
    """
    types = asserted_types(outputs, schema)
    found: list[tuple[int, list[str]]] = []
    for index, output in enumerate(outputs):
        issues = _reserved_aliases(_items(output, "aliases"))
        if schema.enforcing:
            issues += _association_issues(_items(output, "associations"), schema, types)
        if issues:
            found.append((index, issues))
    return found


def asserted_types(outputs: Iterable[Output], schema: ContextSchema) -> dict[str, AssertedTypes]:
    """Every concept some ``schema:type`` association of ``outputs`` types, with its closure."""
    asserted: dict[str, set[str]] = {}
    for output in outputs:
        for _, item in _items(output, "associations"):
            subject, label, object_ = _triple(item)
            if label == SCHEMA_TYPE_LABEL and subject and object_:
                asserted.setdefault(subject, set()).add(object_)
    return {
        concept: AssertedTypes(
            tuple(sorted(names)), frozenset().union(*(schema.closure_of(n) for n in names))
        )
        for concept, names in asserted.items()
    }


def _reserved_aliases(aliases: list[tuple[int, Mapping[str, Any]]]) -> list[str]:
    return [
        f"aliases[{index}].canonical: '{SCHEMA_TYPE_LABEL}' is reserved for type assertions "
        "(ADR 0009 §6.3) — rename the alias"
        for index, item in aliases
        if item.get("kind") == "label" and _text(item.get("canonical")) == SCHEMA_TYPE_LABEL
    ]


def _association_issues(
    associations: list[tuple[int, Mapping[str, Any]]],
    schema: ContextSchema,
    types: Mapping[str, AssertedTypes],
) -> list[str]:
    issues: list[str] = []
    for index, item in associations:
        subject, label, object_ = _triple(item)
        if not label or label == SCHEMA_TYPE_LABEL:
            continue  # a type assertion is never judged
        relation = schema.relations.get(label)
        if relation is None:
            if schema.closed_labels:
                issues.append(
                    f"associations[{index}].label: '{label}' names no relation declared in "
                    "this context's schema (closed_labels)"
                )
            continue
        for side, name, declared in (
            ("subject", subject, relation.domain),
            ("object", object_, relation.range),
        ):
            typed = types.get(name)
            if _violates(declared, typed):
                assert typed is not None
                issues.append(
                    f"associations[{index}].{side}: {_finding(name, declared, label, typed)}"
                )
    return issues


def _violates(declared: tuple[str, ...], typed: AssertedTypes | None) -> bool:
    """Declared non-empty, the concept typed, and no declared type in its closure."""
    return bool(declared) and typed is not None and typed.expanded.isdisjoint(declared)


def _finding(name: str, declared: tuple[str, ...], label: str, typed: AssertedTypes) -> str:
    return (
        f"'{name}' must be typed as one of [{_capped(declared)}] (or a subtype, via a "
        f"{SCHEMA_TYPE_LABEL} assertion) for relation '{label}', but is typed as "
        f"[{_capped(typed.asserted)}]"
    )


def _capped(names: Sequence[str]) -> str:
    if len(names) <= MAX_ISSUE_TYPE_NAMES:
        return ", ".join(names)
    shown = ", ".join(names[:MAX_ISSUE_TYPE_NAMES])
    return f"{shown}, … (+{len(names) - MAX_ISSUE_TYPE_NAMES} more)"


# -- reading either shape: a PieceOutput, or a raw answer object -------------


def _items(output: Output, collection: str) -> list[tuple[int, Mapping[str, Any]]]:
    """(index, item) for each object element; indices count every element."""
    if isinstance(output, PieceOutput):
        items: Any = getattr(output, collection)
    else:
        items = output.get(collection)
    if not isinstance(items, list):
        return []
    return [(index, item) for index, item in enumerate(items) if isinstance(item, Mapping)]


def _triple(item: Mapping[str, Any]) -> tuple[str, str, str]:
    return _text(item.get("subject")), _text(item.get("label")), _text(item.get("object"))


def _text(value: Any) -> str:
    return rust_trim(value) if isinstance(value, str) else ""
