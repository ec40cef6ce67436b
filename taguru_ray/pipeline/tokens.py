"""How `--dry-run` counts tokens: the model family's tokenizer when one is known and
loaded, else 4 UTF-8 bytes a token (ADR 0060).

OpenAI's models tokenize with tiktoken's encodings — o200k_base from gpt-4o
on (gpt-4.1, gpt-4.5, gpt-5, the o-series), cl100k_base for gpt-4 and
gpt-3.5 — so their prompts can be counted exactly before they are sent.
Other families (Claude, Gemini, Qwen, Llama, Gemma) have no tokenizer here:
they are counted at 4 bytes a token, the simulator's own rule and English's
average, and the estimate says so with the error measured for it. Pure: the
encoding itself is loaded by `llm/tokenizer.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

BYTES_PER_TOKEN = 4
HEURISTIC = f"{BYTES_PER_TOKEN} bytes a token"

# Model-name prefixes (less a router's vendor/ prefix) -> tiktoken encoding, as tiktoken's
# own model table has them; the o200k family comes before gpt-4's.
ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
)


def encoding_for(model: str | None) -> str | None:
    """The tiktoken encoding of `model`'s family, or None when it is not OpenAI's."""
    bare = (model or "").rsplit("/", 1)[-1].lower()
    for prefix, encoding in ENCODINGS:
        # gpt-4.1-mini, gpt-5.1, o3-2025-04-16 — never gpt-40 or o10.
        if bare == prefix or bare.startswith((f"{prefix}-", f"{prefix}.")):
            return encoding
    return None


def heuristic(text: str) -> int:
    """4 UTF-8 bytes a token, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


@dataclass(frozen=True)
class Counter:
    """A token counter and what it is: `name` is the encoding, or HEURISTIC; `why` says
    why the heuristic stands in when it does (None when the tokenizer is the model's)."""

    count: Callable[[str], int]
    name: str = HEURISTIC
    why: str | None = None
    # The chat framing the model's server adds: per message (its role and separators)
    # and once for the reply's start — 3 and 3 for OpenAI's chat models, per its
    # cookbook's count; 0 for the heuristic, which the simulator counts without any.
    per_message: int = 0
    per_reply: int = 0

    def messages(self, *texts: str) -> int:
        """Tokens of one request of these messages, its framing included."""
        return sum(self.count(text) + self.per_message for text in texts) + self.per_reply

    @property
    def exact(self) -> bool:
        return self.name != HEURISTIC


HEURISTIC_COUNTER = Counter(heuristic)
