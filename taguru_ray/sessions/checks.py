"""Code checks first (SESSIONS.md §6): what code can decide never goes to the model.

Over one batch's reading, in order: coverage (the answered seqs are exactly the
batch's: a foreign or repeated seq is dropped, a missing one is asked for once),
verbatim (the quote is in that turn after NFC and whitespace-run collapsing, and
is non-empty exactly when there are facts), attestation (subject and value occur
in the quote or the turn, or are names carried from earlier batches), padding
(``none``, ``n/a``, ``unknown``…), field size, and no redaction placeholder.
Each dropped item or fact leaves a loss record ``{path, reason, raw}``; what
survives is a draft keyed by (seq, quote), which review may flag and never edits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.sessions.answer import MAX_FIELD_BYTES, Fact, Problem, Reading
from taguru_ray.sessions.batches import Batch
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


def check(batch: Batch, reading: Reading, carried: frozenset[str] = frozenset()) -> Checked:
    """Drafts, losses and what to ask again, for one batch's reading."""
    checked = Checked(corrective=list(reading.corrective))
    checked.losses += [_loss(p.path, p.why, p.raw) for p in reading.removed]
    turns = {event.seq: event for event in batch.events}
    for item in reading.items:
        if item.seq not in turns:
            checked.losses.append(
                _loss(item.path, f"seq {item.seq} is not a turn of this batch", _raw(item))
            )
            continue
        if item.seq in checked.answered:
            checked.losses.append(_loss(item.path, f"seq {item.seq} answered twice", _raw(item)))
            continue
        checked.answered.add(item.seq)
        text = turns[item.seq].text
        if not item.facts:
            continue  # an empty quote with no facts is the contract's "nothing here"
        if is_empty_name(item.quote):
            checked.losses.append(_loss(item.path, "facts without a quote", _raw(item)))
            continue
        paragraph = quote_paragraph(item.quote, text)
        if paragraph is None:
            checked.losses.append(
                _loss(
                    f"{item.path}.quote",
                    f"the quote is not verbatim in turn {item.seq}",
                    _raw(item),
                )
            )
            continue
        haystack = Haystack(text)
        allow = frozenset(fold(name) for name in carried)
        for index, fact in enumerate(item.facts):
            why = _fact_problem(fact, haystack, allow)
            if why:
                where = f"{item.path}.facts[{index}]"
                checked.losses.append(_loss(where, why, fact.__dict__))
                continue
            checked.drafts.append(Draft(item.seq, item.quote, fact, paragraph))
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


def _fact_problem(fact: Fact, haystack: Haystack, carried: frozenset[str]) -> str | None:
    for key in ("subject", "predicate", "value"):
        value = getattr(fact, key)
        if is_empty_name(value):
            return f"{key} is empty"
        if value.strip().lower() in PADDING:
            return f"{key} is padding ({value.strip()!r})"
        if len(value.encode("utf-8")) > MAX_FIELD_BYTES:
            return f"{key} is over {MAX_FIELD_BYTES} bytes"
        if contains_placeholder(value):
            return f"{key} holds a redaction placeholder"
    for key in ("subject", "value"):
        if not name_occurs(getattr(fact, key), haystack, carried):
            return f"{key} {getattr(fact, key)!r} is not in the turn"
    return None


def _raw(item: Any) -> dict[str, Any]:
    return {"seq": item.seq, "quote": item.quote, "facts": [f.__dict__ for f in item.facts]}


def _loss(path: str, reason: str, raw: Any) -> dict[str, Any]:
    return {"path": path, "reason": reason, "raw": raw}


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
