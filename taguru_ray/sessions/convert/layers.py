"""Every reading of one line a secret can hide in: the line, and each JSON string decoded.

A session line is JSON; a turn's text is a string in it; a Codex call's ``arguments``
or a tool's output is JSON inside that string, and a shell command in those is a
string once more, its quotes escaped again at each level (``"`` → ``\\"`` →
``\\\\\\"``). A rule spells a quote as a quote, so a secret is seen only where its
level is decoded (issue 37, item 4). `layers` gives the line itself, then the
decoded text of each string in it that holds an escape, then the same inside each
of those, level by level; each character of a layer knows the span of the raw
line it came from. A span of a layer therefore maps back to whole escape sequences
of the line at every level, so a mask placed there never cuts one.

Iterative, not recursive: a hostile line can nest as deep as it likes, and each
level is shorter than the one holding it (its quotes and escapes are gone).
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections import deque
from functools import cached_property

from taguru_ray.sessions.convert.jsontext import StringToken, string_tokens

_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Layer:
    """One reading: its text, how many strings deep it is, and the way back to the line.

    A decoded layer is the value of ``token`` in its ``parent``'s text. Its text is read
    with the JSON reader; the way back to the parent (`SpanMap`) only when a match needs
    placing, since nearly every line holds none.
    """

    def __init__(
        self,
        text: str,
        depth: int = 0,
        parent: Layer | None = None,
        token: StringToken | None = None,
    ) -> None:
        self.text, self.depth, self.parent, self.token = text, depth, parent, token

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the line that ``text[start:end]`` (non-empty) was decoded from."""
        layer: Layer = self
        while layer.parent is not None:
            start, end = layer._map.span(start, end)
            layer = layer.parent
        return start, end

    @cached_property
    def _map(self) -> SpanMap:
        """Where each character came from in the parent's text. Should the two readers
        ever disagree, every character maps to the whole string: a mask then covers all
        of it, never a wrong part."""
        assert self.parent is not None and self.token is not None
        found = SpanMap.of(self.parent.text, self.token)
        if found is None or found[0] != self.text:
            return SpanMap.whole(*self.token.content)
        return found[1]


class SpanMap:
    """A decoded string's characters mapped back to its token's raw text, kept sparse: one
    entry per escape sequence (each decodes to one character), the plain runs between them
    one to one. A 10 MB tool output held per-character lists of about 100 bytes a
    character; this holds the escapes' positions, a few bytes a character (issue 49)."""

    def __init__(self, first: int, escapes: list[tuple[int, int, int]]) -> None:
        self._first = first  # where the content starts in the raw text
        self._decoded = array("q", (d for d, _, _ in escapes))  # each escape's decoded index
        self._starts = array("q", (a for _, a, _ in escapes))
        self._ends = array("q", (b for _, _, b in escapes))
        self._whole: tuple[int, int] | None = None

    @classmethod
    def whole(cls, first: int, last: int) -> SpanMap:
        found = cls(first, [])
        found._whole = (first, last)
        return found

    @classmethod
    def of(cls, text: str, token: StringToken) -> tuple[str, SpanMap] | None:
        """The token's value and its map; None when an escape is not JSON's."""
        first, last = token.content
        pieces: list[str] = []
        escapes: list[tuple[int, int, int]] = []
        plain, decoded = first, 0  # where the current plain run starts; characters so far
        for start, end in token.escapes(text):
            value = _escape_value(text[start:end])
            if value is None:
                return None
            pieces += [text[plain:start], value]
            decoded += start - plain
            escapes.append((decoded, start, end))
            decoded += 1
            plain = end
        pieces.append(text[plain:last])
        return "".join(pieces), cls(first, escapes)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span of decoded ``[start, end)`` (non-empty)."""
        if self._whole is not None:
            return self._whole
        return self._raw(start)[0], self._raw(end - 1)[1]

    def _raw(self, index: int) -> tuple[int, int]:
        at = bisect_right(self._decoded, index) - 1
        if at >= 0 and self._decoded[at] == index:
            return self._starts[at], self._ends[at]
        base, counted = (self._ends[at], self._decoded[at] + 1) if at >= 0 else (self._first, 0)
        raw = base + index - counted
        return raw, raw + 1


def _escape_value(piece: str) -> str | None:
    """One escape sequence's character (a surrogate pair is one; a lone surrogate reads as
    U+FFFD, so every layer encodes); None when it is not JSON's."""
    if piece[1] == "u" and len(piece) >= 6:
        value: str = json.loads(f'"{piece}"')
        if len(value) == 1 and 0xD800 <= ord(value) <= 0xDFFF:
            value = "\ufffd"
        return value
    if piece[1] in _SIMPLE and len(piece) == 2:
        return _SIMPLE[piece[1]]
    return None


def layers(line: str) -> list[Layer]:
    """The line, then every string holding an escape decoded, breadth first."""
    found = [Layer(line)]
    queue = deque(found)
    while queue:
        layer = queue.popleft()
        for token in string_tokens(layer.text):
            child = _child(layer, token)
            if child is not None:
                found.append(child)
                queue.append(child)
    return found


def _child(layer: Layer, token: StringToken) -> Layer | None:
    """The token's decoded text as a layer, or None: no escape in it, or not a JSON string."""
    raw = token.raw(layer.text)
    if "\\" not in raw:
        return None
    try:
        text = json.loads(raw, strict=False)
    except ValueError:
        return None
    return Layer(_LONE_SURROGATE.sub("\ufffd", text), layer.depth + 1, layer, token)
