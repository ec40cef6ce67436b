"""One piece's validated output, in the form a checkpoint unit stores.

CONTRACT.md section 3: a unit's ``output`` is ``{associations:[{subject,
label,object,weight,paragraph}], aliases:[{alias,canonical,kind}],
questions:[{paragraph,question}]}`` — post-validation, every key present in
that order, absent values as null. `validate` builds it (``normalise``), the
checkpoint stores it, `reconcile` and `merge` read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ASSOCIATION_KEYS = ("subject", "label", "object", "weight", "paragraph")
ALIAS_KEYS = ("alias", "canonical", "kind")
QUESTION_KEYS = ("paragraph", "question")

_COLLECTIONS = (
    ("associations", ASSOCIATION_KEYS),
    ("aliases", ALIAS_KEYS),
    ("questions", QUESTION_KEYS),
)


@dataclass(frozen=True)
class PieceOutput:
    """Items as dicts with all their keys in the fixed order; None where absent."""

    associations: list[dict[str, Any]]
    aliases: list[dict[str, Any]]
    questions: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """The checkpoint's ``output`` object (fresh dicts, keys in contract order)."""
        return {
            name: [_ordered(item, keys) for item in getattr(self, name)]
            for name, keys in _COLLECTIONS
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PieceOutput:
        """Read a checkpoint's ``output``; a missing collection reads as empty.

        Raises ValueError on a shape no writer produces (a collection that is
        not a list, an item that is not an object), so a checkpoint reader
        can treat the file as unreadable rather than reuse garbage.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"piece output is not an object: {type(data).__name__}")
        collections: dict[str, list[dict[str, Any]]] = {}
        for name, keys in _COLLECTIONS:
            items = data.get(name)
            items = [] if items is None else items
            if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
                raise ValueError(f"piece output {name!r} is not a list of objects")
            collections[name] = [_ordered(item, keys) for item in items]
        return cls(**collections)


def _ordered(item: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: item.get(key) for key in keys}
