"""Faults the simulator injects: which request gets one, and what it looks like.

A request's fault comes from the script first (request-matched rules, checked
in order, the first rule that fires wins), then from the seeded rates (one
draw per request, kinds checked in `FAULT_KINDS` order). Everything here is
pure given its inputs and an RNG; the server owns the RNG and the clock.

Kinds and what the client sees:

- `429`, `500`, `503`: that HTTP status with an OpenAI-style error body
  (429 also carries `Retry-After`).
- `401`, `403`, `404`: a refused key, a key without access, an unknown model
  (`model_not_found`) — what no retry mends; a script rule with `after` makes a
  key revoked mid-run.
- `stall`: the request hangs, holding its slot, then answers normally.
- `malformed`: status 200, content that is not JSON (a cut-off object).
- `fenced`: the answer inside a ```json fence after a line of prose, as a
  server that ignores `response_format` sends it.
- `truncated`: the answer cut in half, `finish_reason: "length"`.
- `runaway`: ~20 KB of repetitive fabricated associations, cut off,
  `finish_reason: "length"`.
- `empty`: content "" with `finish_reason: "stop"`.
- `refusal`: content null with `finish_reason: "content_filter"`.
- `fabricated`: the answer plus one association whose object is a name the
  text does not contain.
- `foreign`: the answer plus one association labelled `适用法律`, an
  ideograph outside the Japanese repertoire.

Contract faults — valid JSON whose items break the answer contract, each
aimed at one path of the validate/reconcile steps (they need the answer to
have at least one association; without one — an overview answer, say — the
plain answer goes out, and so it does for `fabricated` and `foreign`):

- `bad_weight`: the first association's weight is the string "strong" (a
  corrective issue).
- `empty_field`: one more association whose object is "" (a mechanical
  removal).
- `self_alias`: an alias mapping the first subject to itself (a removal).
- `shadow_alias`: an alias whose spelling is the first association's object
  (a Stage 2 shadowing issue).
- `conflict_alias`: two aliases mapping one new spelling to two different
  names (a Stage 2 conflict).
- `dangling_alias`: an alias whose canonical names nothing (a Stage 2 prune).

A rule may carry an `answer` instead of a `fault`: the content to answer with,
verbatim (a JSON object is sent as its compact text), `finish_reason: "stop"`
— a scripted model whose answers do not depend on the prompt, counted under
the outcome `scripted`.

Wire faults, which fire only when the request asks for a
`{"type": "json_schema"}` response_format (otherwise the request is served
normally):

- `reject_schema`: status 400, as a server that does not support the
  parameter answers.
- `schema_loop`: the model loops under constrained decoding: schema-shaped
  output until `max_tokens` (`finish_reason: "length"`), or, with no cap, a
  stall until the client gives up.

Its length (over 400 lines) is a catalogue's: one small section per fault a
real endpoint shows.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from taguru_ray.simulate.answers import cut_utf8

FaultKind = Literal[
    "429",
    "500",
    "503",
    "stall",
    "malformed",
    "fenced",
    "truncated",
    "runaway",
    "empty",
    "refusal",
    "fabricated",
    "foreign",
    "bad_weight",
    "empty_field",
    "self_alias",
    "shadow_alias",
    "conflict_alias",
    "dangling_alias",
    "reject_schema",
    "schema_loop",
    "401",
    "403",
    "404",
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
HTTP_FAULTS: frozenset[FaultKind] = frozenset({"429", "500", "503", "401", "403", "404"})
SCHEMA_FAULTS: frozenset[FaultKind] = frozenset({"reject_schema", "schema_loop"})

MALFORMED_CONTENT = '{"associations": [{"subject": "x"'
FENCE_PROSE = "Here is the extracted JSON:"
FOREIGN_LABEL = "适用法律"
RUNAWAY_BYTES = 20 * 1024
# Names a document about anything rarely contains; the first one absent from
# the request's text is the fabricated object.
_FABRICATED_NAMES = ("MongoDB", "Cassandra", "Kubernetes cluster autoscaler", "Elasticsearch")

_RULE_KEYS = frozenset(
    {"match", "fault", "answer", "times", "after", "retry_after", "stall_seconds"}
)


class ScriptError(ValueError):
    """A script rule or fault rate the simulator cannot use; says which and why."""


@dataclass(frozen=True)
class Fault:
    """The fault chosen for one request; None fields take the server default."""

    kind: FaultKind | None
    retry_after: float | None = None
    stall_seconds: float | None = None
    answer: str | None = None  # a scripted answer (kind None)


@dataclass(frozen=True)
class Completion:
    """What the model "generated": the message content and why it stopped."""

    content: str | None
    finish_reason: str


@dataclass(frozen=True)
class ScriptRule:
    """One request-matched rule (`match` absent = every request): a fault, or an answer."""

    fault: FaultKind | None
    match: str | None = None
    times: int | None = None
    after: int = 0
    retry_after: float | None = None
    stall_seconds: float | None = None
    answer: str | None = None

    def matches(self, user_turn: str) -> bool:
        return self.match is None or self.match in user_turn

    def to_json(self) -> dict[str, Any]:
        """The rule as the object it was written as (defaults left out)."""
        out: dict[str, Any] = {"fault": self.fault} if self.fault else {"answer": self.answer}
        if self.match is not None:
            out["match"] = self.match
        if self.times is not None:
            out["times"] = self.times
        if self.after:
            out["after"] = self.after
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        if self.stall_seconds is not None:
            out["stall_seconds"] = self.stall_seconds
        return out


def parse_rule(value: object, where: str = "") -> ScriptRule:
    """One rule object, validated; `where` names it in error messages."""
    prefix = f"script rule {where}".rstrip() + ": "
    if not isinstance(value, Mapping):
        raise ScriptError(f"{prefix}expected an object, got {json.dumps(value)}")
    unknown = sorted(set(value) - _RULE_KEYS)
    if unknown:
        raise ScriptError(
            f"{prefix}unknown key {unknown[0]!r} (known: {', '.join(sorted(_RULE_KEYS))})"
        )
    answer = value.get("answer")
    if answer is not None:
        if "fault" in value:
            raise ScriptError(f"{prefix}give a 'fault' or an 'answer', not both")
        if isinstance(answer, Mapping):
            answer = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        if not isinstance(answer, str):
            raise ScriptError(f"{prefix}'answer' must be a string or an object")
    fault = value.get("fault")
    if isinstance(fault, int) and not isinstance(fault, bool):
        fault = str(fault)
    if answer is None and fault not in FAULT_KINDS:
        raise ScriptError(
            f"{prefix}'fault' must be one of {', '.join(FAULT_KINDS)}, got {json.dumps(fault)}"
        )
    match = value.get("match")
    if match is not None and not isinstance(match, str):
        raise ScriptError(f"{prefix}'match' must be a string, got {json.dumps(match)}")
    return ScriptRule(
        fault=fault,
        match=match,
        times=_count(value, "times", prefix),
        after=_count(value, "after", prefix) or 0,
        retry_after=_seconds(value, "retry_after", prefix),
        stall_seconds=_seconds(value, "stall_seconds", prefix),
        answer=answer,
    )


def parse_rules(value: object) -> list[ScriptRule]:
    """A JSON array of rules (the body of `POST /script`)."""
    if not isinstance(value, list):
        raise ScriptError(f"script: expected a JSON array of rules, got {type(value).__name__}")
    return [parse_rule(item, f"#{i + 1}") for i, item in enumerate(value)]


def parse_script_text(text: str) -> list[ScriptRule]:
    """The rules of a `--script` file: a JSON array, or one rule per line (JSONL)."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return parse_rules(whole)
    if isinstance(whole, Mapping):
        return [parse_rule(whole, "#1")]
    rules: list[ScriptRule] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScriptError(f"script line {number}: not JSON ({exc.msg})") from None
        rules.append(parse_rule(item, f"on line {number}"))
    return rules


