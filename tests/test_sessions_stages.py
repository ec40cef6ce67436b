"""The model stages L1–L12 in memory, the simulator answering: one judgement each, each
stage's bad answer removed with its exact loss record, the rows code assembles from
them, a kill mid-stage resumed with no batch asked twice, and one zero-rows rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline import effects as fx
from taguru_ray.pipeline.segment_job import Resume, SegmentJob
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.sessions import answer, checks, stage_metrics
from taguru_ray.sessions.batches import Batch, candidates
from taguru_ray.sessions.events import Event, Origin, Session
from taguru_ray.sessions.program import extract_session, stage
from taguru_ray.sessions.stages import BY_NAME, MAIN_LINE, RUN_ORDER, parse_stages
from taguru_ray.sessions.timemap import iso_interval, parse_offset
from taguru_ray.settings import Settings
from taguru_ray.simulate.answers import answer as simulated
from tests.program_world import World

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
T0 = 1_760_000_000_000  # 2025-10-09T08:53:20Z


def event(seq: int, text: str, kind: str = "user_text", exact: bool = True) -> Event:
    speaker = "user" if kind == "user_text" else "agent:claude-code"
    return Event(seq, speaker, T0 + seq * 1000, exact, kind, text, Origin(seq + 1))  # type: ignore[arg-type]


SESSION = Session(
    "claude-code", "5e55", "s.jsonl", "e" * 64,
    (
        event(0, "Please move the Deploy Script (DS) to build-release.sh. It broke yesterday."),
        event(1, "I moved the Deploy Script to build-release.sh. The Worker talks to Gateway9.",
              "assistant_text"),
        event(2, "Gateway9 is down. The Raspberry Pi failed because Gateway9 was down."),
    ),
    started_ms=T0,
)  # fmt: skip


# The same turns in two batches: the first turn alone (padded past a batch), so that
# L4, which compares a batch's names with earlier batches' only, has something to ask.
TWO_BATCHES = Session(
    "claude-code", "5e57", "s.jsonl", "d" * 64,
    (event(0, SESSION.events[0].text + " Notes follow." + " filler words" * 700),
     *SESSION.events[1:]),
    started_ms=T0,
)  # fmt: skip


class SimWorld(World):
    """The simulator answers every ask, except a request whose user turn holds a
    scripted substring: that one gets the scripted answer (once)."""

    def __init__(self, script: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.script = dict(script or {})
        self.keys: list[str] = []  # the piece asked, in order (from the attempt records)

    def answer(self, ask: fx.Ask) -> str:
        user = next(m["content"] for m in ask.request.messages if m["role"] == "user")
        for match in list(self.script):
            if match in user:
                return self.script.pop(match)
        return simulated(ask.request.messages)

    def handle(self, effect: Any) -> Any:
        if isinstance(effect, fx.LogAttempt):
            self.keys.append(effect.record["piece_id"])
        return super().handle(effect)


def task(stages: tuple[str, ...] = MAIN_LINE, session: Session = SESSION) -> SegmentTask:
    settings = Settings.of(paths=("store",), out="out", context=CONTEXT, model="m")
    data = stage(session, stages)
    return SegmentTask(SegmentJob(0, session.source, data, session.source, ()), settings, "r1")


def trace(world: World) -> list[dict[str, Any]]:
    assert world.files is not None
    return [json.loads(line) for line in world.files[1].splitlines()]


# What each stage's simulated answer gives, as the trace keeps it: (type, seq, s, p, v).
EXPECTED = {
    "naming": ("judgement", 0, "Deploy Script", "is_a", "concept"),
    "alias": ("alias", None, "DS", None, "Deploy Script"),
    "reference": ("judgement", 0, "It", "refers_to", "build-release.sh"),
    # Compared with the first batch's names only: Gateway9, named in the batch itself, is
    # never "same_as Gateway9" (issue 49).
    "disambiguation": ("judgement", 1, "Worker", "distinct_from", "Deploy Script"),
    "tone_role": ("judgement", 1, "Deploy Script", "role", "report"),
    "fact": ("fact", 1, "Deploy Script", "mentions", "build-release.sh"),
    "event": ("fact", 1, "Deploy Script", "moved", "build-release.sh"),
    "relation": ("fact", 1, "Worker", "calls", "Gateway9"),
    "state": ("fact", 2, "Gateway9", "status_is", "down"),
    "time": ("fact", 0, "yesterday", "at", "-P1D"),
    "causality": ("fact", 2, "Raspberry Pi", "caused_by", "Gateway9"),
}
# The stages a stage needs around it to be seen: names first, a row stage to write.
NEEDS = {"alias": ("fact",), "reference": ("fact",), "disambiguation": ("naming", "fact"),
         "tone_role": ("fact",), "naming": ("fact",)}  # fmt: skip


def stages_for(name: str) -> tuple[str, ...]:
    return parse_stages(",".join((name, *NEEDS.get(name, ()))))


def seen(lines: list[dict[str, Any]], name: str) -> set[tuple[Any, ...]]:
    kind = EXPECTED[name][0]
    if kind == "alias":
        return {("alias", None, x["alias"], None, x["canonical"]) for x in lines
                if x["type"] == "alias"}  # fmt: skip
    return {(x["type"], x["seq"], x["subject"], x["predicate"], x["value"]) for x in lines
            if x["type"] == kind and x["stage"] == name}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_stage_judges_and_its_bad_answer_is_removed_with_its_loss_record(name: str) -> None:
    world = SimWorld()
    session = TWO_BATCHES if name == "disambiguation" else SESSION
    outcome = world.run(extract_session(task(stages_for(name), session)))
    assert outcome.status == "written", outcome.notes
    lines = trace(world)
    assert EXPECTED[name] in seen(lines, name)
    for line in lines:  # every output traces to its seq and a verbatim quote (issue 49)
        if line["type"] in ("fact", "judgement", "alias"):
            turn = session.events[line["seq"]].text
            assert line["quote"] and checks.collapse(line["quote"]) in checks.collapse(turn)
    assert world.files is not None
    parse_source_file(world.files[0], name="s")  # importable, aliases included
    # The same stage, scripted to answer outside its vocabulary: removed, by path and reason.
    bad = json.dumps([
        {"seq": 0, "quote": "Please move the Deploy Script (DS) to build-release.sh.",
         "facts": [{"subject": "Deploy Script", "predicate": "mentions", "value": "Kubernetes"},
                   {"subject": "Deploy Script", "predicate": "invented", "value": "DS"}]},
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": "", "facts": []},
    ])  # fmt: skip
    if session is TWO_BATCHES:  # L4 asks about the second batch only
        bad = json.dumps([
            {"seq": 1, "quote": "I moved the Deploy Script to build-release.sh.",
             "facts": [{"subject": "Deploy Script", "predicate": "mentions", "value": "Kubernetes"},
                       {"subject": "Deploy Script", "predicate": "invented", "value": "Worker"}]},
            {"seq": 2, "quote": "", "facts": []},
        ])  # fmt: skip
    scripted = SimWorld({f"stage: {name}\n\n": bad})  # fact's rows keep the file written
    outcome = scripted.run(
        extract_session(task(parse_stages(",".join((*stages_for(name), "fact"))), session))
    )
    assert outcome.status == "written", outcome.notes
    losses = [x for x in trace(scripted) if x["type"] == "loss" and x["stage"] == name]
    if name == "fact":  # free predicates: "invented" passes; Kubernetes is no word of the turn
        assert [(x["path"], x["check"]) for x in losses] == [("$[0].facts[0]", "attestation")]
        return
    vocabulary = BY_NAME[name].vocabulary
    assert vocabulary is not None and "invented" not in vocabulary
    reasons = [(x["check"], x["path"], x["reason"]) for x in losses]
    assert ("vocabulary", "$[0].facts[1]",
            f"predicate 'invented' is not in the {name} vocabulary") in reasons  # fmt: skip


def test_a_loss_names_the_facts_own_path_after_an_earlier_fact_was_dropped() -> None:
    batch = Batch(0, tuple(candidates(SESSION.events)))
    reading = answer.read(json.dumps([
        {"seq": 0, "quote": "It broke yesterday.", "facts": [
            {"subject": "It", "predicate": "p", "value": "x", "confidence": 1},
            {"subject": "It", "predicate": "p", "value": "n/a"},
            {"subject": "It", "predicate": "p", "value": "yesterday"}]},
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": "", "facts": []},
    ]))  # fmt: skip
    checked = checks.check(batch, reading)
    assert [(x["check"], x["path"]) for x in checked.losses] == [
        ("schema", "$[0].facts[0].confidence"), ("padding", "$[0].facts[1]")]  # fmt: skip
    assert [d.fact.value for d in checked.drafts] == ["yesterday"]


def test_time_is_an_interval_from_the_turns_own_time_and_refused_without_one() -> None:
    world = SimWorld()
    assert world.run(extract_session(task(("time",)))).status == "written"
    assert world.files is not None
    parsed = parse_source_file(world.files[0], name="s")
    assert [(a.subject, a.label, a.object) for a in parsed.associations] == [
        ("yesterday", "at", "2025-10-08T08:53:20Z/2025-10-09T08:53:20Z")]  # fmt: skip
    offset = parse_offset("-P1W")
    assert offset is not None
    assert iso_interval(T0, offset) == "2025-10-02T08:53:20Z/2025-10-09T08:53:20Z"
    for bad in ("P", "PT", "P1DT", "-1W", "last week", "P1.5D"):
        assert parse_offset(bad) is None, bad
    inexact = Session(
        SESSION.agent,
        "5e56",
        "s",
        "f" * 64,
        tuple(event(e.seq, e.text, e.kind, exact=False) for e in SESSION.events),
    )
    asked = SimWorld()
    outcome = asked.run(extract_session(task(("fact", "time"), inexact)))
    assert outcome.status == "written" and not any(k.startswith("time-") for k in asked.keys)
    spec, turn = BY_NAME["time"], inexact.events[0]
    assert spec.rule is not None
    fact = answer.Fact("yesterday", "at", "-P1D")
    assert spec.rule(fact, "It broke yesterday.", turn, frozenset()) == (
        "turn 0 has no exact time to measure from")  # fmt: skip


def test_causality_needs_a_quote_holding_both_sides() -> None:
    spec, turn = BY_NAME["causality"], SESSION.events[2]
    assert spec.rule is not None
    fact = answer.Fact("Raspberry Pi", "caused_by", "Gateway9")
    assert spec.rule(fact, "The Raspberry Pi failed because Gateway9 was down.", turn,
                     frozenset()) is None  # fmt: skip
    assert spec.rule(fact, "Gateway9 is down.", turn, frozenset()) == (
        "subject 'Raspberry Pi' is not in the quote (it must cover both sides)")  # fmt: skip


class Killed(Exception):
    pass


class KillAt(SimWorld):
    """Dies (as SIGKILL would: no Stopped, nothing more saved) at ask number `at`."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def answer(self, ask: fx.Ask) -> str:
        if self.asked == self.at:
            raise Killed
        return super().answer(ask)


