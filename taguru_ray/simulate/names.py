"""The names a text holds, as the simulated model reads them (answers.py's rules): what the
extraction answers and the sessions answers (sessions.py) both find names with.

- Latin names: a capitalised word (`Ray`, `S3`, `Node.js`) or an identifier
  (`cargo-nextest`, `max_conn`, `k8s`); consecutive capitalised words joined
  by single spaces form one name (at most MAX_RUN_WORDS words). Common English
  function words (`The`, `This`, ...) never count.
- Katakana runs of two or more characters, kanji runs (U+4E00-9FFF plus 々)
  of two or more characters.
- `Name (Abbrev)` / `名前（略称）`: the parenthesised short name is an alias
  of the name it follows, not a name of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_RUN_WORDS = 4

# Capitalised only because they open a sentence; a name they are not.
_STOPWORD_TEXT = """
    A An And Are As At Be But By Each Every For From He Her His How If In Is It
    Its No Not Note Of On Once Or Our She So Some That The Their Then There
    These They This Those To Use We What When Where Which While Who Why With
    Yes You Your
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_LATIN_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*")
# A katakana run may contain the long-vowel mark but not start with it; a
# kanji run may contain 々 but not start with it. Runs are bounded so a long
# unbroken run yields several names instead of one unwieldy one.
_JAPANESE_RUN = re.compile(
    r"[\u30A1-\u30FA][\u30A1-\u30FA\u30FC]{1,23}|[\u4E00-\u9FFF][\u4E00-\u9FFF々]{1,15}"
)
_PARENTHESISED = re.compile(r" ?\(([^()\s]{2,16})\)|（([^（）\s]{2,16})）")
_LETTER = re.compile(r"[A-Za-z]")
# What makes a token an identifier: a digit, `-`/`_`, or a capital after the start.
_IDENTIFIER_MARK = re.compile(r"[0-9_-]|(?<=.)[A-Z]")
JAPANESE_CHAR = re.compile(r"[\u3040-\u30FF\u4E00-\u9FFF々]")


@dataclass(frozen=True)
class _Mention:
    name: str
    start: int
    end: int


def names_in(text: str) -> list[str]:
    """The names of a text in order of first appearance, without duplicates."""
    return names_and_aliases(text)[0]


def names_and_aliases(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Names of a block, and `(abbrev, name)` pairs from `Name (Abbrev)`."""
    # A parenthesised short name is a candidate abbreviation; its span is
    # masked so the abbreviation is not also read as a name of its own.
    spans: list[tuple[int, int, str]] = []
    for m in _PARENTHESISED.finditer(text):
        inner = m.group(1) or m.group(2)
        if [x.name for x in _mentions(inner)] == [inner]:
            spans.append((m.start(), m.end(), inner))
    masked = _mask(text, [(s, e) for s, e, _ in spans])
    mentions = sorted(_mentions(masked), key=lambda m: m.start)
    names = list(dict.fromkeys(m.name for m in mentions))
    ends = {m.end: m.name for m in mentions}
    pairs = [(inner, ends[start]) for start, _, inner in spans if start in ends]
    return names, [(a, c) for a, c in pairs if a != c]


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with each span replaced by spaces, keeping every offset."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _mentions(text: str) -> list[_Mention]:
    return [*_latin_mentions(text), *_japanese_mentions(text)]


def _japanese_mentions(text: str) -> list[_Mention]:
    return [_Mention(m.group(), m.start(), m.end()) for m in _JAPANESE_RUN.finditer(text)]


def _latin_mentions(text: str) -> list[_Mention]:
    out: list[_Mention] = []
    run: list[re.Match[str]] = []

    def close_run() -> None:
        if run and (len(run) > 1 or len(run[0].group()) > 1):
            out.append(
                _Mention(text[run[0].start() : run[-1].end()], run[0].start(), run[-1].end())
            )
        run.clear()

    for m in _LATIN_TOKEN.finditer(text):
        token = m.group()
        if token[0].isupper() and token not in _STOPWORDS:
            joins = bool(run) and text[run[-1].end() : m.start()] == " "
            if not joins or len(run) == MAX_RUN_WORDS:
                close_run()
            run.append(m)
            continue
        if run:
            close_run()
        if len(token) > 1 and _is_identifier(token):
            out.append(_Mention(token, m.start(), m.end()))
    close_run()
    return out


def _is_identifier(token: str) -> bool:
    """A token that reads as a name though not capitalised: `k8s`, `foo-bar`, `iPhone`."""
    if token.isalpha() and token[1:].islower():
        return False  # a plain word; most tokens, so decided first
    return bool(_LETTER.search(token) and _IDENTIFIER_MARK.search(token))
