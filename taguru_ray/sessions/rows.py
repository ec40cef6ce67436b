"""Code assembly between and after the stages: what a later stage sees, what is written.

A stage's output reaches a later stage only as names code took from checked drafts
(`carried_names`): the fields each stage declares as names, from turns before the
batch asked about, oldest first, the newest `CARRYOVER_NAMES` of them — never the
model's text. After the last stage, `assemble` turns the checked drafts into the
source file's rows:

- an association per distinct draft of a row stage (fact, event, relation, state,
  time, causality; identical triples keep their first turn, P13). An L10 draft's
  offset becomes the absolute interval code computes from its turn's own time;
- a concept alias per L2 draft the file can hold: its canonical is a name the
  associations use, its spelling is not one, and no earlier alias took it. One the
  file cannot hold is a loss (check ``write``), not a silent drop.

Zero rows (the seed: "writing zero rows is an error"). A row is a turn's checked
answer (SESSIONS.md §4): one object per answerable seq, the empty one included — "no
fact here" is an answer, and a session whose every answer was that writes its passage
with no association. A fact the model stated and the checks removed leaves no row, so
when the row stages stated facts and none survived, the file would carry nothing of
what the model said: that is the error, and nothing is written. `zero_rows` decides it
from the checkpointed units alone (drafts, and the count stated), so a resumed run
decides exactly as a first run does. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from taguru_ray.contract.items import Alias
from taguru_ray.sessions.answer import Fact
from taguru_ray.sessions.batches import Batch
from taguru_ray.sessions.checks import Draft, unique
from taguru_ray.sessions.events import Event
from taguru_ray.sessions.prompt import CARRYOVER_NAMES
from taguru_ray.sessions.stages import BY_NAME, StageSpec
from taguru_ray.sessions.timemap import iso_interval, parse_offset


def carried_for(spec: StageSpec, drafts: Sequence[Draft], batch: Batch) -> list[str]:
    """The names a stage's ask about `batch` is given: settled by turns up to the batch's
    last (earlier stages' drafts of its own turns included), or, for a stage comparing
    the batch with earlier turns (L4, `needs_carried`), by turns before its first only —
    else a name of the batch is "settled" by the very turn it is compared from."""
    before = batch.seqs[0] if spec.needs_carried else batch.seqs[-1] + 1
    return carried_names(drafts, before)


def carried_names(drafts: Sequence[Draft], before: int) -> list[str]:
    """The names checked drafts of turns before seq `before` settled, oldest first."""
    names: dict[str, None] = {}
    for draft in sorted((d for d in drafts if d.seq < before), key=lambda d: d.seq):
        for key in BY_NAME[draft.stage].names:
            names.setdefault(getattr(draft.fact, key), None)
    return list(names)[-CARRYOVER_NAMES:]


def row_drafts(drafts: Sequence[Draft]) -> list[Draft]:
    """The distinct drafts of the row stages: what review sees and the file writes."""
    return unique([d for d in drafts if BY_NAME[d.stage].rows])


@dataclass
class Rows:
    stated: list[Draft] = field(default_factory=list)  # the row drafts as the checks left them
    associations: list[Draft] = field(default_factory=list)  # the same, as written
    aliases: list[Alias] = field(default_factory=list)
    alias_drafts: list[Draft] = field(default_factory=list)  # each alias's turn and quote
    losses: list[dict[str, Any]] = field(default_factory=list)


def assemble(drafts: Sequence[Draft], turns: Mapping[int, Event]) -> Rows:
    stated = row_drafts(drafts)
    rows = Rows(stated, [_written(d, turns[d.seq]) for d in stated])
    concepts = {name for d in rows.associations for name in (d.fact.subject, d.fact.value)}
    taken: set[str] = set()
    for draft in (d for d in drafts if d.stage == "alias"):
        spelling, canonical = draft.fact.subject, draft.fact.value
        why = (
            f"canonical {canonical!r} names no written concept"
            if canonical not in concepts
            else f"{spelling!r} is itself a written concept"
            if spelling in concepts
            else f"{spelling!r} is an alias already"
            if spelling in taken
            else None
        )
        if why:
            rows.losses.append(
                {"stage": "alias", "check": "write", "path": f"seq {draft.seq}",
                 "reason": why, "raw": draft.fact.__dict__}
            )  # fmt: skip
            continue
        taken.add(spelling)
        rows.aliases.append(Alias(spelling, canonical, "concept"))
        rows.alias_drafts.append(draft)
    return rows


def _written(draft: Draft, turn: Event) -> Draft:
    """The draft as its row states it: an L10 offset as the interval it names."""
    if draft.stage != "time" or turn.ts_ms is None:
        return draft
    offset = parse_offset(draft.fact.value)
    if offset is None:  # the stage rule refused it already; kept as stated
        return draft
    fact = Fact(draft.fact.subject, draft.fact.predicate, iso_interval(turn.ts_ms, offset))
    return replace(draft, fact=fact)


def zero_rows(rows: Rows, stated: int) -> str | None:
    """Why the session is refused, or None: `stated` is how many facts the row stages'
    answers stated before the checks."""
    if rows.associations or not stated:
        return None
    return f"the model stated {stated} fact(s) and the checks removed every one"