def test_a_kill_mid_stage_resumes_at_its_stage_and_batch_with_no_batch_asked_twice() -> None:
    clean = SimWorld()
    assert clean.run(extract_session(task())).status == "written"
    total = clean.asked
    for at in (2, 5, total - 1):
        killed = KillAt(at)
        with pytest.raises(Killed):
            killed.run(extract_session(task()))
        assert len(killed.units) == at - 1
        again = SimWorld(resume=Resume(units=dict(killed.units)))
        assert again.run(extract_session(task())).status == "written"
        assert again.asked == total - (at - 1)
        assert not set(again.keys) & set(killed.units)  # nothing checkpointed is asked again
        assert sorted(killed.keys[: at - 1] + again.keys) == sorted(clean.keys)
        assert again.files == clean.files


def test_zero_rows_fails_alike_on_a_first_run_and_a_resumed_one() -> None:
    unattested = json.dumps([
        {"seq": 0, "quote": "It broke yesterday.",
         "facts": [{"subject": "Kubernetes", "predicate": "p", "value": "Cassandra"}]},
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": "", "facts": []},
    ])  # fmt: skip
    first = SimWorld({"stage: fact\n\n": unattested})
    outcome = first.run(extract_session(task(("fact",))))
    assert outcome.status == "failed" and first.files is None
    assert "stated 1 fact(s) and the checks removed every one" in outcome.notes[-1]
    resumed = SimWorld(resume=Resume(units=dict(first.units)))
    outcome = resumed.run(extract_session(task(("fact",))))
    assert outcome.status == "failed" and resumed.files is None and resumed.asked == 0
    assert "writing zero rows is an error" in outcome.notes[-1]
    # A session whose turns hold no fact says so by the empty objects: it writes its passage.
    quiet = SimWorld({"stage: fact\n\n": json.dumps(
        [{"seq": n, "quote": "", "facts": []} for n in range(3)])})  # fmt: skip
    assert quiet.run(extract_session(task(("fact",)))).status == "written"


