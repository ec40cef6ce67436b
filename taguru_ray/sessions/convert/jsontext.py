"""Where the JSON strings of one line are, so a mask can replace text inside them only.

The secret scan reads raw lines, but a secret sits inside a JSON string: escaped
(``\\"``, ``\\n``, ``\\u0041``), or split from its name by JSON syntax
(``"password": "…"``). Masking must never cut an escape in half or touch a quote,
or the line stops being JSON — or, worse, stays JSON with the secret's tail in it.
This module finds the string tokens of a line (valid JSON has no string that spans
a line) and the escape sequences inside one, a surrogate pair counting as one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Possessive: each run of plain characters and each escape is taken once and never given
# back (nothing after them could match instead), so the engine keeps no backtracking
# state per character — the plain `(?:[^"\\]|\\.)*` kept about 130 bytes for each
# character of a string, 1.3 GB for a 10 MB tool output (issue 49).
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.",
    re.DOTALL,
)


@dataclass(frozen=True)
class StringToken:
    """One JSON string: ``start`` is its opening quote, ``end`` one past its closing one."""

    start: int
    end: int

    @property
    def content(self) -> tuple[int, int]:
        """The span between the quotes."""
        return self.start + 1, self.end - 1

    def raw(self, line: str) -> str:
        return line[self.start : self.end]

    def decoded(self, line: str) -> str:
        value: str = json.loads(self.raw(line))
        return value

    def escapes(self, line: str) -> list[tuple[int, int]]:
        """The spans of the escape sequences in the string, in order."""
        first, last = self.content
        return [match.span() for match in _ESCAPE.finditer(line, first, last)]


def string_tokens(line: str) -> list[StringToken]:
    """The string tokens of a JSON line, left to right.

    Outside a string, valid JSON has no quote that does not open one, so a left-to-right
    search lands on every token and on nothing else.
    """
    return [StringToken(*match.span()) for match in _STRING.finditer(line)]


def snap(span: tuple[int, int], escapes: list[tuple[int, int]]) -> tuple[int, int]:
    """Widen ``span`` so that it cuts no escape sequence: whole escapes in or out."""
    start, end = span
    for first, last in escapes:
        if first < start < last:
            start = first
        if first < end < last:
            end = last
    return start, end
