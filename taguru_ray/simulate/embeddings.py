"""Deterministic embeddings for the simulator's ``POST /v1/embeddings``.

A text's vector: NFKC, lowercased; every character bigram (a lone character for a
one-character text) hashed (blake2b) to one of `WIDTH` components with a ±1 sign, the
counts summed, then L2-normalised. Texts that share words share bigrams, so their
cosine is high and unrelated texts sit near 0 — enough for a test to see the vector
lane rank and fuse, with no model. The same text always gets the same vector, in any
process. An empty text gets the first unit vector (real providers refuse it; the
simulator answers everything it can). A request may ask for another width with
``dimensions``, as OpenAI's API allows.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from typing import Any

WIDTH = 64
MAX_WIDTH = 4096


def embed(text: str, width: int = WIDTH) -> list[float]:
    folded = unicodedata.normalize("NFKC", text).lower()
    grams = [folded[i : i + 2] for i in range(len(folded) - 1)] or ([folded] if folded else [])
    vector = [0.0] * width
    for gram in grams:
        digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vector[value % width] += 1.0 if (value >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [1.0] + [0.0] * (width - 1)
    return [v / norm for v in vector]


def parse_request(body: object) -> tuple[str, list[str], int] | str:
    """(model, inputs, width) of an embeddings request, or why it is a 400."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
        return "'input' is required: a string or a non-empty array of strings"
    width = body.get("dimensions", WIDTH)
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
        return f"'dimensions' must be a whole number from 1 to {MAX_WIDTH}"
    model = body.get("model")
    return (model if isinstance(model, str) else "taguru-sim-embed"), inputs, width


def answer(model: str, inputs: list[str], width: int) -> dict[str, Any]:
    """The OpenAI response shape: `{"object": "list", "data": [...], "model", "usage"}`."""
    tokens = sum(max(1, len(text) // 4) for text in inputs)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": embed(text, width)}
            for i, text in enumerate(inputs)
        ],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
