"""JSON read and written the way the reference's serde_json does it.

Reading: the runs files and batch files are read line by line; a line is
`text.lines()` (split on ``\\n``, one ``\\r`` dropped) and Rust-trimmed. A
line serde_json would refuse — ``NaN``/``Infinity`` tokens, an escaped lone
surrogate — is refused here too, so Python never accepts what the reference
counts as malformed. The ``as_*`` helpers are serde_json's ``Value::as_*``:
``as_u64`` takes an integer in [0, 2**64), ``as_f64`` any number, neither a
boolean.

Writing: pretty (2-space indent, ``"key": value``) and compact forms with
floats printed as ryu prints them (``1.0``, ``1e-7``), integers as integers,
non-ASCII kept as UTF-8.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from taguru_ray.contract.rust_text import json_number, rust_trim

_U64_END = 2**64
# An escaped UTF-16 surrogate: only then can a parsed string hold a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Refused(ValueError):
    """A token serde_json would not parse."""


def _refuse_constant(token: str) -> Any:
    raise _Refused(token)


def lines(text: str) -> Iterator[str]:
    """Non-blank, trimmed lines, as ``text.lines()`` then ``trim()`` gives them."""
    for line in text.split("\n"):
        trimmed = rust_trim(line.removesuffix("\r"))
        if trimmed:
            yield trimmed


def parse_line(line: str) -> tuple[bool, Any]:
    """(parsed, value): False when serde_json would refuse the line."""
    try:
        value = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return False, None
    if _SURROGATE_ESCAPE.search(line) and _holds_surrogate(value):
        return False, None
    return True, value


def _holds_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, dict):
        return any(_holds_surrogate(k) or _holds_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_surrogate(item) for item in value)
    return False


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def as_u64(value: Any) -> int | None:
    """An integer in [0, 2**64); a float (even 5.0) or a boolean is not one."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _U64_END:
        return value
    return None


def as_f64(value: Any) -> float | None:
    """Any finite JSON number as a float (a huge integer that overflows is none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def dumps_pretty(value: Any) -> str:
    """serde_json's ``to_string_pretty``: 2-space indent, no trailing newline."""
    parts: list[str] = []
    _pretty(value, 0, parts)
    return "".join(parts)


def dumps_compact(value: Any) -> str:
    """serde_json's ``to_string``: no whitespace at all."""
    parts: list[str] = []
    _compact(value, parts)
    return "".join(parts)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return json_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _pretty(value: Any, depth: int, parts: list[str]) -> None:
    inner = "  " * (depth + 1)
    if isinstance(value, dict) and value:
        parts.append("{\n")
        for index, (key, item) in enumerate(value.items()):
            parts.append(f"{inner}{_scalar(key)}: ")
            _pretty(item, depth + 1, parts)
            parts.append(",\n" if index + 1 < len(value) else "\n")
        parts.append("  " * depth + "}")
    elif isinstance(value, list | tuple) and value:
        parts.append("[\n")
        for index, item in enumerate(value):
            parts.append(inner)
            _pretty(item, depth + 1, parts)
            parts.append(",\n" if index + 1 < len(value) else "\n")
        parts.append("  " * depth + "]")
    elif isinstance(value, dict):
        parts.append("{}")
    elif isinstance(value, list | tuple):
        parts.append("[]")
    else:
        parts.append(_scalar(value))


def _compact(value: Any, parts: list[str]) -> None:
    if isinstance(value, dict):
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            parts.append(("," if index else "") + _scalar(key) + ":")
            _compact(item, parts)
        parts.append("}")
    elif isinstance(value, list | tuple):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _compact(item, parts)
        parts.append("]")
    else:
        parts.append(_scalar(value))
