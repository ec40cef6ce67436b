"""What a run will ask, estimated from its plan before it asks anything (`--dry-run`).

Input is counted from the prompts as they are built — the system turn with
the run's steering blocks, each chunk's user turn — by the model family's
tokenizer when one is loaded (tiktoken's, for OpenAI's models, with their
chat framing), else at 4 bytes a token, the simulator's rule and English's
average (`tokens.py`, ADR 0060). Output cannot be known before the model
answers: it is estimated at OUTPUT_RATIO times the chunk's own tokens (an
association-dense answer restates most of its text), plus the questions
asked per paragraph. Each gleaning pass resends the conversation
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
from taguru_ray.pipeline.tokens import HEURISTIC_COUNTER, Counter

OUTPUT_RATIO = 1.5  # answer tokens per token of the chunk's own text
QUESTION_TOKENS = 24  # one proposed retrieval question with its paragraph tag
BASIS = (
    f"output at {OUTPUT_RATIO:g}x each chunk's tokens; gleanings as full passes; corrective "
    "turns, splits and carryover not counted"
)


def basis(counter: Counter) -> str:
    """How the estimate was counted: the tokenizer (or why the heuristic stood in)."""
    if counter.exact:
        counted = f"input from the prompts as built, by {counter.name}"
    elif counter.why:
        counted = f"input from the prompts as built at {counter.name} ({counter.why})"
    else:
        counted = f"input from the prompts as built at {counter.name}"
    return f"{counted}; {BASIS}"


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


def estimate_segment(
    system: str,
    source: str,
    chunks: Sequence[Piece],
    *,
    gleanings: int,
    questions: int,
    counter: Counter = HEURISTIC_COUNTER,
) -> Estimate:
    """The completions and tokens one segment's chunks ask for, each chunk once."""
    total = Estimate()
    count = counter.count
    system_tokens = count(system) + counter.per_message
    ask = count(glean_ask()) + counter.per_message
    for chunk in chunks:
        user = count(user_turn(source, chunk.index, chunk.total, chunk.text)) + counter.per_message
        base = system_tokens + user + counter.per_reply
        answer = math.ceil(count(chunk.text) * OUTPUT_RATIO) + questions * QUESTION_TOKENS * len(
            chunk.blocks
        )
        total += Estimate(1, base, answer)
        for _ in range(gleanings):
            # The base pair, the answer so far, the ask; what it adds is a part of the answer.
            resent = base + answer + counter.per_message + ask
            total += Estimate(1, resent, math.ceil(answer / 2))
    return total


RESULTS = "benchmarks/results/estimate-error-latest.json"
# The estimate's error (estimate / counted - 1) as `benchmarks/estimate_error.py` measured
# it, by counter: against the simulator (which counts 4 bytes a token: the heuristic's
# only; English and Japanese corpora, lowest and highest) and against the anchor's real
# answers (a 12B model and qwen2.5:7b on Japanese documents, medians per document; their
# prompts are the reference tool's). A test holds these to the results file.
MEASURED: dict[str, dict[str, tuple[float, float] | float]] = {
    HEURISTIC_COUNTER.name: {
        "simulator_input": (0.0, 0.0),
        "simulator_output": (-0.18, 0.84),
        "real_input": 0.24,
        "real_output": -0.58,
    },
    "o200k_base": {"real_input": 0.29, "real_output": -0.43},
    "cl100k_base": {"real_input": 0.42, "real_output": -0.22},
}


def _percent(value: tuple[float, float] | float) -> str:
    low, high = value if isinstance(value, tuple) else (value, value)
    shown = [f"{round(v * 100):+d}%".replace("-", "\N{MINUS SIGN}") for v in (low, high)]
    return shown[0] if shown[0] == shown[1] else f"{shown[0]} to {shown[1]}"


def measured(counter: Counter) -> str:
    """The error measured for this way of counting, and where it was measured."""
    found = MEASURED.get(counter.name)
    if found is None:
        return f"its error not measured ({RESULTS})"
    said = []
    if "simulator_input" in found:
        said.append(
            f"input {_percent(found['simulator_input'])}, output "
            f"{_percent(found['simulator_output'])} on the simulator"
        )
    said.append(
        f"input {_percent(found['real_input'])}, output {_percent(found['real_output'])} on "
        "the anchor's real answers"
    )
    return f"measured error: {'; '.join(said)} ({RESULTS})"
