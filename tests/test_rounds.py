"""The piece program (`pipeline/rounds.py`) fed lists of completions: no asyncio, no Ray,
no files — each effect it yields is read off, each completion handed back in turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.contract.completion import Completion
from taguru_ray.pipeline.effects import Answered, Ask, Effect, LogAttempt, LogMove, Program, Say
from taguru_ray.pipeline.ladder import PROMPTED, LadderConfig
from taguru_ray.pipeline.plan import piece_from_text
from taguru_ray.pipeline.prompt import Conversation
from taguru_ray.pipeline.rounds import (
    Accepted,
    Exhausted,
    LoopPolicy,
    PieceFailed,
    PieceSpec,
    ask_overview,
    correct_once,
    glean,
    run_round,
)
from taguru_ray.pipeline.validate import Rules
from taguru_ray.text.occurrence import Haystack

TEXT = "[0] Ray runs on Kubernetes."
PIECE = piece_from_text(0, 1, TEXT)
SPEC = PieceSpec(
    PIECE,
    "a.md",
    Conversation("extract", f"Segment 'a.md':\n\n{TEXT}"),
    Rules(1, 0),
    Haystack(TEXT),
)
OFF = LoopPolicy(max_attempts=2, replay_cap=None, fact_budget=0, run_id="r")
LADDER = LoopPolicy(2, None, 0, "r", ladder=LadderConfig.of("off", 100, 2, 8))


def answer(*triples: tuple[str, str, str]) -> str:
    items = [{"subject": s, "label": label, "object": o, "paragraph": 0} for s, label, o in triples]
    return json.dumps({"associations": items, "aliases": []})


RAY = answer(("Ray", "runs on", "Kubernetes"))


def said(text: str | None, finish: str = "stop") -> Completion:
    return Completion("answer", text=text, finish_reason=finish)


def drive(program: Program[Any], completions: list[Completion]) -> tuple[Any, list[Effect]]:
    """Run the program to its end: the n-th completion answers its n-th ask."""
    effects: list[Effect] = []
    queue = iter(completions)
    result: Any = None
    while True:
        try:
            effect = program.send(result)
        except StopIteration as done:
            return done.value, effects
        effects.append(effect)
        asked = sum(isinstance(e, Ask) for e in effects)
        result = Answered(next(queue), asked) if isinstance(effect, Ask) else None


def records(effects: list[Effect], kind: type) -> list[dict[str, Any]]:
    return [e.record for e in effects if isinstance(e, kind)]  # type: ignore[attr-defined]


def test_a_valid_first_answer_is_accepted_and_logged_before_the_program_ends() -> None:
    accepted, effects = drive(run_round(SPEC, OFF, None), [said(RAY)])
    assert isinstance(accepted, Accepted) and accepted.attempt == {"run_id": "r", "attempt_seq": 1}
    assert [type(e) for e in effects] == [Ask, LogAttempt]
    [attempt] = records(effects, LogAttempt)
    assert (attempt["state"], attempt["stage"], attempt["attempt"]) == ("stop_valid", "item", 1)


def test_a_malformed_answer_earns_a_corrective_turn_that_names_it() -> None:
    accepted, effects = drive(run_round(SPEC, OFF, None), [said("not json"), said(RAY)])
    assert isinstance(accepted, Accepted)
    first, second = records(effects, LogAttempt)
    assert first["state"] == "stop_malformed" and second["corrects"] == first_ref(first)
    corrective = [e.request for e in effects if isinstance(e, Ask)][1]
    assert corrective.messages[2] == {"role": "assistant", "content": "not json"}


def first_ref(record: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": record["run_id"], "attempt_seq": record["attempt_seq"]}


def test_a_refusal_fails_the_piece_at_once_and_a_second_bad_answer_at_the_cap() -> None:
    with pytest.raises(PieceFailed, match="a policy refusal is terminal"):
        drive(run_round(SPEC, OFF, None), [said(None, "content_filter")])
    with pytest.raises(PieceFailed, match="would not produce the JSON object"):
        drive(run_round(SPEC, OFF, None), [said("x"), said("y")])


def test_on_the_ladder_a_cut_off_answer_escalates_once_then_the_round_is_exhausted() -> None:
    exhausted, effects = drive(
        run_round(SPEC, LADDER, PROMPTED), [said("{", "length"), said("{", "length")]
    )
    assert exhausted == Exhausted("length", PROMPTED, 200)
    [move] = records(effects, LogMove)
    assert (move["move"], move["from_max_tokens"], move["to_max_tokens"]) == ("escalate", 100, 200)
    budgets = [e.request.max_tokens for e in effects if isinstance(e, Ask)]
    assert budgets == [100, 200]
    # The move is logged after the attempt it follows and before the resend it causes.
    assert [type(e) for e in effects] == [Ask, LogAttempt, LogMove, Ask, LogAttempt]


def test_a_runaway_answer_is_neither_escalated_nor_corrected() -> None:
    runaway = "{" + "x" * (9 * PIECE.bytes)
    exhausted, effects = drive(run_round(SPEC, LADDER, PROMPTED), [said(runaway, "length")])
    assert isinstance(exhausted, Exhausted) and exhausted.kind == "runaway"
    assert [m["move"] for m in records(effects, LogMove)] == ["runaway"]


def test_a_timeout_on_the_ladder_exhausts_the_round_for_the_caller_to_split() -> None:
    exhausted, _ = drive(run_round(SPEC, LADDER, PROMPTED), [Completion("timeout", error="t")])
    assert exhausted == Exhausted("timeout", PROMPTED, 100)


def test_gleaning_counts_a_pass_that_adds_and_stops_at_one_that_adds_nothing() -> None:
    first = Accepted(
        drive(run_round(SPEC, OFF, None), [said(RAY)])[0].output,
        RAY,
        {"run_id": "r", "attempt_seq": 1},
        [],
        [],
    )
    more = answer(("Kubernetes", "runs", "Ray"))
    gleaned, effects = drive(glean(SPEC, OFF, None, first, 3), [said(more), said(more)])
    assert (gleaned.passes, gleaned.failed) == (2, 0)
    logged = records(effects, LogAttempt)
    assert [r["stage"] for r in logged] == ["gleaning", "gleaning"]
    assert all("corrects" not in r and r["gleans"] == first.attempt for r in logged)


def test_stage_two_takes_one_corrective_turn_and_keeps_the_issues_when_it_fails() -> None:
    corrected, effects = drive(
        correct_once(SPEC, OFF, None, RAY, ["associations[0]: x"], None), [said("nope")]
    )
    assert corrected is None
    [attempt] = records(effects, LogAttempt)
    assert attempt["stage"] == "cross_chunk"


def test_an_overview_ask_is_advisory_and_a_cut_off_one_escalates_once() -> None:
    result, effects = drive(
        ask_overview(SPEC, LADDER, PROMPTED), [said("{", "length"), said('{"units": []}')]
    )
    assert result == ('{"units": []}', None)
    assert [m["move"] for m in records(effects, LogMove)] == ["escalate"]
    result, _ = drive(ask_overview(SPEC, OFF, None), [said(None, "content_filter")])
    assert result[0] is None and "refused" in result[1]


def test_a_provider_that_ignores_the_rung_is_named() -> None:
    ladder = LoopPolicy(2, None, 0, "r", ladder=LadderConfig.of("json-object", 0, 2, 8))
    accepted, effects = drive(
        run_round(SPEC, ladder, "json_object"), [said("```json\n" + RAY + "\n```")]
    )
    assert isinstance(accepted, Accepted)
    assert any(isinstance(e, Say) and "non-conformance" in e.text for e in effects)
