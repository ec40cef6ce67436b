"""Code checks first (SESSIONS.md §6): what code can decide never goes to the model.

Over one batch's reading, in order: coverage (the answered seqs are exactly the
batch's: a foreign or repeated seq is dropped, a missing one is asked for once),
verbatim (the quote is in that turn after NFC and whitespace-run collapsing, and
is non-empty exactly when there are facts: facts without a quote, or a quote
without facts, is a loss), padding (``none``, ``n/a``,
``unknown``…), field size, no redaction placeholder, attestation (the stage's
attested fields occur in the turn, or are names carried from earlier batches),
then the stage's own rules (rule 6: the predicate is in its closed vocabulary,
and its extra rule — an L10 offset parses, an L12 quote covers both sides).
Each dropped item or fact leaves a loss record ``{stage, check, path, reason,
raw}`` whose path is where the model put it; what survives is a draft keyed by
(seq, quote), which review may flag and never edits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.sessions.answer import MAX_FIELD_BYTES, Fact, Problem, Reading
from taguru_ray.sessions.batches import Batch
from taguru_ray.sessions.stages import BY_NAME, StageSpec
from taguru_ray.text.occurrence import Haystack, fold, name_occurs
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.text.redact import contains_placeholder
from taguru_ray.text.scripts import is_empty_name

PADDING = frozenset({"none", "n/a", "na", "unknown", "null", "nil", "-", "—", "?", "不明", "なし"})
_RUNS = re.compile(r"\s+")


@dataclass(frozen=True)
class Draft:
    """One fact as code will write it: its turn, the quote that proves it, where in the
    turn the quote sits (the blank-line paragraph of the turn's text)."""

    seq: int
    quote: str
    fact: Fact
    paragraph: int  # the quote's paragraph within the turn's text
    stage: str = "fact"  # the model stage that judged it


@dataclass
class Checked:
    drafts: list[Draft] = field(default_factory=list)
    losses: list[dict[str, Any]] = field(default_factory=list)
    corrective: list[Problem] = field(default_factory=list)
    answered: set[int] = field(default_factory=set)


def collapse(text: str) -> str:
    """The verbatim check's form: NFC, every whitespace run one space, ends trimmed."""
    return _RUNS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def quote_paragraph(quote: str, text: str) -> int | None:
    """The canonical paragraph of the turn's (trimmed) text the quote lies in; None
    when it is not verbatim there — a quote may not cross a paragraph or a turn."""
    needle = collapse(quote)
    for paragraph in split_paragraphs(text.strip()):
        if needle in collapse(paragraph.text):
            return paragraph.index
    return None


def check(
    batch: Batch,
    reading: Reading,
    carried: frozenset[str] = frozenset(),
    spec: StageSpec = BY_NAME["fact"],
) -> Checked:
    """Drafts, losses and what to ask again, for one batch's reading by one stage."""
    checked = Checked(corrective=list(reading.corrective))

    def lose(check_: str, path: str, reason: str, raw: Any) -> None:
        checked.losses.append(
            {"stage": spec.name, "check": check_, "path": path, "reason": reason, "raw": raw}
        )

    for problem in reading.removed:
        lose("schema", problem.path, problem.why, problem.raw)
    turns = {event.seq: event for event in batch.events}
    allow = frozenset(fold(name) for name in carried)
    for item in reading.items:
        if item.seq not in turns:
            lose("coverage", item.path, f"seq {item.seq} is not a turn of this batch", _raw(item))
            continue
        if item.seq in checked.answered:
            lose("coverage", item.path, f"seq {item.seq} answered twice", _raw(item))
            continue
        checked.answered.add(item.seq)
        turn = turns[item.seq]
        if not item.facts:
            # An empty quote with no facts is the contract's "nothing here". A quote with
            # none is no answer the contract has: the quote is present exactly when facts
            # are (a quote whose facts were all dropped above is not this).
            if not item.given and not is_empty_name(item.quote):
                lose("verbatim", f"{item.path}.quote", "a quote without facts", _raw(item))
            continue
        if is_empty_name(item.quote):
            lose("verbatim", item.path, "facts without a quote", _raw(item))
            continue
        paragraph = quote_paragraph(item.quote, turn.text)
        if paragraph is None:
            why = f"the quote is not verbatim in turn {item.seq}"
            lose("verbatim", f"{item.path}.quote", why, _raw(item))
            continue
        haystack = Haystack(turn.text)
        paths = item.fact_paths or tuple(
            f"{item.path}.facts[{index}]" for index in range(len(item.facts))
        )
        for where, fact in zip(paths, item.facts, strict=True):
            found = _fact_check(fact, haystack, allow, spec)
            if found is None and spec.rule is not None:
                why = spec.rule(fact, item.quote, turn, allow)
                found = ("stage_rule", why) if why else None
            if found:
                lose(found[0], where, found[1], fact.__dict__)
                continue
            checked.drafts.append(Draft(item.seq, item.quote, fact, paragraph, spec.name))
    missing = [seq for seq in turns if seq not in checked.answered]
    if missing:
        shown = ", ".join(map(str, missing[:10]))
        checked.corrective.append(
            Problem(
                "$",
                f"answer every turn of the batch: seq {shown} "
                "has no object (an empty one if nothing)",
            )
        )
    return checked


def _fact_problem(
    fact: Fact, haystack: Haystack, carried: frozenset[str], spec: StageSpec = BY_NAME["fact"]
) -> str | None:
    """Why the checks refuse the fact, or None."""
    found = _fact_check(fact, haystack, carried, spec)
    return found[1] if found else None


def _fact_check(
    fact: Fact, haystack: Haystack, carried: frozenset[str], spec: StageSpec
) -> tuple[str, str] | None:
    """(the check that refuses the fact, why), or None when it passes them all."""
    for key in ("subject", "predicate", "value"):
        value = getattr(fact, key)
        if is_empty_name(value):
            return "empty", f"{key} is empty"
        if value.strip().lower() in PADDING:
            return "padding", f"{key} is padding ({value.strip()!r})"
        if len(value.encode("utf-8")) > MAX_FIELD_BYTES:
            return "size", f"{key} is over {MAX_FIELD_BYTES} bytes"
        if contains_placeholder(value):
            return "redaction", f"{key} holds a redaction placeholder"
    for key in spec.attested:
        if not name_occurs(getattr(fact, key), haystack, carried):
            return "attestation", f"{key} {getattr(fact, key)!r} is not in the turn"
    if spec.vocabulary is not None and fact.predicate not in spec.vocabulary:
        return "vocabulary", f"predicate {fact.predicate!r} is not in the {spec.name} vocabulary"
    return None


def _raw(item: Any) -> dict[str, Any]:
    return {"seq": item.seq, "quote": item.quote, "facts": [f.__dict__ for f in item.facts]}


def unique(drafts: Sequence[Draft]) -> list[Draft]:
    """Identical facts keep their first turn (SESSIONS.md P13)."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for draft in drafts:
        key = (fold(draft.fact.subject), fold(draft.fact.predicate), fold(draft.fact.value))
        if key not in seen:
            seen.add(key)
            kept.append(draft)
    return kept
