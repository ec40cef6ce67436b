"""The canonical paragraph split: the server's numbering every locator shares.

A paragraph index written into a source file, a trace record or a prompt label
must resolve to the same text on the server, so the split follows the server's
rules exactly (CONTRACT.md section 7): lines split after each ``\\n``; a line's
content drops one trailing ``\\n`` then one trailing ``\\r``; a line is blank
when its content is empty or entirely Unicode White_Space; runs of blank lines
separate paragraphs; a paragraph runs from its first line's first character to
its last line's last content character, nothing trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass

# Unicode White_Space, not Python's str.isspace(): the latter also counts
# U+001C..U+001F (information separators), which the server does not.
WHITE_SPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


_WHITE_SPACE_CHARS = "".join(sorted(WHITE_SPACE))


def is_white_space(text: str) -> bool:
    """True when every character is Unicode White_Space (and for the empty string)."""
    # str.strip with these characters removes exactly them, in C: a character-by-character
    # generator cost a segment's worker more than the rest of its name checks (issue 51).
    return not text.strip(_WHITE_SPACE_CHARS)


@dataclass(frozen=True)
class Paragraph:
    """One canonical paragraph: its 0-based index and its exact text."""

    index: int
    text: str

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def split_paragraphs(text: str) -> list[Paragraph]:
    """Split a segment's text into canonical paragraphs, numbered from 0."""
    paragraphs: list[Paragraph] = []
    start: int | None = None  # offset of the open paragraph's first character
    end = 0  # offset just past the open paragraph's last content character
    offset = 0
    for line in _lines(text):
        content_end = offset + len(line)
        if line.endswith("\n"):
            content_end -= 1
        if content_end > offset and text[content_end - 1] == "\r":
            content_end -= 1
        content = text[offset:content_end]
        if content == "" or is_white_space(content):
            if start is not None:
                paragraphs.append(Paragraph(len(paragraphs), text[start:end]))
                start = None
        else:
            if start is None:
                start = offset
            end = content_end
        offset += len(line)
    if start is not None:
        paragraphs.append(Paragraph(len(paragraphs), text[start:end]))
    return paragraphs


def _lines(text: str) -> list[str]:
    """Lines split after each ``\\n`` only (``str.splitlines`` also splits on CR etc.)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out
