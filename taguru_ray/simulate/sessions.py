"""The simulator's answers to `sessions extract` (the v4 contract), rule-based and pure.

A batch ask lists turns as ``[seq N] speaker (time): text``. For each turn the
simulated model quotes the turn's first sentence, verbatim, and states one fact
when that sentence holds two names (the same name rules as extraction: Latin
capitalised words and identifiers, katakana and kanji runs): subject the first,
value the last, predicate ``mentions``. A turn with fewer names gets the
contract's empty object. A review ask gets no flag, except for a draft whose
quote says "because" — the seed's own example of a causality to flag. The same
prompt always gives the same bytes.
"""

from __future__ import annotations

import json
import re

from taguru_ray.sessions.prompt import EXTRACT_SYSTEM, REVIEW_SYSTEM
from taguru_ray.simulate.answers import names_in

_TURN = re.compile(r"^\[seq (\d+)\] \S+(?: \([^)\n]*\))?: ", re.MULTILINE)
# A sentence ends at 。！？, or at . ! ? before a space or the end (not inside a file name).
_SENTENCE = re.compile(r"[^\n]+?(?:[。！？]|[.!?](?=\s|$)|$)", re.MULTILINE)
_REVIEWED = re.compile(r"^Draft of seq (\d+): (\{.*\})$", re.MULTILINE)


def is_sessions_ask(system: str) -> bool:
    return system.startswith(EXTRACT_SYSTEM.split("\n", 1)[0])


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


def batch_answer(user_turn: str) -> str:
    answers = []
    for seq, text in turns(user_turn):
        sentence = _first_sentence(text)
        names = names_in(sentence) if sentence else []
        if len(names) >= 2 and names[0] != names[-1]:
            fact = {"subject": names[0], "predicate": "mentions", "value": names[-1]}
            answers.append({"seq": seq, "quote": sentence, "facts": [fact]})
        else:
            answers.append({"seq": seq, "quote": "", "facts": []})
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


def _first_sentence(text: str) -> str:
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            return sentence
    return ""