def test_p17_counts_per_stage_and_per_session_are_in_the_trace() -> None:
    bad = json.dumps([
        {"seq": 0, "quote": "It broke yesterday.",
         "facts": [{"subject": "yesterday", "predicate": "at", "value": "last week"}]},
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": "", "facts": []},
    ])  # fmt: skip
    world = SimWorld({"stage: time\n\n": bad})
    assert world.run(extract_session(task())).status == "written"
    lines = trace(world)
    rows = {x["stage"]: x for x in lines if x["type"] == "stage"}
    assert tuple(rows) == MAIN_LINE
    assert rows["time"]["removed"] == {"stage_rule": 1}
    assert rows["time"]["stated"] == 1 and rows["time"]["kept"] == 0
    for name in MAIN_LINE[:-1]:
        assert rows[name]["asked"] == rows[name]["batches"] == 1
        assert rows[name]["answered"] == 3
    flags = [x for x in lines if x["type"] == "flag"]
    assert rows["review"]["flagged"] == len(flags) > 0  # the "because" of seq 2
    for name in MAIN_LINE[:-1]:
        assert rows[name]["flagged"] == sum(x["stage"] == name for x in flags)
    session = lines[0]["metrics"]
    assert session == stage_metrics.total(list(rows.values()))
    assert session["asked"] == world.asked
    assert RUN_ORDER[-1] == "review"


