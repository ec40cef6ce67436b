"""The simulator's answers to the memory card and always-on brief asks, rule-based and pure.

Card: every listed fact becomes one card line, quoting its whole quote; the kind is
``changed`` when the quote says so (changed, moved, renamed, replaced, switched, fixed,
変更, 差し替え, 移動, 修正), ``decided`` when it decides (decide, will, chose, use, 決め),
else ``learned``; the value is the fact as one sentence. Brief: the latest card line
per subject, at most seven, in the order shown. The same prompt always gives the same
bytes, so a test can expect exact cards.
"""

from __future__ import annotations

import json
import re

from taguru_ray.sessions.card import BRIEF_LINES, BRIEF_SYSTEM, CARD_SYSTEM

_FACT = re.compile(r"^\[seq (\d+)\] quote: ", re.MULTILINE)
_LINE = re.compile(r"^\[seq (\d+)\] \S+ (?:decided|changed|learned) — (.+?): (.+)$", re.MULTILINE)
_CHANGED = re.compile(
    r"\b(chang|mov|renam|replac|switch|swap|fix|updat)\w*|変更|差し替え|移動|修正", re.IGNORECASE
)
_DECIDED = re.compile(r"\b(decid|will\b|chose|choos|use[sd]?\b)\w*|決め|決定", re.IGNORECASE)


def is_card_ask(system: str) -> bool:
    return system.startswith(CARD_SYSTEM[:60])


def is_brief_ask(system: str) -> bool:
    return system.startswith(BRIEF_SYSTEM[:60])


def card_answer(user_turn: str) -> str:
    answers = []
    decoder = json.JSONDecoder()
    for match in _FACT.finditer(user_turn):
        quote, end = decoder.raw_decode(user_turn, match.end())
        rest = user_turn[end:].split("\n", 1)[0].removeprefix(" fact: ")
        subject, _, tail = rest.partition(" | ")
        predicate, _, value = tail.partition(" | ")
        kind = (
            "changed"
            if _CHANGED.search(quote)
            else "decided"
            if _DECIDED.search(quote)
            else "learned"
        )
        sentence = f"{subject} {predicate} {value}."
        fact = {"subject": subject, "predicate": kind, "value": sentence}
        answers.append({"seq": int(match.group(1)), "quote": quote, "facts": [fact]})
    return json.dumps(answers, ensure_ascii=False, separators=(",", ":"))


def brief_answer(user_turn: str) -> str:
    latest: dict[str, tuple[int, str]] = {}
    for match in _LINE.finditer(user_turn):
        latest[match.group(2)] = (int(match.group(1)), match.group(3))
    chosen = sorted((k, subject, text) for subject, (k, text) in latest.items())[-BRIEF_LINES:]
    answers = [
        {"seq": k, "quote": text,
         "facts": [{"subject": subject, "predicate": "standing", "value": text}]}
        for k, subject, text in chosen
    ]  # fmt: skip
    return json.dumps(answers, ensure_ascii=False, separators=(",", ":"))