class Script:
    """The current rules and, per rule, how many requests it has matched.

    A rule counts a request when it is consulted and matches; rules after the
    one that fires are not consulted. So `[{"fault":"429","times":1},
    {"fault":"500","times":1}]` answers 429, then 500, then normally.
    A lock keeps check-and-count atomic, whatever thread calls `pick`.
    """

    def __init__(self, rules: Iterable[ScriptRule] = ()) -> None:
        self._lock = threading.Lock()
        self._rules = list(rules)
        self._matched = [0] * len(self._rules)

    @property
    def rules(self) -> list[ScriptRule]:
        with self._lock:
            return list(self._rules)

    def replace(self, rules: Iterable[ScriptRule]) -> None:
        """Swap in new rules, each with its counter at zero."""
        rules = list(rules)
        with self._lock:
            self._rules = rules
            self._matched = [0] * len(rules)

    def reset_counters(self) -> None:
        with self._lock:
            self._matched = [0] * len(self._rules)

    def pick(self, user_turn: str) -> Fault | None:
        """The fault of the first rule that fires for this request, if any."""
        with self._lock:
            for i, rule in enumerate(self._rules):
                if not rule.matches(user_turn):
                    continue
                seen = self._matched[i]
                self._matched[i] += 1
                if seen < rule.after:
                    continue
                if rule.times is not None and seen >= rule.after + rule.times:
                    continue
                return Fault(rule.fault, rule.retry_after, rule.stall_seconds, rule.answer)
        return None


