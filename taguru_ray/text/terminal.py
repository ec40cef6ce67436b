"""Text from files and users, made safe to print on a terminal line.

A file name, a source id or a session's text can hold control characters: an ESC
sequence clears the screen or rewrites the line before it, a BEL rings, a NUL or
a line break splits what a script reads as one line, and a bidirectional
override reorders what a person sees. Every human-facing line shows such a
character as ``\\u{1b}`` (the way an issue quotes text, Rust's ``{:?}`` escape)
and leaves every other character, backslash included, as it is — so a line a
script parses stays one line with its fields where they were.
"""

from __future__ import annotations

import unicodedata

# Bidirectional embeddings, overrides and isolates: printable by category (Cf) but
# they reorder the text around them on screen (the "Trojan Source" characters).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _BIDI


def printable(text: str) -> str:
    """``text`` with every control, line-separator and bidi character escaped."""
    if not any(unsafe(char) for char in text):
        return text
    return "".join(f"\\u{{{ord(char):x}}}" if unsafe(char) else char for char in text)
