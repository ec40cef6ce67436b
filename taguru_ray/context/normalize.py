"""normalize_entry: the one folding every lexical comparison of a context reads.

EVALUATE.md §2.1, the reference's entry folding: each character lowercased
(per character, as Rust's ``char::to_lowercase``: a whole-string ``lower()``
would apply Greek final-sigma context), then Unicode NFKC, then lowercased
again, then katakana U+30A1..U+30F6 shifted to hiragana (``ー`` and ``ヷ``..``ヺ``
stay). Full-width ASCII, half-width kana and other compatibility forms fold;
U+3000 becomes a space. Nothing is trimmed or collapsed: callers trim.
"""

from __future__ import annotations

import unicodedata

_KATAKANA_FIRST = 0x30A1
_KATAKANA_LAST = 0x30F6
_TO_HIRAGANA = 0x60


def _lowercase(text: str) -> str:
    # str.lower() is per character except for the final-sigma rule, the only context
    # its case mapping reads; per character only when a capital sigma is present.
    if "\u03a3" not in text:
        return text.lower()
    return "".join(char.lower() for char in text)


def normalize_entry(text: str) -> str:
    """The folded form resolve, BM25 terms and quote matching compare."""
    if text.isascii():
        return text.lower()  # the common case: NFKC and the kana fold change no ASCII
    folded = _lowercase(unicodedata.normalize("NFKC", _lowercase(text)))
    return "".join(
        chr(ord(char) - _TO_HIRAGANA) if _KATAKANA_FIRST <= ord(char) <= _KATAKANA_LAST else char
        for char in folded
    )
