"""Characters that act on a terminal instead of showing on it.

Controls (C0, DEL, C1), the line and paragraph separators, and the bidirectional
embeddings, overrides and isolates — printable by category (Cf) but reordering
the text around them on screen (the "Trojan Source" characters). Output names
replace them (`names.flatten`); report lines escape them (`text.terminal`).
A lone surrogate (Cs) is one too: it is how Python holds a file name's bytes that
are not UTF-8, and no stream can encode it — printed raw, the line raises.
"""

from __future__ import annotations

import unicodedata

_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs") or char in _BIDI
