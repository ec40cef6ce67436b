"""The `parse` step: one answer text to the JSON object it carries, or a syntax fault.

CONTRACT.md section 5, "Answer shape": trim; strip a leading ``` fence (its
info line and the closing fence); blank after that is the empty-answer
diagnosis; parse; when that fails, parse the widest ``{…}`` slice (first ``{``
to last ``}``) so prose around the object is tolerated; a top level that is not
an object is a syntax fault ``not a JSON object: …``.

The step is lenient about shape and strict about syntax. Shape: the raw object
is returned untouched — absent/null keys, unknown properties and wrong types
are the `validate` step's to name, path by path. Syntax: only standard JSON
(RFC 8259) is accepted, so ``NaN``/``Infinity``, numbers that overflow a
double (``1e400``) and unpaired ``\\uD800`` escapes are syntax faults, as the
reference's serde_json parser refuses them too. Accepting them would let a
non-finite weight or an unencodable string reach the source file writer; as a
syntax fault the model is told exactly where the bad token sits.

Fault messages name a line and column counted in the answer after trimming
and fence stripping (the text the model is asked to fix).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.rust_text import describe, rust_trim

FENCE = "```"

# Own words; the `empty` attempt state carries this as its parse_error.
EMPTY_ANSWER_DIAGNOSIS = (
    "the answer was empty — a thinking-mode model can spend its whole output budget "
    "on reasoning before writing any text; turn thinking off or raise the output limit"
)

# One JSON string, or a bare token that may be a non-finite number.
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|(-?(?:Infinity|NaN))|(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)', re.S
)
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.S)
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Answer:
    """A parsed answer: the raw top-level object, exactly as the model wrote it."""

    value: dict[str, Any]


@dataclass(frozen=True)
class SyntaxFault:
    """No JSON object could be read. ``empty`` marks the empty-answer diagnosis."""

    message: str
    empty: bool = False


Parsed = Answer | SyntaxFault


def parse_answer(text: str | None) -> Parsed:
    """Read the answer's JSON object; a `SyntaxFault` names why there is none.

    ``None`` (a completion with no content) reads as an empty answer. When both
    the whole text and the widest slice fail, the message reports the whole
    text's failure, as the reference does.
    """
    body = strip_fences(rust_trim(text or ""))
    if not body:
        return SyntaxFault(EMPTY_ANSWER_DIAGNOSIS, empty=True)
    try:
        value = _loads(body)
    except json.JSONDecodeError as error:
        first = str(error)
    else:
        if isinstance(value, dict):
            return Answer(value)
        first = f"the top-level value is {describe(value)}"
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        try:
            value = _loads(body[start : end + 1])
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, dict):
                return Answer(value)
    return SyntaxFault(f"not a JSON object: {first}")


def is_empty_answer(text: str | None) -> bool:
    """The `empty` state's test, shared with parse so a bare fence classifies the same."""
    return not strip_fences(rust_trim(text or ""))


def strip_fences(text: str) -> str:
    """Drop a leading ``` fence line (with its info string) and the last closing fence."""
    if not text.startswith(FENCE):
        return text
    rest = text[len(FENCE) :]
    _, newline, body = rest.partition("\n")
    if not newline:
        body = rest
    inside, closing, _ = body.rpartition(FENCE)
    return rust_trim(inside if closing else body)


class _Numbers:
    """json.loads hooks that note any number JSON cannot carry."""

    def __init__(self) -> None:
        self.non_finite = False

    def constant(self, name: str) -> float:
        self.non_finite = True
        return math.nan

    def float_(self, literal: str) -> float:
        number = float(literal)
        self.non_finite |= not math.isfinite(number)
        return number

    def int_(self, literal: str) -> int:
        try:
            number = int(literal)
            float(number)
        except (ValueError, OverflowError):
            self.non_finite = True
            return 0
        return number


def _loads(text: str) -> Any:
    """json.loads restricted to standard JSON; every refusal is a JSONDecodeError."""
    numbers = _Numbers()
    try:
        value = json.loads(
            text,
            parse_constant=numbers.constant,
            parse_float=numbers.float_,
            parse_int=numbers.int_,
        )
    except RecursionError:
        raise json.JSONDecodeError("Nesting too deep", text, 0) from None
    if numbers.non_finite:
        token, offset = _first_non_finite(text)
        message = (
            f"Number {token} is not finite (JSON has no NaN or Infinity, nor numbers that overflow)"
        )
        raise json.JSONDecodeError(message, text, offset)
    surrogate = _first_lone_surrogate(text)
    if surrogate is not None:
        raise json.JSONDecodeError("Unpaired surrogate in a \\u escape", text, surrogate)
    return value


def _first_non_finite(text: str) -> tuple[str, int]:
    """The first non-finite number token (cut to 32 chars) and its offset."""
    for match in _TOKEN.finditer(text):
        token = match.group(1) or match.group(2)
        if token is not None and (match.group(1) or not math.isfinite(float(token))):
            shown = token if len(token) <= 32 else token[:32] + "…"
            return shown, match.start()
    return "?", 0


def _first_lone_surrogate(text: str) -> int | None:
    """Offset of a surrogate escape without its partner (json pairs only adjacent escapes)."""
    raw = _RAW_SURROGATE.search(text)
    if raw is not None:
        return raw.start()
    if "\\" not in text:
        return None
    high: re.Match[str] | None = None
    for match in _ESCAPE.finditer(text):
        code = int(match.group(1), 16) if match.group(1) else -1
        if high is not None:
            if 0xDC00 <= code <= 0xDFFF and match.start() == high.end():
                high = None
                continue
            return high.start()
        if 0xDC00 <= code <= 0xDFFF:
            return match.start()
        if 0xD800 <= code <= 0xDBFF:
            high = match
    return high.start() if high is not None else None
