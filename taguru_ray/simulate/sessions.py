"""The simulator's answers to `sessions extract` (the v4 contract), rule-based and pure.

A stage ask's user turn is ``stage: NAME`` and then the turns, ``[seq N] speaker
(time): text``. For each turn the simulated model reads the turn sentence by
sentence, with the same name rules as extraction (Latin capitalised words and
identifiers, katakana and kanji runs), and answers the stage's one judgement, always
quoting one sentence verbatim:

- naming: each name of the first sentence ``is_a`` its kind (``file`` when it holds
  ``.`` or ``/``, else ``concept``); alias: ``Short`` ``alias_of`` ``Long Name`` for a
  ``Long Name (Short)``; reference: a sentence opening with ``It``/``This`` ``refers_to``
  the last name of the sentence before; disambiguation: a name of the turn the
  system prompt does not list as settled is ``same_as`` a listed name sharing a word
  with it, else ``distinct_from`` the first listed one; tone_role: the first name's ``role`` (a
  question, a request, or a report);
- fact: the first sentence with two names, ``mentions``; event, relation, state:
  a sentence whose verb the stage's vocabulary knows (``moved``, ``talks to``,
  ``is``…); time: ``yesterday``/``last week``/``N days ago``/``昨日``/``先週`` as an
  offset; causality: a ``because`` with a name on each side, ``caused_by``.

A turn with nothing for the judgement gets the contract's empty object. A review ask
gets no flag, except for a draft whose quote says "because" — the seed's own example
of a causality to flag. The same prompt always gives the same bytes; a scripted rule
(`faults.py`, matching ``stage: NAME\\n\\n[seq N] …``) gives a bad answer for one stage.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

from taguru_ray.sessions.prompt import CONTRACT_OPENING, REVIEW_SYSTEM, STAGE_LINE
from taguru_ray.simulate.names import names_and_aliases, names_in

_TURN = re.compile(r"^\[seq (\d+)\] \S+(?: \([^)\n]*\))?: ", re.MULTILINE)
# A sentence ends at 。！？, or at . ! ? before a space or the end (not inside a file name).
_SENTENCE = re.compile(r"[^\n]+?(?:[。！？]|[.!?](?=\s|$)|$)", re.MULTILINE)
_REVIEWED = re.compile(r"^Draft of seq (\d+): (\{.*\})$", re.MULTILINE)
_SETTLED = re.compile(r"^Names earlier turns of this session settled[^:]*: (.*)$", re.MULTILINE)

Fact = dict[str, str]
Judge = Callable[[list[str], frozenset[str]], tuple[str, list[Fact]] | None]


def is_sessions_ask(system: str) -> bool:
    return system.startswith(CONTRACT_OPENING)


def is_review_ask(system: str) -> bool:
    return system.startswith(REVIEW_SYSTEM[:60])


def turns(user_turn: str) -> list[tuple[int, str]]:
    """(seq, text) of each ``[seq N]`` block."""
    found = list(_TURN.finditer(user_turn))
    out = []
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(user_turn)
        out.append((int(match.group(1)), user_turn[match.end() : end].strip()))
    return out


def batch_answer(user_turn: str, system: str = "") -> str:
    """One object per turn: the stage's judgement of its sentences, or the empty one."""
    first = user_turn.split("\n", 1)[0]
    stage = first[len(STAGE_LINE) :].strip() if first.startswith(STAGE_LINE) else "fact"
    judge = JUDGES.get(stage, _fact)
    settled = _settled(system)
    answers = []
    for seq, text in turns(user_turn):
        found = judge(sentences(text), settled)
        quote, facts = found if found else ("", [])
        answers.append({"seq": seq, "quote": quote, "facts": facts})
    return json.dumps(answers, ensure_ascii=False, separators=(",", ":"))


def review_answer(user_turn: str) -> str:
    match = _REVIEWED.search(user_turn)
    if match is None:
        return "[]"
    seq = int(match.group(1))
    quote = user_turn.rsplit("Its quote: ", 1)[-1]
    facts = []
    if "because" in quote.lower():
        facts.append({"subject": "value", "predicate": "flag", "value": "unsupported_causality"})
    return json.dumps([{"seq": seq, "quote": "", "facts": facts}], separators=(",", ":"))


def sentences(text: str) -> list[str]:
    return [s for m in _SENTENCE.finditer(text) if (s := m.group(0).strip())]


def _settled(system: str) -> frozenset[str]:
    match = _SETTLED.search(system)
    if match is None:
        return frozenset()
    try:
        return frozenset(json.loads(f"[{match.group(1)}]"))
    except ValueError:
        return frozenset()


# -- one judge per stage: (the turn's sentences, settled names) -> (quote, facts) ----------


