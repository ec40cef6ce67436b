"""P8 mentions: who and what each turn names, found by code, with no dictionary.

A mention is a span the text itself marks as a name — never a word judged to be
one:

- a ``backticked`` span (what people quote as code: ``git push``, ``SessionStore``);
- a URL, a path (``src/app.py``, ``~/.bashrc``, ``./run.sh``) or a file name with an
  extension (``build-release.sh``, ``README.md``);
- an identifier by its shape: snake_case, SCREAMING_CASE, camelCase, PascalCase with
  two humps or more, a dotted name (``os.path.join``), a ``--flag``, an ``@handle``,
  an issue reference (``#38``);
- a carried name: a name an earlier dialogue turn (user text, assistant text, a
  tool call) mentioned, appearing again as a whole token (``deploy`` after
  `` `deploy` ``). Tool output and thinking carry nothing forward: a ``ls`` of a
  thousand files would otherwise make every later word a name.

Mentions keep first-occurrence order, each once, at most `MAX_MENTIONS` per turn and
`MAX_MENTION_CHARS` each, found in a turn's first `SCAN_CHARS` characters, so a log's
worth of paths can neither grow an event nor make a 20 MiB import read every byte
of its tool output for names. The model never sees them as facts; they are positions code can cite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_MENTIONS = 64
MAX_MENTION_CHARS = 200
SCAN_CHARS = 32 * 1024
# Turns whose mentions later turns may name again without marking them.
CARRYING_KINDS = frozenset({"user_text", "assistant_text", "tool_call"})

_BACKTICKED = re.compile(r"`([^`\n]{1,200})`")
_SHAPES = re.compile(
    r"""
    (?<![\w/.~-])
    (?:
        [a-z][a-z0-9+.-]*://[^\s<>"'`)\]]+            # a URL
      | (?:~|\.{1,2})?/?[\w.@+-]+(?:/[\w.@+-]+)+/?     # a path with a slash
      | [\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}  # a file or dotted name
      | [A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+            # snake_case, SCREAMING_CASE
      | [a-z]+[A-Z][A-Za-z0-9]*                        # camelCase
      | [A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*                # PascalCase, two humps or more
      | --?[a-z][a-z0-9-]{1,}(?=[\s=,;)]|$)            # a command-line flag
      | @[A-Za-z0-9_][A-Za-z0-9_.-]*                   # an @handle
      | \#\d+                                          # an issue or PR reference
    )
    """,
    re.VERBOSE,
)
_TOKEN = re.compile(r"[\w][\w./@#+~-]*")
_TRAILING = ".-/"


def mentions(text: str, carried: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The names ``text`` mentions, in first-occurrence order (see the module doc)."""
    text = text[:SCAN_CHARS]
    found: dict[int, str] = {}  # start -> name: first occurrence decides the order
    for match in _BACKTICKED.finditer(text):
        found.setdefault(match.start(), match.group(1).strip())
    for match in _SHAPES.finditer(text):
        found.setdefault(match.start(), match.group().rstrip(_TRAILING))
    if carried:
        for match in _TOKEN.finditer(text):
            token = match.group().rstrip(_TRAILING)
            if token in carried:
                found.setdefault(match.start(), token)
    names: dict[str, None] = {}
    for _, name in sorted(found.items()):
        if name and len(name) <= MAX_MENTION_CHARS and not name.isdigit():
            names.setdefault(name)
            if len(names) == MAX_MENTIONS:
                break
    return tuple(names)


def carry(carried: frozenset[str], kind: str, names: Iterable[str]) -> frozenset[str]:
    """The carried names after a turn of ``kind`` that mentioned ``names``."""
    if kind not in CARRYING_KINDS:
        return carried
    return carried | frozenset(name for name in names if " " not in name)
