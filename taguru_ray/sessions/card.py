"""The memory card and always-on brief asks: what the model is shown, and the code
checks its answers pass before anything is stored. Pure: values in, values out.

Both asks keep the v4 envelope (``{seq, quote, facts[{subject, predicate, value}]}``,
`answer.read`) and a closed predicate vocabulary, so the model only judges meaning:

- **card**: shown a session's checked facts, one line each with its seq and verbatim
  quote, it answers for the facts worth remembering, predicate one of `CARD_KINDS`,
  subject the fact's subject, value one sentence. Code keeps a line only when its seq
  is a listed fact's, its quote is verbatim in that seq's quote, its kind is in the
  vocabulary, its subject is that fact's subject, and it holds no padding and no
  redaction placeholder. Every card line therefore cites a turn (``#12``).
- **brief**: shown the cards of a project's sessions, numbered ``[seq K]`` (here K is
  the card line, not a turn), it answers with the lines that still stand, predicate
  ``standing``, value one sentence. Code maps K back to the turn's handle and keeps at
  most `BRIEF_LINES`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from taguru_ray.sessions.answer import MAX_FIELD_BYTES, Reading, read
from taguru_ray.sessions.checks import PADDING, collapse
from taguru_ray.sessions.memory import BriefLine, Card, CardLine, Fact
from taguru_ray.text.redact import contains_placeholder

CARD_VERSION = "sessions-card-v1"
CARD_KINDS = ("decided", "changed", "learned")
BRIEF_LINES = 7
SENTENCE_CHARS = 300

CARD_SYSTEM = (
    """\
You write the memory card of one coding-agent session from its checked facts: what \
was decided, what was changed, what was learned. Each fact is shown as \
[seq N] quote: "…verbatim…" fact: subject | predicate | value. Answer a JSON array of \
{"seq": N, "quote": "…", "facts": [{"subject": "…", "predicate": "…", "value": "…"}]}, \
one object per fact worth remembering:
- seq and quote: the fact's own seq, and a span copied verbatim from its quote.
- subject: the fact's subject, as written. predicate: one of """
    + ", ".join(CARD_KINDS)
    + """. value: one sentence saying it, in the turn's words.
Leave out facts that are none of these. No other key; never guess or pad."""
)

BRIEF_SYSTEM = """\
You write the always-on brief of one project: the few things that still stand across \
its coding-agent sessions. Each card line is shown as [seq K] handle kind — subject: text. \
Answer a JSON array of {"seq": K, "quote": "…", "facts": [{"subject": "…", \
"predicate": "standing", "value": "…"}]} for at most 7 lines that still hold (a later \
line on the same subject replaces an earlier one):
- seq: the card line's K; quote: a span copied verbatim from that line's text.
- subject: the line's subject; value: one sentence. No other key; never guess or pad."""


@dataclass(frozen=True)
class Kept:
    """What the checks kept of an answer, and why each other part went."""

    lines: tuple[CardLine, ...] | tuple[BriefLine, ...]
    removed: tuple[str, ...]  # "$[2]: …", one per dropped item or fact
    readable: bool = True  # False: not a JSON array at all — nothing to keep, ask again later


def card_messages(handle: str, facts: Sequence[Fact]) -> list[dict[str, str]]:
    shown = "\n".join(
        f"[seq {f.seq}] quote: {json.dumps(f.quote, ensure_ascii=False)} "
        f"fact: {f.subject} | {f.predicate} | {f.value}"
        for f in facts
    )
    user = f"Session {handle}\n\n{shown}"
    return [{"role": "system", "content": CARD_SYSTEM}, {"role": "user", "content": user}]