def _naming(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    if not said or not (names := names_in(said[0])):
        return None
    facts = [
        {"subject": n, "predicate": "is_a", "value": "file" if "." in n or "/" in n else "concept"}
        for n in names[:3]
    ]
    return said[0], facts


def _alias(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    for sentence in said:
        pairs = names_and_aliases(sentence)[1]
        if pairs:
            short, name = pairs[0]
            return sentence, [{"subject": short, "predicate": "alias_of", "value": name}]
    return None


def _reference(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    for before, sentence in itertools.pairwise(said):
        word = sentence.split(" ", 1)[0]
        names = names_in(before)
        if word in ("It", "This") and names:
            return sentence, [{"subject": word, "predicate": "refers_to", "value": names[-1]}]
    return None


def _disambiguation(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    """A name of the turn no earlier turn settled, against a settled one: ``same_as`` the
    settled name it is a word of (or that is a word of it), else ``distinct_from`` the
    first settled name in sort order. A settled name met again is no comparison."""
    if not settled:
        return None
    for sentence in said:
        for name in (n for n in names_in(sentence) if n not in settled):
            words = set(name.split())
            same = sorted(o for o in settled if words & set(o.split()) and o != name)
            predicate, other = ("same_as", same[0]) if same else ("distinct_from", min(settled))
            return sentence, [{"subject": name, "predicate": predicate, "value": other}]
    return None


def _tone_role(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    if not said or not (names := names_in(said[0])):
        return None
    sentence = said[0]
    role = (
        "question"
        if sentence.endswith(("?", "？"))
        else "request"
        if sentence.split(" ", 1)[0] in ("Please", "Can", "Could")
        else "report"
    )
    return sentence, [{"subject": names[0], "predicate": "role", "value": role}]


def _fact(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    if not said:
        return None
    names = names_in(said[0])
    if len(names) >= 2 and names[0] != names[-1]:
        return said[0], [{"subject": names[0], "predicate": "mentions", "value": names[-1]}]
    return None


def _by_verb(verbs: dict[str, str]) -> Judge:
    """A judge stating (first name, the verb's predicate, last name) of the first sentence
    whose words hold one of `verbs` between two names."""

    def judge(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
        for sentence in said:
            names = names_in(sentence)
            lowered = f" {sentence.lower()} "
            verb = next((v for v in verbs if f" {v} " in lowered), None)
            if verb and len(names) >= 2 and names[0] != names[-1]:
                fact = {"subject": names[0], "predicate": verbs[verb], "value": names[-1]}
                return sentence, [fact]
        return None

    return judge


_NOT_STATES = frozenset({"a", "an", "the", "not", "none", "unknown"})
_STATE = re.compile(r"\b(is|was) (?:now )?([A-Za-z][\w.-]*[A-Za-z0-9])")


def _state(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    for sentence in said:
        names = names_in(sentence)
        match = _STATE.search(sentence)
        if names and match and sentence.find(names[0]) < match.start():
            value = match.group(2)
            if value.lower() not in _NOT_STATES and value != names[0]:
                return sentence, [{"subject": names[0], "predicate": "status_is", "value": value}]
    return None


_TIMES = (
    (re.compile(r"\byesterday\b", re.IGNORECASE), lambda m: "-P1D"),
    (re.compile(r"\blast week\b", re.IGNORECASE), lambda m: "-P1W"),
    (re.compile(r"\blast month\b", re.IGNORECASE), lambda m: "-P1M"),
    (re.compile(r"\b(\d{1,3}) days ago\b", re.IGNORECASE), lambda m: f"-P{m.group(1)}D"),
    (re.compile(r"\b(\d{1,3}) hours ago\b", re.IGNORECASE), lambda m: f"-PT{m.group(1)}H"),
    (re.compile(r"昨日"), lambda m: "-P1D"),
    (re.compile(r"先週"), lambda m: "-P1W"),
)


def _time(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    for sentence in said:
        for pattern, offset in _TIMES:
            match = pattern.search(sentence)
            if match:
                fact = {"subject": match.group(0), "predicate": "at", "value": offset(match)}
                return sentence, [fact]
    return None


def _causality(said: list[str], settled: frozenset[str]) -> tuple[str, list[Fact]] | None:
    for sentence in said:
        effect, because, cause = sentence.partition(" because ")
        before, after = names_in(effect), names_in(cause)
        if because and before and after and before[-1] != after[0]:
            fact = {"subject": before[-1], "predicate": "caused_by", "value": after[0]}
            return sentence, [fact]
    return None


JUDGES: dict[str, Judge] = {
    "naming": _naming,
    "alias": _alias,
    "reference": _reference,
    "disambiguation": _disambiguation,
    "tone_role": _tone_role,
    "fact": _fact,
    "event": _by_verb({
        "moved": "moved", "renamed": "renamed", "changed": "changed", "swapped": "changed",
        "created": "created", "deleted": "deleted", "fixed": "fixed", "deployed": "deployed",
        "installed": "installed", "ran": "ran", "failed": "failed",
    }),
    "relation": _by_verb({
        "uses": "uses", "depends on": "depends_on", "calls": "calls", "talks to": "calls",
        "is part of": "part_of", "contains": "contains", "replaces": "replaces",
        "configures": "configures",
    }),
    "state": _state,
    "time": _time,
    "causality": _causality,
}  # fmt: skip
