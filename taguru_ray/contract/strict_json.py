"""Standard JSON only: the decoder every request body and import line is read with.

Python's `json` reads more than JSON: the constants ``NaN``, ``Infinity`` and
``-Infinity``, numbers past the f64 range (``1e999`` reads as infinity, a
400-digit integer as an int no float can hold), and it raises `RecursionError`
on a body nested deeper than the interpreter's stack. serde, which the reference
reads with, refuses all of these; so does this decoder, each as its own
`ValueError` so a caller can answer with the right code: `NonFiniteNumber` (the
request's argument is wrong: `invalid_argument`) and `NestedTooDeeply` (the
body is not JSON a server reads: `malformed_request`). Syntax errors stay
`json.JSONDecodeError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

_SHOWN = 32  # a refused number is quoted up to this many characters


class NonFiniteNumber(ValueError):
    """A NaN/Infinity constant, or a number whose magnitude is past the f64 range."""

    def __init__(self, token: str) -> None:
        shown = token if len(token) <= _SHOWN else token[:_SHOWN] + "…"
        super().__init__(
            f"{shown} is not a finite number (JSON has no NaN or Infinity, and a number "
            "must fit a 64-bit float)"
        )
        self.token = shown


class NestedTooDeeply(ValueError):
    """Arrays and objects nested deeper than the decoder follows."""

    def __init__(self) -> None:
        super().__init__("arrays and objects are nested too deeply to read")


def loads(
    text: str | bytes,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """`json.loads` restricted to standard JSON with finite numbers; see the module."""
    try:
        return json.loads(
            text,
            object_pairs_hook=object_pairs_hook,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except RecursionError:
        raise NestedTooDeeply() from None


def _constant(token: str) -> Any:
    raise NonFiniteNumber(token)


def _float(token: str) -> float:
    number = float(token)
    if not math.isfinite(number):
        raise NonFiniteNumber(token)
    return number


def _int(token: str) -> int:
    # float() of a digit string never raises; it is inf exactly when the integer is past
    # the f64 range — checked before int(), which refuses past 4300 digits on its own terms.
    if math.isinf(float(token)):
        raise NonFiniteNumber(token)
    return int(token)
