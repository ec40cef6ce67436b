"""A search query as the session index reads it: raw words, matched by substring.

The words are the user's, unchanged but for NFC (the events' text is NFC): a
word is a whitespace-free run, or a ``"quoted phrase"`` kept whole, spaces and
all; a turn matches when it holds every word as a substring (case-blind), in
any order. Japanese needs no spaces: ``デプロイスクリプト`` is one word and
matches inside any longer run of text.

The trigram index holds runs of three characters, so a word of one or two
characters (``起動``, ``CI``) has no term of its own in it: such words are
matched by ``LIKE`` over the events' text instead — beside the index when the
query has a longer word too, alone (a scan of every turn, unranked) when it has
none. (LIKE folds the case of ASCII letters only; the index folds Unicode case.)
Everything here is pure; `index.py` runs the SQL.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

TRIGRAM = 3  # the shortest word the trigram index can match
SNIPPET_BEFORE = 40  # characters of context before the first match
SNIPPET_CHARS = 160
SNAP_CHARS = 15  # a cut this close before a space moves past it

_WORD = re.compile(r'"([^"]*)"?|(\S+)')
_SPACE = re.compile(r"\s+")


def query_words(query: str) -> list[str]:
    """The query's words in order, duplicates and empty phrases dropped."""
    words: list[str] = []
    for quoted, bare in _WORD.findall(unicodedata.normalize("NFC", query)):
        word = quoted.strip() if quoted else bare
        if word and word not in words:
            words.append(word)
    return words


def split_words(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """(words the trigram index can match, words shorter than a trigram)."""
    return [w for w in words if len(w) >= TRIGRAM], [w for w in words if len(w) < TRIGRAM]


def fts_match(words: Sequence[str]) -> str:
    """An FTS5 MATCH expression: each word a quoted phrase (so no word is read as
    FTS5 syntax), joined by FTS5's implicit AND."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


def like_pattern(word: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern holding `word` anywhere."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet(text: str, words: Sequence[str]) -> str:
    """`text` around its first match of any word, whitespace runs made one space, on one
    line; ``…`` where it was cut (at a space when one is near). From the start when no
    word matches."""
    found = [m.start() for w in words if (m := re.search(re.escape(w), text, re.IGNORECASE))]
    first = min(found, default=0)
    start = max(0, first - SNIPPET_BEFORE)
    space = _SPACE.search(text, start, first) if start else None
    if space and space.start() - start <= SNAP_CHARS:  # begin at a word, not inside one
        start = space.end()
    end = start + SNIPPET_CHARS
    body = _SPACE.sub(" ", text[start:end]).strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")
