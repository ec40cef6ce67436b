"""Why a session file is refused: one line a user can act on, never a value from the file.

Converters raise `Refused` (a line, a JSON path, a reason) deep inside a walk that does
not know the file's name; `convert()` turns it into the public `SessionRefused`,
prefixed with the file. Neither ever carries text read from the session: the secret
scan has run by then, but a refusal is printed and logged, so it names places only.
"""

from __future__ import annotations

import json
import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,47}")


class SessionRefused(Exception):
    """A session file that is not imported, with the one-line reason naming the file."""


class NotASession(SessionRefused):
    """A file that holds no session at all — no agent's format, or no turn (a Claude Code
    file of summaries or snapshots only) — rather than a session that is wrong. A folder
    walk skips it with a note: an agent's folder holds such files by design."""


class Refused(Exception):
    """A refusal before the file's name is attached: ``line N: $.path: reason``."""

    def __init__(
        self,
        reason: str,
        *,
        line: int | None = None,
        path: str | None = None,
        empty: bool = False,
    ) -> None:
        self.reason = reason
        self.line = line
        self.path = path
        self.empty = empty  # no session here at all: `NotASession`
        super().__init__(self.where() + reason)

    def where(self) -> str:
        line = "" if self.line is None else f"line {self.line}: "
        path = "" if self.path is None else f"{self.path}: "
        return line + path

    def for_file(self, file: str) -> SessionRefused:
        return (NotASession if self.empty else SessionRefused)(f"{file}: {self}")


def child(path: str, key: str | int) -> str:
    """``$.message`` + ``content`` → ``$.message.content``; an index → ``[2]``.

    A key that is not identifier-shaped is written ``["…"]``, cut to 48 characters:
    keys are the file's schema, not its content, but a path is printed, so it is
    kept short.
    """
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    shown = key if len(key) <= 48 else key[:47] + "…"
    return f"{path}[{json.dumps(shown, ensure_ascii=False)}]"


def type_name(value: object) -> str:
    """A record or block type as a refusal may show it: identifier-shaped, or not at all."""
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
        return f' "{value}"'
    return ""