def test_metrics_shows_each_stage_per_session_and_over_the_run(tmp_path: Path) -> None:
    from taguru_ray.contract.names import TRACE, output_name
    from taguru_ray.pricing.table import Prices
    from taguru_ray.store.outdir import OutDir
    from taguru_ray.tools.metric_tables import tables
    from taguru_ray.tools.metrics import collect

    world = SimWorld({"stage: relation\n\n": json.dumps([
        {"seq": 1, "quote": "The Worker talks to Gateway9.",
         "facts": [{"subject": "Worker", "predicate": "talks to", "value": "Gateway9"}]},
        {"seq": 0, "quote": "", "facts": []}, {"seq": 2, "quote": "", "facts": []}])})  # fmt: skip
    assert world.run(extract_session(task())).status == "written"
    assert world.files is not None
    name = output_name(SESSION.source)
    (tmp_path / TRACE).mkdir()
    (tmp_path / name).write_bytes(world.files[0])
    (tmp_path / TRACE / name).write_bytes(world.files[1])
    shown = {t.name: t for t in tables(collect(OutDir(str(tmp_path)), Prices()), priced=False)}
    rows = {(r["scope"], r["stage"]): r for r in shown["stages"].rows}
    relation = rows[("segment", "relation")]
    assert (relation["stated"], relation["kept"], relation["removed"]) == (1, 0, 1)
    assert relation["removed_by"] == "vocabulary=1" and relation["loss_rate"] == 1.0
    assert rows[("run", "review")]["flagged"] > 0
    assert {stage for _, stage in rows} == set(MAIN_LINE)


def test_disambiguation_compares_with_earlier_batches_names_never_a_name_with_itself() -> None:
    """Issue 49 item 14: L4 was given the batch's own names, so ``X same_as X`` passed."""
    from taguru_ray.sessions.batches import cut
    from taguru_ray.sessions.rows import carried_for

    spec = BY_NAME["disambiguation"]
    first, second = cut(candidates(TWO_BATCHES.events))
    named = [(0, "Deploy Script"), (2, "Gateway9")]
    drafts = [checks.Draft(seq, "q", answer.Fact(name, "is_a", "concept"), 0, "naming")
              for seq, name in named]  # fmt: skip
    assert carried_for(spec, drafts, second) == ["Deploy Script"]  # not Gateway9, of seq 2
    assert carried_for(BY_NAME["fact"], drafts, second) == ["Deploy Script", "Gateway9"]
    assert carried_for(spec, drafts, first) == []
    said = "Gateway9 is down."
    reading = answer.read(json.dumps([
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": said, "facts": [
            {"subject": "Gateway9", "predicate": "same_as", "value": "Gateway9"}]},
    ]))  # fmt: skip
    checked = checks.check(second, reading, frozenset({"Gateway9"}), spec)
    assert checked.drafts == []
    assert [(x["check"], x["reason"]) for x in checked.losses] == [
        ("stage_rule", "subject and value are one name")]


def test_a_quote_without_facts_is_a_loss_the_quote_is_there_exactly_when_facts_are() -> None:
    batch = Batch(0, tuple(candidates(SESSION.events)))
    reading = answer.read(json.dumps([
        {"seq": 0, "quote": "It broke yesterday.", "facts": []},
        {"seq": 1, "quote": "", "facts": []},
        {"seq": 2, "quote": "Gateway9 is down.", "facts": [
            {"subject": "Gateway9", "predicate": "p", "value": "x", "extra": 1}]},
    ]))  # fmt: skip
    checked = checks.check(batch, reading)
    assert [(x["check"], x["path"], x["reason"]) for x in checked.losses] == [
        ("schema", "$[2].facts[0].extra", "a key outside the v4 contract"),
        ("verbatim", "$[0].quote", "a quote without facts"),
    ]  # a quote whose facts the schema dropped is not one without facts
    assert checked.answered == {0, 1, 2} and not checked.corrective
