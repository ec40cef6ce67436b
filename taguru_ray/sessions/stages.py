"""The model stages L1–L12, declared once: one judgement each, a closed vocabulary each.

Every stage asks about one batch of turns in the frozen v4 envelope (``seq``,
``quote``, ``facts[{subject, predicate, value}]``); what differs is the judgement
(its rubric), the predicates it may answer (its vocabulary — only L6 fact is free),
which fields must be words of the turn, and one extra code rule. Code checks every
answer (`checks.py`, SESSIONS.md §6) before a later stage sees anything of it, and
later stages see it only as names code assembled (`rows.carried_names`), never the
model's text. Which stages write rows to the source file is declared here too.

The default main line (ADR 0053): naming, alias, fact, event, relation, state, time,
causality, then review — the stages whose output is written or feeds what is
written. Reference, disambiguation and tone/role are judgements kept in the trace
and run on request (``--stages``). Review runs last whatever its number: it reviews
the drafts of every stage before it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from taguru_ray.errors import UsageError
from taguru_ray.sessions.answer import Fact
from taguru_ray.sessions.events import Event
from taguru_ray.sessions.timemap import interval, parse_offset
from taguru_ray.text.occurrence import Haystack, fold, name_occurs

# (fact, its quote, its turn, the carried names folded) -> why it is refused, or None
Rule = Callable[[Fact, str, Event, frozenset[str]], str | None]

NAME_KINDS = ("person", "file", "command", "tool", "project", "service", "concept", "other")
TONES = ("neutral", "urgent", "frustrated", "pleased", "uncertain")
ROLES = ("request", "question", "instruction", "proposal", "decision", "report", "agreement",
         "objection")  # fmt: skip


@dataclass(frozen=True)
class StageSpec:
    name: str
    number: int  # the seed's L-number
    rubric: str  # the one judgement, as the model is told it
    vocabulary: tuple[str, ...] | None  # the closed predicates; None: free (L6 only)
    attested: tuple[str, ...] = ("subject", "value")  # fields that must be words of the turn
    rule: Rule | None = None
    rows: bool = False  # its drafts become association lines of the source file
    names: tuple[str, ...] = ()  # fields of its drafts carried to later batches as names
    # Asked only when turns before the batch settled names, and shown only those (L4): it
    # compares the batch's names with earlier ones, never with the batch's own.
    needs_carried: bool = False
    needs_exact_time: bool = False  # asked only when a turn of the batch has an exact time

    @property
    def label(self) -> str:
        return f"L{self.number} {self.name}"


def _kind_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    return None if fact.value in NAME_KINDS else f"value {fact.value!r} is not a name kind"


def _differ_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    return "subject and value are one name" if fold(fact.subject) == fold(fact.value) else None


def _carried_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    """L4 compares a turn's name with a name earlier turns settled: ``X same_as X`` is no
    comparison (`carried` holds only the names of turns before the batch, `rows.py`)."""
    if fold(fact.value) not in carried:
        return f"value {fact.value!r} is not a name earlier turns settled"
    return _differ_rule(fact, quote, turn, carried)


def _tone_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    allowed = TONES if fact.predicate == "tone" else ROLES
    return None if fact.value in allowed else f"value {fact.value!r} is not a {fact.predicate}"


def _time_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    if not turn.ts_exact or turn.ts_ms is None:
        return f"turn {turn.seq} has no exact time to measure from"
    offset = parse_offset(fact.value)
    if offset is None:
        return f"value {fact.value!r} is not an ISO-8601 offset such as -P1W"
    try:
        interval(turn.ts_ms, offset)
    except (OverflowError, ValueError):
        return f"value {fact.value!r} reaches outside the calendar"
    return None


def _both_sides_rule(fact: Fact, quote: str, turn: Event, carried: frozenset[str]) -> str | None:
    said = Haystack(quote)
    for key in ("subject", "value"):
        if not name_occurs(getattr(fact, key), said):
            return f"{key} {getattr(fact, key)!r} is not in the quote (it must cover both sides)"
    return None


_ROWS_ABOUT = "subject and value are words of the turn"

# fmt: off
STAGES: tuple[StageSpec, ...] = (
    StageSpec(
        "naming", 1,
        "Name the things each turn names: people, files, commands, tools, projects, "
        "services, concepts. subject: the name as the turn spells it; predicate: is_a; "
        "value: its kind, one of " + ", ".join(NAME_KINDS) + ".",
        ("is_a",), attested=("subject",), rule=_kind_rule, names=("subject",),
    ),
    StageSpec(
        "alias", 2,
        "State where a turn gives one thing a second spelling (an abbreviation, a "
        "nickname, a renamed file). subject: the other spelling; predicate: alias_of; "
        "value: the name it stands for.",
        ("alias_of",), rule=_differ_rule, names=("subject", "value"),
    ),
    StageSpec(
        "reference", 3,
        "Resolve references: a word such as it, this, the script that points at a name. "
        "subject: the referring words; predicate: refers_to; value: the name.",
        ("refers_to",), rule=_differ_rule,
    ),
    StageSpec(
        "disambiguation", 4,
        "Compare the names of each turn with the names earlier turns settled (listed "
        "below). subject: the turn's name; predicate: same_as or distinct_from; value: "
        "the earlier name, spelled as listed.",
        ("same_as", "distinct_from"), rule=_carried_rule, needs_carried=True,
    ),
    StageSpec(
        "tone_role", 5,
        "Judge what each turn does and how. subject: words of the turn it is about; "
        "predicate: role or tone; value: a role (" + ", ".join(ROLES) + ") or a tone ("
        + ", ".join(TONES) + ").",
        ("role", "tone"), attested=("subject",), rule=_tone_rule,
    ),
    StageSpec(
        "fact", 6,
        "State the facts each turn asserts. predicate: a short relation in the turn's "
        "own words; " + _ROWS_ABOUT + ".",
        None, rows=True, names=("subject", "value"),
    ),
    StageSpec(
        "event", 7,
        "State what happened or was done in each turn. subject: who or what acted or "
        "changed; predicate: one of the verbs below; value: what it was done to or "
        "became; " + _ROWS_ABOUT + ".",
        ("changed", "created", "deleted", "moved", "renamed", "ran", "fixed", "failed",
         "installed", "deployed", "decided"),
        rows=True, names=("subject", "value"),
    ),
    StageSpec(
        "relation", 8,
        "State how the things a turn names relate. predicate: one of the relations "
        "below; " + _ROWS_ABOUT + ".",
        ("uses", "depends_on", "calls", "part_of", "contains", "replaces", "configures"),
        rows=True, names=("subject", "value"),
    ),
    StageSpec(
        "state", 9,
        "State the condition a thing is in as the turn describes it. predicate: one of "
        "the states below; value: the words of the turn saying the condition; "
        + _ROWS_ABOUT + ".",
        ("status_is", "version_is", "located_at", "set_to"),
        rows=True, names=("subject",),
    ),
    StageSpec(
        "time", 10,
        "Map each turn's time words (yesterday, last week, 昨日) to an offset from the "
        "turn's own time. subject: the time words as written; predicate: at; value: a "
        "relative ISO-8601 duration such as -P1D or -P1W (code computes the date).",
        ("at",), attested=("subject",), rule=_time_rule, rows=True, needs_exact_time=True,
    ),
    StageSpec(
        "review", 11,
        "Review one draft against its turn; flag, never rewrite.",
        ("flag",), attested=(),
    ),
    StageSpec(
        "causality", 12,
        "State a cause the turn itself gives (because, so, since, ので). subject: the "
        "effect; predicate: caused_by; value: the cause; the quote must hold both.",
        ("caused_by",), rule=_both_sides_rule, rows=True, names=("subject", "value"),
    ),
)
# fmt: on
BY_NAME = {spec.name: spec for spec in STAGES}
REVIEW = BY_NAME["review"]
# Run order: by number, review last (it reviews every earlier stage's drafts).
RUN_ORDER = (*(s.name for s in STAGES if s is not REVIEW), REVIEW.name)
MAIN_LINE = ("naming", "alias", "fact", "event", "relation", "state", "time", "causality",
             "review")  # fmt: skip
ROW_STAGES = tuple(s.name for s in STAGES if s.rows)


def parse_stages(text: str) -> tuple[str, ...]:
    """``--stages``: names or L-numbers, comma-separated (``naming,L6,review``; ``all``;
    ``main``), in run order. At least one stage must write rows: a session that writes
    none is an error."""
    wanted: set[str] = set()
    for token in (t.strip() for t in text.split(",")):
        if not token:
            continue
        if token in ("all", "main"):
            wanted |= set(RUN_ORDER if token == "all" else MAIN_LINE)
            continue
        number = token[1:] if token[:1] in "Ll" and token[1:].isdigit() else None
        spec = next((s for s in STAGES if str(s.number) == number), BY_NAME.get(token))
        if spec is None:
            names = ", ".join(f"{s.name} (L{s.number})" for s in STAGES)
            raise UsageError(f"--stages: no stage {token!r} — choose from {names}, all, main")
        wanted.add(spec.name)
    if not wanted & set(ROW_STAGES):
        raise UsageError(
            "--stages: pick at least one stage that writes rows ("
            + ", ".join(ROW_STAGES)
            + ") — without one, nothing the model says is written"
        )
    return tuple(name for name in RUN_ORDER if name in wanted)


def specs(names: Sequence[str]) -> tuple[StageSpec, ...]:
    return tuple(BY_NAME[name] for name in names)
