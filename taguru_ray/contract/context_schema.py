"""The context schema document behind ``--schema FILE`` (taguru ADR 0009; seed 000).

Not the ``--structured-output json-schema`` wire format: this is Taguru's own
description of what entity types and relations mean in the target context —
the document ``{stem}.schema.json`` and ``PUT /contexts/{id}/schema`` hold.
Extract is offline, so the operator hands it the file; one that does not
parse or does not pass the install checks is a startup error, never a silent
skip (an empty schema would read as ``mode: off`` and disable the checks).

The document (the reference's ``SchemaDocument``, version 1)::

    {"schema": 1, "mode": "off" | "warn" | "strict", "closed_labels": bool,
     "types": {"<type>": {"is_a": ["<parent type>", ...]}, ...},
     "relations": {"<label>": {"domain": ["<type>", ...], "range": [...]}, ...}}

Every top-level field is required and no object takes an unknown field; a
type's ``is_a`` and a relation's ``domain``/``range`` may be left out (empty).
Lists are sets: repeats fold, order is irrelevant. Names are never trimmed.

Install checks, in the reference's order: version 1; at most 500 types and 500
relations; no relation named ``schema:type`` (reserved for type assertions,
taguru ADR 0009 §6.3 guard 3); every name (type, label, parent, domain/range entry)
at most 1024 bytes; a domain or range names at most 64 types; ``is_a`` has no
cycle and stacks at most 8 types. A type *referenced* but not declared is
legal (taguru ADR 0009 §6.2): it is its own one-type closure, never an error.
Stricter than the reference in one place: a JSON object repeating a key is
refused (serde would silently keep the last value).

``schema_digest`` is the manifest's ``schema_digest`` (CONTRACT.md section 2):
sha256 of the reference's canonical bytes — ``serde_json::to_vec_pretty`` of
the document, keys in byte order, sets sorted, 2-space indent, ``": "``,
non-ASCII raw, no final newline — so two files naming the same document in a
different key order or layout fingerprint alike.

The prompt block (taguru ADR 0009 §11.1) and the trace's ``steering.schema`` come
from one computation, `schema_offer`, so record and prompt cannot drift.

Its length (over 400 lines) is one document's: reading, checking and offering
a schema must agree on every rule of the reference's format.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.items import MAX_NAME_BYTES
from taguru_ray.contract.rust_text import describe, quote_for_issue, utf8_len

SCHEMA_VERSION = 1
SCHEMA_TYPE_LABEL = "schema:type"
MODES = ("off", "warn", "strict")
MAX_SCHEMA_TYPES = 500
MAX_SCHEMA_RELATIONS = 500
MAX_RELATION_TYPES = 64
MAX_TYPE_DEPTH = 8
# Each prompted list (types, relations) is capped like the label block.
PROMPT_LIST_CAP = 200
# The default byte budget of the whole prompted block.
SCHEMA_BLOCK_BYTES = 8 * 1024

_FIELDS = ("schema", "mode", "closed_labels", "types", "relations")
_FIELD_LIST = ", ".join(_FIELDS)


class SchemaError(ValueError):
    """A ``--schema`` document that cannot be used: ``<path>: <what is wrong>``."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


class _Invalid(Exception):
    """A refusal found inside the document; `load_schema` adds the path."""


@dataclass(frozen=True)
class Relation:
    """A declared relation label: the types allowed on each side (empty = unconstrained)."""

    domain: tuple[str, ...] = ()
    range: tuple[str, ...] = ()

    @property
    def constrained(self) -> bool:
        return bool(self.domain or self.range)


@dataclass(frozen=True)
class ContextSchema:
    """An installed document: its fields plus each declared type's ``is_a`` ancestors.

    ``types`` maps a declared type to its direct parents; ``relations`` a label
    to its `Relation`; both in name order. ``ancestors`` is the transitive
    ``is_a`` closure of every declared type, itself excluded.
    """

    mode: str
    closed_labels: bool
    types: Mapping[str, tuple[str, ...]]
    relations: Mapping[str, Relation]
    ancestors: Mapping[str, frozenset[str]] = field(default_factory=dict)
    version: int = SCHEMA_VERSION

    @property
    def enforcing(self) -> bool:
        """``warn``/``strict``: the prompt carries the block and answers are judged."""
        return self.mode != "off"

    def closure_of(self, type_name: str) -> frozenset[str]:
        """The type and every ancestor ``is_a`` reaches; an undeclared type is itself alone."""
        return self.ancestors.get(type_name, frozenset()) | {type_name}

    def subtypes_of(self, type_name: str) -> frozenset[str]:
        """Every declared type whose closure holds ``type_name`` (itself excluded)."""
        return frozenset(t for t, up in self.ancestors.items() if type_name in up)


