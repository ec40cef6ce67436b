"""The memory card and brief asks (sessions/card.py): what code keeps of an answer — every
kept line cites a listed fact's turn, verbatim — and the simulator's deterministic answers
(simulate/memory.py) read back whole."""

from __future__ import annotations

import json

from taguru_ray.sessions.card import (
    BRIEF_LINES,
    brief_messages,
    card_messages,
    read_brief,
    read_card,
)
from taguru_ray.sessions.memory import BriefLine, Card, CardLine, Fact
from taguru_ray.simulate.answers import answer
from taguru_ray.simulate.memory import is_brief_ask, is_card_ask

FACTS = [
    Fact(2, "I moved the Deploy Script to build-release.sh.", "Deploy Script", "moved to",
         "build-release.sh"),
    Fact(5, "We decided to use Ray for the workers.", "workers", "use", "Ray"),
    Fact(7, "The Raspberry Pi needs 5 V.", "Raspberry Pi", "needs", "5 V"),
]  # fmt: skip


def ask(text: list[dict[str, object]]) -> str:
    return json.dumps(text, ensure_ascii=False)


def test_the_simulator_answers_a_card_ask_and_every_line_cites_its_fact() -> None:
    messages = card_messages("cc:3f2a", FACTS)
    assert is_card_ask(messages[0]["content"]) and not is_brief_ask(messages[0]["content"])
    text = answer(messages)
    assert answer(messages) == text  # the same prompt, the same bytes
    kept = read_card(text, FACTS)
    assert kept.readable and kept.removed == ()
    assert kept.lines == (
        CardLine(2, "changed", "Deploy Script", "Deploy Script moved to build-release.sh."),
        CardLine(5, "decided", "workers", "workers use Ray."),
        CardLine(7, "learned", "Raspberry Pi", "Raspberry Pi needs 5 V."),
    )


def test_card_checks_drop_what_does_not_cite_a_listed_fact() -> None:
    good = {"subject": "workers", "predicate": "decided", "value": "Ray runs the workers."}
    text = ask([
        {"seq": 9, "quote": "x", "facts": [good]},
        {"seq": 5, "quote": "We chose Ray", "facts": [good]},
        {"seq": 5, "quote": "decided to use Ray", "facts": [
            {**good, "predicate": "believes"},
            {**good, "subject": "Raspberry Pi"},
            {**good, "value": "key «redacted aws_access_key 1a2b3c4d»"},
            {**good, "value": "n/a"},
            good,
            good,
        ]},
        {"seq": 7, "quote": "", "facts": []},
        {"seq": 2, "quote": "moved", "ok": True, "facts": [good]},
    ])  # fmt: skip
    kept = read_card(text, FACTS)
    assert kept.lines == (CardLine(5, "decided", "workers", "Ray runs the workers."),)
    assert kept.removed == (
        "$[4].ok: a key outside the v4 contract",
        "$[0]: seq 9 is not a listed fact's turn",
        "$[1].quote: not verbatim in a quote of seq 5",
        "$[2].facts[0]: predicate 'believes' is not one of decided, changed, learned",
        "$[2].facts[1]: subject is not the subject of a fact of that turn",
        "$[2].facts[2]: value holds a redaction placeholder",
        "$[2].facts[3]: value is padding ('n/a')",
    )


def test_an_answer_that_is_not_an_array_is_unreadable_so_the_card_stays_pending() -> None:
    assert not read_card("sorry, I cannot", FACTS).readable
    assert not read_card('{"seq": 1}', FACTS).readable
    assert read_card("[]", FACTS).readable  # nothing worth a line: an empty card


def cards() -> list[Card]:
    return [
        Card("cc:aaaa", "project:app", (
            CardLine(2, "changed", "deploy script", "The deploy script is deploy.sh."),
            CardLine(4, "learned", "Pi", "The Pi needs 5 V."),
        )),
        Card("cx:bbbb", "project:app", (
            CardLine(1, "changed", "deploy script", "The deploy script is build-release.sh."),
        )),
    ]  # fmt: skip


def test_the_simulator_answers_a_brief_ask_with_the_latest_line_per_subject() -> None:
    messages = brief_messages("project:app", cards())
    assert is_brief_ask(messages[0]["content"]) and not is_card_ask(messages[0]["content"])
    kept = read_brief(answer(messages), cards())
    assert kept.readable and kept.removed == ()
    assert kept.lines == (
        BriefLine("cc:aaaa#4", "The Pi needs 5 V."),
        BriefLine("cx:bbbb#1", "The deploy script is build-release.sh."),
    )


def test_brief_checks_map_lines_to_handles_and_keep_at_most_seven() -> None:
    many = [Card("cc:aaaa", "p", tuple(CardLine(i, "learned", f"s{i}", f"fact {i}.")
                                       for i in range(10)))]  # fmt: skip
    items = [{"seq": k, "quote": f"fact {k}", "facts": [
        {"subject": f"s{k}", "predicate": "standing", "value": f"fact {k} stands."}]}
        for k in range(10)]  # fmt: skip
    items.append({"seq": 12, "quote": "x", "facts": []})
    items.append({"seq": 1, "quote": "not there", "facts": items[1]["facts"]})
    kept = read_brief(ask(items), many)
    assert [line.handle for line in kept.lines] == [f"cc:aaaa#{i}" for i in range(BRIEF_LINES)]
    assert kept.removed == (
        "$[10]: seq 12 is not a card line shown",
        "$[11].quote: not verbatim in card line 1",
        f"$: 10 lines, the brief keeps the first {BRIEF_LINES}",
    )
