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

import io
import re
from typing import TextIO

from taguru_ray.contract.control_chars import unsafe


def printable(text: str) -> str:
    """``text`` with every control, line-separator and bidi character escaped."""
    if not any(unsafe(char) for char in text):
        return text
    return "".join(f"\\u{{{ord(char):x}}}" if unsafe(char) else char for char in text)


# A colour (SGR) sequence is all a terminal does with it: Ray colours the prefixes of its
# workers' log lines, so a guarded terminal passes these and escapes every other ESC.
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_KEPT = frozenset("\n\t")


def _escape_for_terminal(text: str) -> str:
    out: list[str] = []
    start = 0
    for match in _COLOUR.finditer(text):
        out.append(_escape_span(text[start : match.start()]))
        out.append(match.group())
        start = match.end()
    out.append(_escape_span(text[start:]))
    return "".join(out)


def _escape_span(text: str) -> str:
    if not any(unsafe(char) and char not in _KEPT for char in text):
        return text
    return "".join(
        f"\\u{{{ord(char):x}}}" if unsafe(char) and char not in _KEPT else char for char in text
    )


class TerminalGuard(io.TextIOBase):
    """A terminal's stream with every control character escaped on its way to the screen
    (line breaks and tabs kept, colours kept): whatever a verb prints — a file name, a
    session's text — cannot clear the screen, ring, or rewrite a line. `inner` is the
    terminal itself, for the progress bar's own carriage return and line clear."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(_escape_for_terminal(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.inner.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.inner.errors


def guarded_terminal(stream: TextIO) -> TextIO:
    """`stream` guarded when it is a terminal; a pipe or a file gets the bytes as they are
    (JSON and parsed lines stay exact — names in report lines are escaped where they are
    written, `printable`)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return stream
    return TerminalGuard(stream) if tty and not isinstance(stream, TerminalGuard) else stream


def raw(stream: TextIO) -> TextIO:
    """The terminal under a guard (the progress bar's own control sequences), or `stream`."""
    return stream.inner if isinstance(stream, TerminalGuard) else stream