# ---------------------------------------------------------------------- load


def load_schema(data: bytes, *, path: str) -> ContextSchema:
    """Parse and install a ``--schema`` document, or raise `SchemaError` naming ``path``."""
    try:
        value = _parse_json(data)
        return _install(_document(value))
    except _Invalid as refusal:
        raise SchemaError(path, str(refusal)) from None


def _parse_json(data: bytes) -> Any:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _Invalid(
            f"not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise _Invalid(
            f"does not parse as JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"the key {quote_for_issue(key)} appears twice in one object")
        result[key] = value
    return result


def _no_constant(constant: str) -> Any:
    raise _Invalid(f"does not parse as JSON: {constant} is not a JSON number")


@dataclass(frozen=True)
class _Document:
    version: int
    mode: str
    closed_labels: bool
    types: dict[str, tuple[str, ...]]
    relations: dict[str, Relation]


def _document(value: Any) -> _Document:
    """The document's shape (serde's reading: required fields, no unknown ones)."""
    if not isinstance(value, dict):
        raise _Invalid(f"a schema document is a JSON object, got {describe(value)}")
    _only(value, _FIELDS, "the document")
    for key in _FIELDS:
        if key not in value:
            raise _Invalid(
                f"missing field {quote_for_issue(key)} — every top-level field is required "
                f"({_FIELD_LIST}), so a partial document is never read as mode off"
            )
    version = value["schema"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise _Invalid(f"schema: expected a version number, got {describe(version)}")
    mode = value["mode"]
    if mode not in MODES or not isinstance(mode, str):
        raise _Invalid(f'mode: expected "off", "warn" or "strict", got {describe(mode)}')
    closed = value["closed_labels"]
    if not isinstance(closed, bool):
        raise _Invalid(f"closed_labels: expected true or false, got {describe(closed)}")
    types = {name: _type(name, body) for name, body in _object(value, "types").items()}
    relations = {
        label: _relation(label, body) for label, body in _object(value, "relations").items()
    }
    return _Document(version, mode, closed, _sorted(types), _sorted(relations))


def _object(value: dict[str, Any], key: str) -> dict[str, Any]:
    found = value[key]
    if not isinstance(found, dict):
        raise _Invalid(f"{key}: expected an object keyed by name, got {describe(found)}")
    for name in found:
        _check_string(name, key)
    return found


def _type(name: str, body: Any) -> tuple[str, ...]:
    where = f"types[{quote_for_issue(name)}]"
    if not isinstance(body, dict):
        raise _Invalid(f'{where}: expected an object such as {{"is_a": []}}, got {describe(body)}')
    _only(body, ("is_a",), where)
    return _names(body.get("is_a", []), f"{where}.is_a")


def _relation(label: str, body: Any) -> Relation:
    where = f"relations[{quote_for_issue(label)}]"
    if not isinstance(body, dict):
        raise _Invalid(f"{where}: expected an object with domain/range, got {describe(body)}")
    _only(body, ("domain", "range"), where)
    domain = _names(body.get("domain", []), f"{where}.domain")
    return Relation(domain, _names(body.get("range", []), f"{where}.range"))


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"{where}: expected an array of type names, got {describe(value)}")
    for item in value:
        if not isinstance(item, str):
            raise _Invalid(f"{where}: expected an array of type names, holding {describe(item)}")
        _check_string(item, where)
    return tuple(sorted(set(value)))


def _check_string(text: str, where: str) -> None:
    if any("\ud800" <= char <= "\udfff" for char in text):
        raise _Invalid(f"{where}: a lone surrogate escape is not UTF-8")


def _only(value: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in value:
        if key not in allowed:
            fields = ", ".join(allowed)
            raise _Invalid(f"{where}: unknown field {quote_for_issue(key)} (it takes {fields})")


def _sorted(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: mapping[key] for key in sorted(mapping)}


# ------------------------------------------------------------------- install


def _install(document: _Document) -> ContextSchema:
    """``schema::install``'s checks, in its order, then the ``is_a`` closures."""
    if document.version != SCHEMA_VERSION:
        raise _Invalid(
            f"schema version {document.version} is not {SCHEMA_VERSION}, the only version "
            "this build reads"
        )
    _check_counts(document)
    if SCHEMA_TYPE_LABEL in document.relations:
        raise _Invalid(
            f"relation '{SCHEMA_TYPE_LABEL}' is reserved for type assertions (ADR 0009 §6.3) "
            "— rename the relation"
        )
    for name in _every_name(document):
        if utf8_len(name) > MAX_NAME_BYTES:
            raise _Invalid(
                f"{quote_for_issue(name)} is {utf8_len(name)} bytes, over the "
                f"{MAX_NAME_BYTES}-byte name cap"
            )
    for label, relation in document.relations.items():
        for side, names in (("domain", relation.domain), ("range", relation.range)):
            if len(names) > MAX_RELATION_TYPES:
                raise _Invalid(
                    f"relation '{label}' names {len(names)} {side} types, over the "
                    f"{MAX_RELATION_TYPES}-type cap"
                )
    return ContextSchema(
        mode=document.mode,
        closed_labels=document.closed_labels,
        types=document.types,
        relations=document.relations,
        ancestors=_ancestors(document.types),
        version=document.version,
    )


def _check_counts(document: _Document) -> None:
    if len(document.types) > MAX_SCHEMA_TYPES:
        raise _Invalid(f"{len(document.types)} types, over the {MAX_SCHEMA_TYPES}-type cap")
    if len(document.relations) > MAX_SCHEMA_RELATIONS:
        raise _Invalid(
            f"{len(document.relations)} relations, over the {MAX_SCHEMA_RELATIONS}-relation cap"
        )


def _every_name(document: _Document) -> Iterable[str]:
    yield from document.types
    yield from document.relations
    for parents in document.types.values():
        yield from parents
    for relation in document.relations.values():
        yield from relation.domain
        yield from relation.range


def _ancestors(types: Mapping[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
    """Every declared type's transitive parents; refuses a cycle or a chain over 8 types.

    A parent that is not declared is a leaf ancestor with nothing above it. A
    cycle names the type the walk met twice; an over-deep chain names its top
    (the type the walk started from), however the cap was hit.
    """
    settled: dict[str, tuple[int, frozenset[str]]] = {}

    def walk(name: str, visiting: list[str]) -> tuple[int, frozenset[str]]:
        if name in settled:
            return settled[name]
        if name in visiting:
            raise _Invalid(f"type '{name}' reaches itself through its is_a chain (a cycle)")
        if len(visiting) >= MAX_TYPE_DEPTH:
            raise _Invalid(_too_deep(visiting[0]))
        visiting.append(name)
        depth, found = 1, set(types[name])
        for parent in types[name]:
            if parent in types:
                parent_depth, above = walk(parent, visiting)
                depth, found = max(depth, parent_depth + 1), found | above
        visiting.pop()
        if depth > MAX_TYPE_DEPTH:
            raise _Invalid(_too_deep(visiting[0] if visiting else name))
        settled[name] = (depth, frozenset(found))
        return settled[name]

    for name in types:
        walk(name, [])
    return {name: settled[name][1] for name in types}


def _too_deep(top: str) -> str:
    return f"the is_a chain under type '{top}' stacks more than {MAX_TYPE_DEPTH} types"


# -------------------------------------------------------------------- digest


def canonical_bytes(schema: ContextSchema) -> bytes:
    """The reference's ``document_bytes``: ``serde_json::to_vec_pretty`` of the document."""
    document = {
        "schema": schema.version,
        "mode": schema.mode,
        "closed_labels": schema.closed_labels,
        "types": {name: {"is_a": list(schema.types[name])} for name in sorted(schema.types)},
        "relations": {
            label: {"domain": list(relation.domain), "range": list(relation.range)}
            for label, relation in sorted(schema.relations.items())
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8")


def schema_digest(schema: ContextSchema) -> str:
    """The manifest's ``schema_digest``: sha256 hex of `canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(schema)).hexdigest()


def schema_type_names(schema: ContextSchema) -> frozenset[str]:
    """Every type the document names: declared, a parent, or a domain/range entry."""
    names = set(schema.types)
    for parents in schema.types.values():
        names.update(parents)
    for relation in schema.relations.values():
        names.update(relation.domain)
        names.update(relation.range)
    return frozenset(names)


# ------------------------------------------------------------ prompt + trace


@dataclass(frozen=True)
class SchemaOffer:
    """What the schema block prompts: type names and relation labels, in prompt order."""

    types: tuple[str, ...]
    relations: tuple[str, ...]
    text: str

    def to_json(self) -> dict[str, list[str]]:
        """The trace ``steering`` record's ``schema`` (taguru ADR 0027)."""
        return {"types": list(self.types), "constrained_relations": list(self.relations)}


def schema_offer(
    schema: ContextSchema,
    live_labels: Iterable[str] = (),
    cap_bytes: int = SCHEMA_BLOCK_BYTES,
) -> SchemaOffer | None:
    """The block taguru ADR 0009 §11.1 adds to the system prompt, or None when none is prompted.

    None under ``mode: off`` and when nothing fits or nothing is worth saying
    (no types, no constrained relation). Types in name order; relations with
    a domain or range (under ``closed_labels`` every declared relation, since
    only those are accepted) — the run's live labels first, then by name.
    Each list is capped at `PROMPT_LIST_CAP`; the whole block at ``cap_bytes``
    UTF-8 bytes, filled types first, then relations, each as the longest
    prefix that fits. Never a JSON-Schema enum: a new relation stays possible.
    """
    if not schema.enforcing:
        return None
    live = frozenset(live_labels)
    types = sorted(schema.types)[:PROMPT_LIST_CAP]
    listed = [
        label
        for label, relation in sorted(schema.relations.items())
        if relation.constrained or schema.closed_labels
    ]
    listed.sort(key=lambda label: (label not in live, label))
    kept_types = _longest_fit(types, lambda n: _render(schema, types[:n], []), cap_bytes)
    relations = listed[:PROMPT_LIST_CAP]
    kept = _longest_fit(
        relations, lambda n: _render(schema, types[:kept_types], relations[:n]), cap_bytes
    )
    if kept_types == 0 and kept == 0:
        return None
    chosen_types, chosen = tuple(types[:kept_types]), tuple(relations[:kept])
    return SchemaOffer(chosen_types, chosen, _render(schema, chosen_types, chosen))


def render_schema_block(
    schema: ContextSchema, live_labels: Iterable[str] = (), cap_bytes: int = SCHEMA_BLOCK_BYTES
) -> str:
    """The prompt text of `schema_offer` (empty when no block is prompted)."""
    offer = schema_offer(schema, live_labels, cap_bytes)
    return offer.text if offer is not None else ""


def steering_schema(
    schema: ContextSchema | None,
    live_labels: Iterable[str] = (),
    cap_bytes: int = SCHEMA_BLOCK_BYTES,
) -> dict[str, list[str]] | None:
    """The trace ``steering`` record's ``schema`` (taguru ADR 0027): exactly what was prompted.

    ``{"types": [...], "constrained_relations": [...]}`` in prompt order, or
    None (``null``) when no schema block was prompted.
    """
    offer = schema_offer(schema, live_labels, cap_bytes) if schema is not None else None
    return offer.to_json() if offer is not None else None


def _longest_fit(items: list[str], render: Callable[[int], str], cap_bytes: int) -> int:
    """How many leading ``items`` the rendered block holds within ``cap_bytes``."""
    count = 0
    while count < len(items) and utf8_len(render(count + 1)) <= cap_bytes:
        count += 1
    return count


def _render(schema: ContextSchema, types: Iterable[str], relations: Iterable[str]) -> str:
    types, relations = list(types), list(relations)
    lines = [
        "The target context has a schema: a vocabulary of entity types and of the "
        "types each relation expects."
    ]
    if types:
        lines.append("Entity types (use these exact spellings): " + ", ".join(types))
    lines.append(
        f'To type a concept, add an association with the reserved label "{SCHEMA_TYPE_LABEL}" '
        "from the concept to the type name, one per type — for example "
        f'{{"subject": "…", "label": "{SCHEMA_TYPE_LABEL}", "object": "<type>"}}. '
        "Type only concepts the segment itself describes."
    )
    if relations:
        lines.append(_relations_head(schema))
        lines.extend(f"- {_relation_line(label, schema.relations[label])}" for label in relations)
    if not schema.closed_labels:
        lines.append("A relation label the schema does not list is still allowed.")
    return "\n".join(lines)


def _relations_head(schema: ContextSchema) -> str:
    if schema.closed_labels:
        return (
            "This context accepts only these relation labels; where one shows types "
            "(subject → object), type its subject and object to match with "
            f"{SCHEMA_TYPE_LABEL} (a subtype also matches):"
        )
    return (
        "Relations with expected types (subject → object) — when you use one of these "
        f"labels, type its subject and object to match with {SCHEMA_TYPE_LABEL} "
        "(a subtype also matches):"
    )


def _relation_line(label: str, relation: Relation) -> str:
    if not relation.constrained:
        return label
    domain = ", ".join(relation.domain) or "(any type)"
    range_ = ", ".join(relation.range) or "(any type)"
    return f"{label}: {domain} → {range_}"
