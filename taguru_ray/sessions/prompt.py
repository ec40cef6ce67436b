"""What the model is shown: code supplies every position, the model judges meaning.

A stage's ask about a batch: the user message is the stage's name, then the turns,
one per line block, ``[seq N] speaker (time): text`` — seq, speaker and time come
from code, so the model never has to invent them. The system prompt states the v4
contract, the stage's one judgement and closed vocabulary, and carries the names
earlier turns of the session settled (seed 002's carryover: names only, never earlier
turns' text, which the model would re-extract and misattribute). Review sees one
draft and its evidence turn and may only flag.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from taguru_ray.sessions.answer import FACT_KEYS
from taguru_ray.sessions.batches import Batch
from taguru_ray.sessions.events import Event
from taguru_ray.sessions.stages import StageSpec

PROMPT_VERSION = "sessions-v4.2"  # the v4 contract; .2 one stage per ask
CARRYOVER_NAMES = 32
REVIEW_FLAGS = (
    "unsupported_causality",  # "because" the turn does not say
    "naming_drift",  # a name the turn spells otherwise
    "time_not_in_evidence",  # a time the turn does not give
    "speaker_confusion",  # attributed to who did not say it
    "overgeneralization",  # more than the turn claims
)

# Every stage's system prompt opens with this line (the simulator knows a session ask by it).
CONTRACT_OPENING = (
    "You read the turns of one coding-agent session and make one judgement about them."
)
CONTRACT_SYSTEM = (
    CONTRACT_OPENING
    + """
Answer a JSON array with exactly one object per turn shown, in order:
{"seq": N, "quote": "…", "facts": [{"subject": "…", "predicate": "…", "value": "…"}]}
- seq: the turn's number as shown in [seq N].
- quote: a span copied verbatim from that turn which proves every fact listed; \
"" when the turn gives nothing for this judgement.
- facts: what the quote shows for this judgement; [] when nothing. Never guess, never \
pad with "none" or "unknown".
No other key: no id, time, position, confidence or status. Seq, time and speaker are \
known already.
The judgement:"""
)
STAGE_LINE = "stage: "  # the user turn's first line names the stage asked

REVIEW_SYSTEM = (
    """\
You review one drafted fact against the turn it was drawn from. You never rewrite it. \
Answer a JSON array with one object: {"seq": N, "quote": "", "facts": [...]}, where \
each fact is {"subject": <the draft field at issue: subject, predicate or value>, \
"predicate": "flag", "value": <one of: """
    + ", ".join(REVIEW_FLAGS)
    + """>}; \
facts [] when the draft holds."""
)


def stamp(ts_ms: int | None) -> str:
    if ts_ms is None:
        return ""
    return " (" + time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(ts_ms / 1000)) + ")"


def turn_block(event: Event) -> str:
    return f"[seq {event.seq}] {event.speaker_id}{stamp(event.ts_ms)}: {event.text}"


def stage_messages(spec: StageSpec, batch: Batch, carried: Sequence[str]) -> list[dict[str, str]]:
    """One stage's ask about one batch: the contract, the stage's judgement and closed
    vocabulary, the names earlier turns settled; the turns, headed by the stage's name."""
    system = f"{CONTRACT_SYSTEM} {spec.rubric}"
    if spec.vocabulary is not None:
        system += "\npredicate: only " + ", ".join(spec.vocabulary) + "."
    if carried:
        names = ", ".join(json.dumps(n, ensure_ascii=False) for n in carried[-CARRYOVER_NAMES:])
        system += f"\nNames earlier turns of this session settled (reuse their spelling): {names}"
    turns = "\n\n".join(turn_block(event) for event in batch.events)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{STAGE_LINE}{spec.name}\n\n{turns}"},
    ]


def review_messages(event: Event, draft: dict[str, str], quote: str) -> list[dict[str, str]]:
    shown = json.dumps({key: draft[key] for key in FACT_KEYS}, ensure_ascii=False)
    user = f"{turn_block(event)}\n\nDraft of seq {event.seq}: {shown}\nIts quote: {quote}"
    return [{"role": "system", "content": REVIEW_SYSTEM}, {"role": "user", "content": user}]


def corrective_message(problems: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The one path-addressed corrective turn (extract's machinery, v4 paths)."""
    lines = "\n".join(f"- {path}: {why}" for path, why in problems)
    return {
        "role": "user",
        "content": "Your answer broke the contract:\n"
        + lines
        + "\nAnswer again, the whole array, fixing only these.",
    }
