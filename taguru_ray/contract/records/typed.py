"""The base of every typed record: contract field order, absent-when-empty fields, and a
lenient reading for the verbs that read records back.

A record type is a frozen pydantic model whose fields are the record's keys in
CONTRACT.md section 4's order (``type`` first, from `TYPE`). A field marked
`Omitted` is left out of the line when it holds nothing — the contract's
"only when present" keys; every other field is written, null included.
Writers build a type and call `record()`; readers call `read()` on a parsed
line and get the type back, or None when the line is not one.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

Record = dict[str, Any]


class Omitted:
    """Marks a field written only when it holds something (`when`: None, or empty too)."""

    def __init__(self, *, empty: bool = False) -> None:
        self.empty = empty

    def skips(self, value: Any) -> bool:
        if value is None:
            return True
        return self.empty and not value


WHEN_SET = Omitted()
WHEN_NONEMPTY = Omitted(empty=True)


class Typed(BaseModel):
    """A record: `TYPE` names it; the fields, in order, are its keys."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    TYPE: ClassVar[str] = ""  # empty for a document that is no tagged line (a manifest entry)

    def record(self) -> Record:
        """The record as written: ``type``, then each field in order, omitted ones left out."""
        dumped = self.model_dump(mode="json", by_alias=True)
        out: Record = {"type": self.TYPE} if self.TYPE else {}
        for key, marker in _layout(type(self)):
            if marker is not None and marker.skips(dumped[key]):
                continue
            out[key] = dumped[key]
        return out

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every key the record may hold, in order (``type`` first)."""
        fields = tuple(info.alias or name for name, info in cls.model_fields.items())
        return ("type", *fields) if cls.TYPE else fields

    @classmethod
    def view(cls, data: Mapping[str, Any]) -> Self | None:
        """A lenient view of a line of this type, unvalidated: every field the line lacks
        reads None, and values keep whatever type the line gave them. For the verbs that
        show partial, hand-edited or older logs (`inspect`, `metrics`): they reach the
        fields through the type, so a renamed field fails their tests, not a user."""
        if data.get("type", "") != cls.TYPE:
            return None
        values = {name: data.get(info.alias or name) for name, info in cls.model_fields.items()}
        return cls.model_construct(**values)

    @classmethod
    def read(cls, data: Mapping[str, Any]) -> Self | None:
        """The record a parsed line holds, or None when it is not this type or does not
        fit it (a reader skips it, as it skips unknown types)."""
        if data.get("type", "") != cls.TYPE:
            return None
        body = {key: value for key, value in data.items() if key != "type"}
        try:
            return cls.model_validate(body, strict=False, extra="ignore")
        except ValidationError:
            return None


class Rung(StrEnum):
    """The structured-output ladder's rungs, strongest first (ADR 0008)."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPTED = "prompted JSON"


class State(StrEnum):
    """How a completion ended (taguru ADR 0001 section 7)."""

    STOP_VALID = "stop_valid"
    STOP_MALFORMED = "stop_malformed"
    LENGTH_LIMITED = "length_limited"
    EMPTY = "empty"
    REFUSAL = "refusal"
    TIMEOUT = "timeout"
    TRANSPORT = "transport"


class Stage(StrEnum):
    """Which ask an attempt answers."""

    ITEM = "item"
    CROSS_CHUNK = "cross_chunk"
    OVERVIEW = "overview"
    GLEANING = "gleaning"
    SESSION_FACT = "session_fact"  # `sessions extract`: one batch of a session's turns
    REVIEW = "review"  # `sessions extract`: one draft against its evidence turn (flags only)


class Move(StrEnum):
    """What the ladder did to a piece (taguru ADR 0029)."""

    ESCALATE = "escalate"
    DEMOTE = "demote"
    SPLIT = "split"
    RUNAWAY = "runaway"


class Status(StrEnum):
    """How a segment's extraction ended."""

    WRITTEN = "written"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


@cache
def _layout(cls: type[Typed]) -> tuple[tuple[str, Omitted | None], ...]:
    """Each key of `cls` in order, with its `Omitted` marker: worked out once per type, not
    per record written (several per completion)."""
    return tuple(
        (info.alias or name, next((m for m in info.metadata if isinstance(m, Omitted)), None))
        for name, info in cls.model_fields.items()
    )