def read_card(text: str, facts: Sequence[Fact]) -> Kept:
    """The card lines an answer holds that pass the checks, in the facts' order."""
    reading = read(text)
    removed = [f"{p.path}: {p.why}" for p in [*reading.corrective, *reading.removed]]
    by_seq: dict[int, list[Fact]] = {}
    for fact in facts:
        by_seq.setdefault(fact.seq, []).append(fact)
    kept: dict[tuple[int, str, str], CardLine] = {}
    for item in reading.items:
        listed = by_seq.get(item.seq)
        if listed is None:
            removed.append(f"{item.path}: seq {item.seq} is not a listed fact's turn")
            continue
        if not item.facts:
            continue
        if not any(
            collapse(item.quote) and collapse(item.quote) in collapse(f.quote) for f in listed
        ):
            removed.append(f"{item.path}.quote: not verbatim in a quote of seq {item.seq}")
            continue
        subjects = {collapse(f.subject) for f in listed}
        for index, fact in enumerate(item.facts):
            where = f"{item.path}.facts[{index}]"
            why = _wrong(fact.predicate, CARD_KINDS, fact.subject, fact.value)
            if why is None and collapse(fact.subject) not in subjects:
                why = "subject is not the subject of a fact of that turn"
            if why is not None:
                removed.append(f"{where}: {why}")
                continue
            line = CardLine(item.seq, fact.predicate, fact.subject, collapse(fact.value))
            kept.setdefault((line.seq, line.kind, line.subject), line)  # a repeat adds nothing
    order = {fact.seq: index for index, fact in enumerate(facts)}
    lines = sorted(kept.values(), key=lambda line: order[line.seq])
    return Kept(tuple(lines), tuple(removed), _readable(reading))


def brief_lines(cards: Sequence[Card]) -> list[tuple[str, CardLine]]:
    """The project's card lines in the order the brief ask numbers them: (handle, line)."""
    return [(card.handle, line) for card in cards for line in card.lines or ()]


def brief_messages(project: str, cards: Sequence[Card]) -> list[dict[str, str]]:
    shown = "\n".join(
        f"[seq {k}] {handle}#{line.seq} {line.kind} — {line.subject}: {line.text}"
        for k, (handle, line) in enumerate(brief_lines(cards))
    )
    user = f"Project {project}\n\n{shown}"
    return [{"role": "system", "content": BRIEF_SYSTEM}, {"role": "user", "content": user}]


def read_brief(text: str, cards: Sequence[Card]) -> Kept:
    """The brief lines an answer holds that pass the checks, at most `BRIEF_LINES`."""
    numbered = brief_lines(cards)
    reading = read(text)
    removed = [f"{p.path}: {p.why}" for p in [*reading.corrective, *reading.removed]]
    kept: dict[str, BriefLine] = {}
    for item in reading.items:
        if item.seq >= len(numbered):
            removed.append(f"{item.path}: seq {item.seq} is not a card line shown")
            continue
        handle, line = numbered[item.seq]
        if item.facts and not (
            collapse(item.quote) and collapse(item.quote) in collapse(line.text)
        ):
            removed.append(f"{item.path}.quote: not verbatim in card line {item.seq}")
            continue
        for index, fact in enumerate(item.facts):
            why = _wrong(fact.predicate, ("standing",), fact.subject, fact.value)
            if why is not None:
                removed.append(f"{item.path}.facts[{index}]: {why}")
                continue
            cited = f"{handle}#{line.seq}"
            kept.setdefault(cited, BriefLine(cited, collapse(fact.value)))
    lines = list(kept.values())
    if len(lines) > BRIEF_LINES:
        removed.append(f"$: {len(lines)} lines, the brief keeps the first {BRIEF_LINES}")
    return Kept(tuple(lines[:BRIEF_LINES]), tuple(removed), _readable(reading))


def _readable(reading: Reading) -> bool:
    return not any(problem.path == "$" for problem in reading.corrective)


def _wrong(predicate: str, vocabulary: Sequence[str], subject: str, value: str) -> str | None:
    """Why a card or brief fact is dropped, None when it stands."""
    if predicate not in vocabulary:
        return f"predicate {predicate!r} is not one of {', '.join(vocabulary)}"
    for name, field in (("subject", subject), ("value", value)):
        if not collapse(field):
            return f"{name} is empty"
        if collapse(field).lower() in PADDING:
            return f"{name} is padding ({field!r})"
        if len(field.encode()) > MAX_FIELD_BYTES:
            return f"{name} is over {MAX_FIELD_BYTES} bytes"
        if contains_placeholder(field):
            return f"{name} holds a redaction placeholder"
    if len(collapse(value)) > SENTENCE_CHARS:
        return f"value is over {SENTENCE_CHARS} characters — one sentence"
    return None
