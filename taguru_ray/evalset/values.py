"""Reading one JSON value as the type a field declares, or saying why not.

Every reader takes the field's JSON path (`expected_sources[1].relevance`) and
raises `Problem` naming it. A message shows a short form of the offending value,
never the value itself, so a bad line is never dumped whole into an error.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1

_SHOWN_CHARS = 40


class Problem(ValueError):
    """One field is wrong; the message names its JSON path and what to fix."""


def short(text: str) -> str:
    """A string as a message quotes it: repr, cut to a readable length."""
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 1] + "…"
    return repr(text)


def shown(value: Any) -> str:
    """What a message says it got: a number as itself, anything bigger by its kind."""
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return f"the string {short(value)}"
    return "an array" if isinstance(value, list) else "an object"


def join(where: str, key: str | int) -> str:
    """The JSON path of a member: `a.b`, `a[1]`, or `b` at the top of a line."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def check_keys(raw: Mapping[str, Any], allowed: Collection[str], where: str) -> None:
    """Refuse the first key not in `allowed`: a typo in a hand-written file is an error."""
    for key in raw:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else "allowed: " + ", ".join(allowed)
            raise Problem(f"unknown field {short(join(where, key))} ({hint})")


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Problem(f"{where} must be an object, got {shown(value)}")
    return value


def required(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw:
        raise Problem(f"{join(where, key)} is required")
    return raw[key]


def string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise Problem(f"{where} must be a string, got {shown(value)}")
    return value


def nonblank(value: Any, where: str) -> str:
    if not string(value, where).strip():
        raise Problem(f"{where} must not be empty")
    return value


def integer(value: Any, where: str, low: int | None = None, high: int | None = None) -> int:
    """An integer (a bool or 1.0 is not one) in low..=high where given."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise Problem(f"{where} must be an integer, got {shown(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{'' if low is None else low}..={'' if high is None else high}"
        raise Problem(f"{where} must be {bounds}, got {value}")
    return value


def number(value: Any, where: str, low: float, high: float) -> float:
    """A JSON number (integer or not; a bool is not one) in low..=high."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise Problem(f"{where} must be a number, got {shown(value)}")
    if not low <= value <= high:
        raise Problem(f"{where} must be {low}..={high}, got {value}")
    return float(value)


def array(value: Any, where: str, item: Callable[[Any, str], T]) -> tuple[T, ...]:
    """A JSON array, each element read by `item` under its own path `where[i]`."""
    if not isinstance(value, list):
        raise Problem(f"{where} must be an array, got {shown(value)}")
    return tuple(item(element, join(where, index)) for index, element in enumerate(value))


def u32(value: Any, where: str) -> int:
    return integer(value, where, 0, U32_MAX)


def u64_or_null(value: Any, where: str) -> int | None:
    return None if value is None else integer(value, where, 0, U64_MAX)
