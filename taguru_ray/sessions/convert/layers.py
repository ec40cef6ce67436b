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
from collections import deque
from functools import cached_property

from taguru_ray.sessions.convert.jsontext import StringToken, string_tokens

_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Layer:
    """One reading: its text, how many strings deep it is, and the way back to the line.

    A decoded layer is the value of ``token`` in its ``parent``'s text. Its text is read
    with the JSON reader; the per-character spans only when a match needs placing, since
    nearly every line holds none.
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
            starts, ends = layer._spans
            start, end = starts[start], ends[end - 1]
            layer = layer.parent
        return start, end

    @cached_property
    def _spans(self) -> tuple[list[int], list[int]]:
        """Per character, where it starts and ends in the parent's text. Should the two
        readers ever disagree, every character maps to the whole string: a mask then
        covers all of it, never a wrong part."""
        if self.parent is None or self.token is None:
            return list(range(len(self.text))), list(range(1, len(self.text) + 1))
        decoded = decode_with_spans(self.parent.text, self.token)
        if decoded is None or decoded[0] != self.text:
            first, last = self.token.content
            return [first] * len(self.text), [last] * len(self.text)
        return decoded[1], decoded[2]


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


def decode_with_spans(text: str, token: StringToken) -> tuple[str, list[int], list[int]] | None:
    """A string token's value and, per character, its span in ``text``; None when an
    escape is not JSON's. A lone surrogate reads as U+FFFD, so every layer encodes."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for first, last in _pieces(text, token):
        piece = text[first:last]
        if piece[0] != "\\":
            value = piece
        elif piece[1] == "u" and len(piece) >= 6:
            value = json.loads(f'"{piece}"')
            if len(value) == 1 and 0xD800 <= ord(value) <= 0xDFFF:
                value = "\ufffd"
        elif piece[1] in _SIMPLE and len(piece) == 2:
            value = _SIMPLE[piece[1]]
        else:
            return None
        chars.append(value)
        starts.append(first)
        ends.append(last)
    return "".join(chars), starts, ends


def _pieces(text: str, token: StringToken) -> list[tuple[int, int]]:
    """The token's content cut into single characters and whole escape sequences."""
    first, last = token.content
    escapes = token.escapes(text)
    pieces: list[tuple[int, int]] = []
    at = first
    for start, end in escapes:
        pieces += [(index, index + 1) for index in range(at, start)]
        pieces.append((start, end))
        at = end
    pieces += [(index, index + 1) for index in range(at, last)]
    return pieces
