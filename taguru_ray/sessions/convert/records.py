"""The records of a session file: JSON Lines, or one JSON array, each with its line.

Every agent writes JSON Lines except OpenAI-style chat logs, which are often one
(pretty-printed) array. Both come back as `Record`s: the value, the 1-based physical
line it starts on (what a refusal names), and, for an array, its index (`Origin.line`
of an array message is index + 1, SESSIONS.md §3). A line or element that is not
JSON refuses the session; the parser's message is not echoed, only its column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from taguru_ray.sessions.convert.refusal import Refused

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


@dataclass(frozen=True)
class Record:
    line: int  # 1-based physical line the record starts on
    value: Any
    index: int | None = None  # position in a JSON array; None for JSON Lines

    @property
    def origin_line(self) -> int:
        """`Origin.line`: the physical line, or the array index + 1."""
        return self.line if self.index is None else self.index + 1


def split_lines(text: str) -> list[str]:
    """Physical lines, ``\\n``-separated, a trailing ``\\r`` trimmed; no final empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def is_array(text: str) -> bool:
    """Whether the document is one JSON array (its first non-blank character is ``[``)."""
    return text.lstrip(_WHITESPACE).startswith("[")


def read(text: str) -> list[Record]:
    """The records of a JSON array document or of JSON Lines (blank lines skipped)."""
    return read_array(text) if is_array(text) else read_lines(text)


def read_lines(text: str) -> list[Record]:
    records = []
    for number, line in enumerate(split_lines(text), start=1):
        if line.strip(_WHITESPACE) == "":
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise Refused(f"not valid JSON (column {error.colno})", line=number) from None
        records.append(Record(number, value))
    return records


def read_array(text: str) -> list[Record]:
    """The elements of a top-level array, each with the line its first character is on."""
    at = _skip(text, text.index("[") + 1)
    records: list[Record] = []
    if at < len(text) and text[at] == "]":
        return _end(text, at + 1, records)
    line, counted = 1, 0  # lines are counted forward once, not from the start per element
    while True:
        line, counted = line + text.count("\n", counted, at), at
        try:
            value, at = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError as error:
            raise Refused(f"not valid JSON (column {error.colno})", line=error.lineno) from None
        records.append(Record(line, value, len(records)))
        at = _skip(text, at)
        if at < len(text) and text[at] == ",":
            at = _skip(text, at + 1)
            continue
        if at < len(text) and text[at] == "]":
            return _end(text, at + 1, records)
        raise Refused("not valid JSON (expected , or ] after an element)", line=_line(text, at))


def _end(text: str, at: int, records: list[Record]) -> list[Record]:
    at = _skip(text, at)
    if at != len(text):
        raise Refused("not valid JSON (text after the array)", line=_line(text, at))
    return records


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1
