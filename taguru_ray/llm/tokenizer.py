"""Load the model family's tokenizer for `--dry-run`'s count, or say why not (ADR 0060).

tiktoken is an optional extra (`pip install 'taguru-ray[tokens]'`). Its
encodings are BPE files it fetches from OpenAI's blob store on first use and
keeps in ``TIKTOKEN_CACHE_DIR`` (else a ``data-gym-cache`` folder under the
temp dir). A machine that reaches only package registries cannot fetch them,
and tiktoken's fetch has no timeout of its own: the load runs in a daemon
thread given FETCH_SECONDS, so an offline dry-run costs that at most once and
falls back to the heuristic with a line saying why.
"""

from __future__ import annotations

import threading
from typing import Any

from taguru_ray.pipeline.tokens import HEURISTIC, Counter, encoding_for, heuristic

FETCH_SECONDS = 10.0  # a BPE file is 2-4 MB: seconds on any working link
OPENAI_FRAMING = 3  # tokens per message and for the reply's start (OpenAI's cookbook)


def load_counter(model: str | None, *, fetch_seconds: float = FETCH_SECONDS) -> Counter:
    """The tokenizer of `model`'s family as a `Counter`, or the heuristic with `why`."""
    encoding = encoding_for(model)
    if encoding is None:
        return Counter(heuristic, HEURISTIC, f"no tokenizer known for model {model!r}")
    try:
        import tiktoken
    except ImportError:
        return Counter(
            heuristic, HEURISTIC, f"{encoding} needs tiktoken: pip install 'taguru-ray[tokens]'"
        )
    loaded: dict[str, Any] = {}

    def load() -> None:
        try:
            loaded["encoding"] = tiktoken.get_encoding(encoding)
        except Exception as error:  # a fetch refused, a cache file that fails its hash
            loaded["error"] = error

    thread = threading.Thread(target=load, name=f"tiktoken {encoding}", daemon=True)
    thread.start()
    thread.join(fetch_seconds)
    found = loaded.get("encoding")
    if found is None:
        why = (
            f"timed out after {fetch_seconds:g} s"
            if thread.is_alive()
            else type(loaded.get("error")).__name__
        )
        return Counter(
            heuristic,
            HEURISTIC,
            f"{encoding}'s BPE file is not cached and could not be fetched ({why}) — put it "
            "in TIKTOKEN_CACHE_DIR",
        )

    def count(text: str) -> int:
        return len(found.encode(text, disallowed_special=()))

    return Counter(count, encoding, per_message=OPENAI_FRAMING, per_reply=OPENAI_FRAMING)