def parse_fault_rate(text: str) -> tuple[FaultKind, float]:
    """`KIND=P` as given to `--fault-rate`."""
    kind, sep, rate = text.partition("=")
    if not sep:
        raise ScriptError(f"expected KIND=P, got {text!r}")
    if kind not in FAULT_KINDS:
        raise ScriptError(f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
    try:
        p = float(rate)
    except ValueError:
        raise ScriptError(f"{kind}: rate must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= p <= 1.0:
        raise ScriptError(f"{kind}: rate must be in [0, 1], got {rate}")
    return kind, p


def fault_rates(pairs: Iterable[tuple[FaultKind, float]]) -> dict[FaultKind, float]:
    """Collect `--fault-rate` values; each kind once, rates summing to at most 1."""
    rates: dict[FaultKind, float] = {}
    for kind, p in pairs:
        if kind in rates:
            raise ScriptError(f"{kind} given more than once")
        rates[kind] = p
    total = sum(rates.values())
    if total > 1.0 + 1e-9:
        raise ScriptError(
            f"the rates sum to {total:g}; one request draws at most one fault, so keep it <= 1"
        )
    return rates


def pick_rate_fault(rates: Mapping[FaultKind, float], rng: random.Random) -> FaultKind | None:
    """One draw: the kind whose slice of [0, 1) the draw lands in, else None.

    Draws even with no rates set, so the sequence of draws (and with it the
    outcome of request k) does not depend on whether a script rule fired.
    """
    u = rng.random()
    edge = 0.0
    for kind in FAULT_KINDS:
        edge += rates.get(kind, 0.0)
        if u < edge:
            return kind
    return None


def completion_for(kind: FaultKind | None, answer: str, haystack: str) -> Completion:
    """What a request with fault `kind` (None = no fault) gets as content.

    `answer` is the rule-based answer, `haystack` the text the names must
    occur in. HTTP faults have no content; asking for one is a bug.
    """
    if kind in HTTP_FAULTS:
        raise ValueError(f"fault {kind} answers with an HTTP error, not content")
    if kind is None or kind == "stall":
        return Completion(answer, "stop")
    if kind == "malformed":
        return Completion(MALFORMED_CONTENT, "stop")
    if kind == "fenced":
        return Completion(f"{FENCE_PROSE}\n```json\n{answer}\n```", "stop")
    if kind == "truncated":
        return Completion(cut_utf8(answer, len(answer.encode("utf-8")) // 2), "length")
    if kind in ("runaway", "schema_loop"):
        return Completion(_RUNAWAY, "length")
    if kind == "empty":
        return Completion("", "stop")
    if kind == "refusal":
        return Completion(None, "content_filter")
    if kind in CONTRACT_FAULTS:
        return Completion(_breaking_contract(kind, answer), "stop")
    return Completion(_with_extra_association(kind, answer, haystack), "stop")


CONTRACT_FAULTS: frozenset[FaultKind] = frozenset(
    {"bad_weight", "empty_field", "self_alias", "shadow_alias", "conflict_alias", "dangling_alias"}
)
CONFLICT_SPELLING = "the same one"
DANGLING_CANONICAL = "存在しない"


def _breaking_contract(kind: FaultKind, answer: str) -> str:
    """The answer with one contract fault of `kind` added (see the module docstring)."""
    out = json.loads(answer)
    associations = out.get("associations")
    if not associations:  # none to break, or an answer of another shape (the overview's)
        return answer
    first = associations[0]
    subject, obj = first["subject"], first["object"]
    aliases: list[dict[str, Any]] = out.setdefault("aliases", [])
    if kind == "bad_weight":
        first["weight"] = "strong"
    elif kind == "empty_field":
        associations.append({"subject": subject, "label": first["label"], "object": ""})
    elif kind == "self_alias":
        aliases.append({"alias": subject, "canonical": subject, "kind": "concept"})
    elif kind == "shadow_alias":
        aliases.append({"alias": obj, "canonical": subject, "kind": "concept"})
    elif kind == "conflict_alias":
        aliases.append({"alias": CONFLICT_SPELLING, "canonical": subject, "kind": "concept"})
        aliases.append({"alias": CONFLICT_SPELLING, "canonical": obj, "kind": "concept"})
    else:
        aliases.append({"alias": subject + "?", "canonical": DANGLING_CANONICAL, "kind": "concept"})
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _with_extra_association(kind: FaultKind, answer: str, haystack: str) -> str:
    """The answer plus the `fabricated` or `foreign` association.

    An answer of another shape (the overview's, which has no associations) is
    sent as it is.
    """
    out = json.loads(answer)
    associations = out.get("associations")
    if not isinstance(associations, list):
        return answer
    absent = _absent_names(haystack)
    first = associations[0] if associations else None
    if kind == "fabricated":
        extra: dict[str, Any] = {
            "subject": first["subject"] if first else next(absent),
            "label": "uses",
            "object": next(absent),
        }
    else:
        extra = {
            "subject": first["subject"] if first else next(absent),
            "label": FOREIGN_LABEL,
            "object": first["object"] if first else next(absent),
        }
    extra["weight"] = 1.0
    if first and "paragraph" in first:
        extra["paragraph"] = first["paragraph"]
    associations.append(extra)
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _absent_names(haystack: str) -> Iterator[str]:
    folded = haystack.casefold()
    yield from (n for n in _FABRICATED_NAMES if n.casefold() not in folded)
    n = 1
    while True:
        name = f"Fabricated Entity {n}"
        if name.casefold() not in folded:
            yield name
        n += 1


def _runaway_content() -> str:
    """A schema-shaped answer that never closes, like a model stuck in a loop."""
    parts = ['{"associations":[']
    size = len(parts[0])
    i = 0
    while size < RUNAWAY_BYTES:
        item = (
            f'{{"subject":"Entity {i}","label":"related to","object":"Entity {i + 1}",'
            f'"weight":1.0,"paragraph":0}},'
        )
        parts.append(item)
        size += len(item)
        i += 1
    return "".join(parts)[:RUNAWAY_BYTES]  # ASCII, so characters are bytes


_RUNAWAY = _runaway_content()


def _count(value: Mapping[str, Any], key: str, prefix: str) -> int | None:
    got = value.get(key)
    if got is None:
        return None
    if isinstance(got, bool) or not isinstance(got, int) or got < 0:
        raise ScriptError(f"{prefix}{key!r} must be a whole number >= 0, got {json.dumps(got)}")
    return got


def _seconds(value: Mapping[str, Any], key: str, prefix: str) -> float | None:
    got = value.get(key)
    if got is None:
        return None
    number = not isinstance(got, bool) and isinstance(got, int | float)
    if not number or not math.isfinite(got) or got < 0:
        raise ScriptError(
            f"{prefix}{key!r} must be a number of seconds >= 0, got {json.dumps(got)}"
        )
    return float(got)
