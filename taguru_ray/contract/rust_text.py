"""How the reference renders values inside issue texts, reproduced exactly.

The answer contract's issue lines (CONTRACT.md section 5, "Issue text format")
were defined by a Rust program, and users grep them and tests match them, so
this module mimics the three Rust renderings they embed (CONTRACT.md section 9
names them as cautions):

- ``str::trim`` — strips Unicode White_Space, which is not Python's
  ``str.isspace`` (that one also strips U+001C..U+001F);
- ``{:?}`` on a string — double quotes, ``\\0 \\t \\r \\n \\\\ \\"`` escaped by
  name, grapheme extenders and non-printable characters as ``\\u{hex}``;
- ``{}`` on an ``f64`` (no exponent, no trailing ``.0``) and serde_json's
  number display (ryu: ``1.0``, ``1e300``, ``1.5e-7``).

``describe`` builds the ``<desc>`` clause of a "got <desc>" finding from them.
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal

from taguru_ray.text.paragraphs import WHITE_SPACE

# How many bytes of a string an issue embeds before eliding the rest: enough to
# recognise the value, few enough that one answer cannot balloon an issue line.
MAX_ISSUE_VALUE_BYTES = 64

_TRIM_CHARS = "".join(sorted(WHITE_SPACE))

_NAMED_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"'}

# Rust's `is_printable` is false for these general categories (space excepted).
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})

# Unicode's Other_Grapheme_Extend (PropList.txt): Grapheme_Extend = Mn + Me + these.
_OTHER_GRAPHEME_EXTEND = (
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B57, 0x0B57),
    (0x0BBE, 0x0BBE), (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6),
    (0x0D3E, 0x0D3E), (0x0D57, 0x0D57), (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF),
    (0x1B35, 0x1B35), (0x200C, 0x200C), (0x302E, 0x302F), (0xFF9E, 0xFF9F),
    (0x1133E, 0x1133E), (0x11357, 0x11357), (0x114B0, 0x114B0), (0x114BD, 0x114BD),
    (0x115AF, 0x115AF), (0x11930, 0x11930), (0x1D165, 0x1D165), (0x1D16E, 0x1D172),
    (0xE0020, 0xE007F),
)  # fmt: skip

_I64_MIN = -(2**63)
_U64_END = 2**64


def rust_trim(text: str) -> str:
    """``str::trim``: strip leading and trailing Unicode White_Space."""
    return text.strip(_TRIM_CHARS)


def utf8_len(text: str) -> int:
    """The UTF-8 byte length every cap of the contract is counted in."""
    return len(text.encode("utf-8", "surrogatepass"))


def debug_str(text: str) -> str:
    """``format!("{:?}", text)`` for a Rust string."""
    return '"' + "".join(_debug_char(char) for char in text) + '"'


def quote_for_issue(text: str) -> str:
    """A string as an issue quotes it: ``{:?}`` of its first ≤ 64 bytes, ``…`` when cut."""
    head = _utf8_prefix(text, MAX_ISSUE_VALUE_BYTES)
    return debug_str(head) + ("…" if len(head) < len(text) else "")


def display_f64(value: float) -> str:
    """``format!("{}", value)`` for an ``f64``: shortest round-trip digits, never an exponent."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    sign, digits, exponent = _shortest(value)
    if exponent >= 0:
        return sign + digits + "0" * exponent
    point = len(digits) + exponent
    if point > 0:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}0.{'0' * -point}{digits}"


def json_number(value: int | float) -> str:
    """serde_json's display of a parsed number: integers as written, floats as ryu prints them.

    serde_json keeps an integer that fits i64/u64 exact and reads any other
    number as an f64, so a bigger integer prints the way its float would.
    """
    if isinstance(value, int):
        if _I64_MIN <= value < _U64_END:
            return str(value)
        value = _to_f64(value)
    if not math.isfinite(value):
        return display_f64(value)
    return _ryu(value)


def describe(value: object) -> str:
    """The ``<desc>`` of a "got <desc>" finding: type, plus content for scalars."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return f"number {json_number(value)}"
    if isinstance(value, str):
        return f"string {quote_for_issue(value)}"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


def _to_f64(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _debug_char(char: str) -> str:
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    if _is_grapheme_extend(char) or not _is_printable(char):
        return f"\\u{{{ord(char):x}}}"
    return char


def _is_printable(char: str) -> bool:
    return char == " " or unicodedata.category(char) not in _UNPRINTABLE_CATEGORIES


def _is_grapheme_extend(char: str) -> bool:
    if unicodedata.category(char) in ("Mn", "Me"):
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _OTHER_GRAPHEME_EXTEND)


def _utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes (a char boundary)."""
    used = 0
    for index, char in enumerate(text):
        used += utf8_len(char)
        if used > limit:
            return text[:index]
    return text


def _shortest(value: float) -> tuple[str, str, int]:
    """(sign, digits, exponent) with value == digits × 10**exponent, digits shortest round-trip."""
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign, "0", 0
    parts = Decimal(repr(abs(value))).normalize().as_tuple()
    assert isinstance(parts.exponent, int)
    return sign, "".join(map(str, parts.digits)), parts.exponent


def _ryu(value: float) -> str:
    """ryu's "pretty" float format, which serde_json prints floats with."""
    sign, digits, exponent = _shortest(value)
    if value == 0:
        return sign + "0.0"
    length = len(digits)
    point = length + exponent  # 10**(point-1) <= |value| < 10**point
    if exponent >= 0 and point <= 16:
        return f"{sign}{digits}{'0' * exponent}.0"
    if 0 < point <= 16:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -5 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    mantissa = digits if length == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{sign}{mantissa}e{point - 1}"
