"""What a run will ask, estimated from its plan before it asks anything (`--dry-run`).

Input is counted from the prompts as they are built — the system turn with
the run's steering blocks, each chunk's user turn — at 4 bytes a token, the
simulator's and most tokenizers' English average. Output cannot be known
before the model answers: it is estimated at OUTPUT_RATIO times the chunk's
own tokens (an association-dense answer restates most of its text), plus the
questions asked per paragraph. Each gleaning pass resends the conversation
with the answer so far and is assumed to run (an upper bound: a pass that
finds nothing ends the gleaning). Corrective turns, splits and
carryover blocks are not counted: a clean run has none of the first two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from taguru_ray.pipeline.carryover import glean_ask
from taguru_ray.pipeline.plan import Piece
from taguru_ray.pipeline.prompt import user_turn

OUTPUT_RATIO = 1.5  # answer tokens per token of the chunk's own text
QUESTION_TOKENS = 24  # one proposed retrieval question with its paragraph tag
BASIS = (
    f"input from the prompts as built at 4 bytes a token; output at {OUTPUT_RATIO:g}x each "
    "chunk's tokens; gleanings as full passes; corrective turns, splits and carryover "
    "not counted"
)


@dataclass(frozen=True)
class Estimate:
    completions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(
            self.completions + other.completions,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


def estimate_segment(
    system: str, source: str, chunks: Sequence[Piece], *, gleanings: int, questions: int
) -> Estimate:
    """The completions and tokens one segment's chunks ask for, each chunk once."""
    total = Estimate()
    system_tokens = tokens(system)
    ask = tokens(glean_ask())
    for chunk in chunks:
        user = tokens(user_turn(source, chunk.index, chunk.total, chunk.text))
        answer = math.ceil(tokens(chunk.text) * OUTPUT_RATIO) + questions * QUESTION_TOKENS * len(
            chunk.blocks
        )
        total += Estimate(1, system_tokens + user, answer)
        for _ in range(gleanings):
            # The base pair, the answer so far, the ask; what it adds is a part of the answer.
            total += Estimate(1, system_tokens + user + answer + ask, math.ceil(answer / 2))
    return total
