"""P14 provenance: where a written fact came from, as code knows it (SESSIONS.md §5).

Every fact line of a session's trace carries its turn (``source``, ``seq``, the
turn's ``sha256``), the quote's character span in the turn's verbatim text, the
turn's time and speaker, the model that stated it and the digest of the prompt
wording it was asked with — so a fact can be checked against the very turn, and
a changed prompt or model tells its facts apart. Nothing here is the model's: the
model gave only ``seq`` and ``quote``.

The span is found as the code checks find the quote (NFC, whitespace runs as one
space): the first place the quote's words occur with any whitespace between them.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from types import ModuleType
from typing import Any

from taguru_ray.sessions.events import Event, Session


def quote_span(quote: str, text: str) -> tuple[int, int] | None:
    """``[start, end)`` of ``quote`` in ``text`` (character offsets), whitespace runs
    matching any whitespace run; None when it is not there."""
    words = unicodedata.normalize("NFC", quote).split()
    if not words:
        return None
    found = re.search(r"\s+".join(re.escape(word) for word in words), text)
    return None if found is None else found.span()


def prompt_sha256(prompt: ModuleType) -> str:
    """The digest of a prompt module's wording: its version and every ``*_SYSTEM``
    text, in name order — what changes when what the model is told changes."""
    digest = hashlib.sha256(str(getattr(prompt, "PROMPT_VERSION", "")).encode())
    for name in sorted(vars(prompt)):
        value = getattr(prompt, name)
        if name.endswith("_SYSTEM") and isinstance(value, str):
            digest.update(b"\0" + name.encode() + b"\0" + value.encode())
    return digest.hexdigest()


def fact_provenance(
    session: Session, seq: int, quote: str, *, model: str | None, prompt: str | None = None
) -> dict[str, Any]:
    """The provenance fields of one fact drawn from turn ``seq`` by ``quote``; ``prompt``
    the prompt's digest, by default `prompt_sha256` of `taguru_ray.sessions.prompt`."""
    if prompt is None:
        from taguru_ray.sessions import prompt as wording

        prompt = prompt_sha256(wording)
    event: Event | None = next((e for e in session.events if e.seq == seq), None)
    span = None if event is None else quote_span(quote, event.text)
    return {
        "source": session.source,
        "seq": seq,
        "quote": quote,
        "span": None if span is None else list(span),
        "ts_ms": None if event is None else event.ts_ms,
        "ts_exact": None if event is None else event.ts_exact,
        "speaker_id": None if event is None else event.speaker_id,
        "turn_sha256": None if event is None else event.sha256,
        "model": model,
        "prompt_sha256": prompt,
    }
