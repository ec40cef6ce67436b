"""The BM25 term function (EVALUATE.md §2.4): one function for paragraphs and queries.

Over ``normalize_entry(text)``:

- a run of ASCII alphanumerics is one word term (``apple``);
- a run of other characters Rust's ``char::is_alphanumeric`` accepts gives every
  adjacent pair as a term (``酒造``), and a run of exactly one character gives
  that character alone;
- anything else (space, punctuation, symbols) ends a run, and so does a switch
  between ASCII and non-ASCII, so no term straddles ``第10篇``.

Then, over the NFKC-but-not-lowercased text, every ASCII-alphanumeric run that
splits at a case boundary adds one word term per piece (``AppState`` → ``app``,
``state``; ``HTTPServer`` → ``http``, ``server``; ``U64Max`` → ``u64``, ``max``).
A piece is the same term as the same word standing alone.

Terms are plain strings: a word is ASCII only, a pair is two non-ASCII
characters and a lone term one, so the three kinds never collide (the reference
hashes them into disjoint key spaces to the same effect).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

from taguru_ray.context.normalize import normalize_entry
from taguru_ray.text.char_classes import is_alphanumeric


def passage_terms(raw: str) -> list[str]:
    """Every term of a paragraph or question, repeats kept (they are its term counts)."""
    terms = list(_text_terms(normalize_entry(raw)))
    terms.extend(_camel_terms(unicodedata.normalize("NFKC", raw)))
    return terms


def query_terms(raw: str) -> list[str]:
    """A query's terms, deduplicated in first-occurrence order."""
    return list(dict.fromkeys(passage_terms(raw)))


_ASCII_RUN = re.compile(r"[A-Za-z0-9]+")
_TOKEN = re.compile(r"[A-Za-z0-9]+|[^\x00-\x7f]+")


@lru_cache(maxsize=1 << 16)
def _in_run(char: str) -> bool:
    return is_alphanumeric(char)


def _text_terms(text: str) -> Iterator[str]:
    """Words and pairs in text order; ASCII punctuation between tokens breaks every run."""
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0].isascii():
            yield token
            continue
        run: list[str] = []
        for char in token:
            if _in_run(char):
                run.append(char)
            elif run:
                yield from _run_terms(run)
                run = []
        if run:
            yield from _run_terms(run)


def _run_terms(run: list[str]) -> Iterator[str]:
    if len(run) == 1:
        yield run[0]
        return
    for first, second in itertools.pairwise(run):
        yield first + second


def _camel_terms(text: str) -> Iterator[str]:
    for match in _ASCII_RUN.finditer(text):
        run = match.group()
        if not run.islower() and len(run) > 1:
            yield from _camel_pieces(run)


def _camel_pieces(run: str) -> Iterator[str]:
    """The pieces of a run that splits at a case boundary; nothing when it does not."""
    starts = [0]
    for at in range(1, len(run)):
        if not run[at].isupper():
            continue
        before = run[at - 1]
        after_lower = before.islower() or before.isdigit()
        ends_acronym = before.isupper() and at + 1 < len(run) and run[at + 1].islower()
        if after_lower or ends_acronym:
            starts.append(at)
    if len(starts) < 2:
        return
    starts.append(len(run))
    for begin, end in itertools.pairwise(starts):
        yield run[begin:end].lower()
