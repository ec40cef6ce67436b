"""The session program with scripted answers, in memory: the v4 contract, the code checks,
the one corrective turn, review flags beside unchanged drafts, resume without asking."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline.segment_job import Resume, SegmentJob
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.sessions import answer, checks
from taguru_ray.sessions.batches import Batch, candidates, cut
from taguru_ray.sessions.events import Event, Origin, Session
from taguru_ray.sessions.program import extract_session, is_staged, stage, unstage
from taguru_ray.settings import Settings
from tests.program_world import World

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
T0 = 1_760_000_000_000


def event(seq: int, speaker: str, text: str, kind: str = "user_text") -> Event:
    return Event(seq, speaker, T0 + seq * 1000, True, kind, text, Origin(seq + 1))  # type: ignore[arg-type]


SESSION = Session(
    "claude-code", "3f2a9c", "s.jsonl", "d" * 64,
    (
        event(0, "user", "デプロイスクリプトを build-release.sh に変更した。"),
        event(1, "agent:claude-code", "I swapped the release script for build-release.sh.",
              "assistant_text"),
        event(2, "tool:Bash", "exit 0", "tool_result"),
        event(3, "user", "ok"),
    ),
    started_ms=T0, cwd="/home/u/app",
)  # fmt: skip
GOOD = json.dumps([
    {"seq": 0, "quote": "デプロイスクリプトを build-release.sh に変更した",
     "facts": [{"subject": "デプロイスクリプト", "predicate": "変更先",
                "value": "build-release.sh"}]},
    {"seq": 1, "quote": "I swapped the release script for build-release.sh.",
     "facts": [{"subject": "release script", "predicate": "replaced by",
                "value": "build-release.sh"}]},
    {"seq": 3, "quote": "", "facts": []},
], ensure_ascii=False)  # fmt: skip
NO_FLAGS = '[{"seq": 1, "quote": "", "facts": []}]'


def task(stages: tuple[str, ...] = ("fact", "review"), session: Session = SESSION) -> SegmentTask:
    settings = Settings.of(paths=("store",), out="out", context=CONTEXT, model="m")
    data = stage(session, stages)
    return SegmentTask(SegmentJob(0, session.source, data, session.source, ()), settings, "r1")


def test_staging_round_trips_and_is_recognised() -> None:
    data = stage(SESSION)
    assert is_staged(data) and unstage(data) == SESSION
    assert not is_staged(b"# a markdown segment")


def test_a_session_becomes_one_importable_source_file_with_its_facts_on_their_turns() -> None:
    world = World([GOOD, NO_FLAGS, '[{"seq": 0, "quote": "", "facts": [{"subject": "value", '
                   '"predicate": "flag", "value": "naming_drift"}]}]'])  # fmt: skip
    outcome = world.run(extract_session(task()))
    assert outcome.status == "written", outcome.notes
    assert world.asked == 3  # one batch, then one review per draft
    assert world.files is not None
    parsed = parse_source_file(world.files[0], name="s")
    assert parsed.header.id == "session:claude-code:3f2a9c"
    assert parsed.passage is not None and parsed.passage.tags == ("agent:claude-code",
                                                                   "project:app")  # fmt: skip
    paragraphs = parsed.passage.text.split("\n\n")
    assert paragraphs[0].startswith("⟦cc:3f2a9c#0 user (")
    triples = [(a.subject, a.label, a.object, a.paragraph) for a in parsed.associations]
    assert triples == [("デプロイスクリプト", "変更先", "build-release.sh", 0),
                       ("release script", "replaced by", "build-release.sh", 1)]  # fmt: skip
    for a in parsed.associations:  # every quote is verbatim in its turn's paragraph
        assert a.paragraph is not None and "build-release.sh" in paragraphs[a.paragraph]
    trace = [json.loads(line) for line in world.files[1].splitlines()]
    flags = [line for line in trace if line["type"] == "flag"]
    assert flags == [{"type": "flag", "seq": 1, "stage": "fact", "subject": "release script",
                      "predicate": "replaced by", "value": "build-release.sh",
                      "field": "value", "flag": "naming_drift"}]  # fmt: skip
    drafts = [line for line in trace if line["type"] == "fact"]
    assert len(drafts) == 2  # review flagged one; the draft itself stands unchanged


def test_the_code_checks_remove_a_fabricated_quote_a_foreign_seq_an_ok_key_and_padding() -> None:
    batch = Batch(0, tuple(candidates(SESSION.events)))
    bad = json.dumps([
        {"seq": 0, "quote": "デプロイスクリプトを消した", "facts": [
            {"subject": "デプロイスクリプト", "predicate": "p", "value": "build-release.sh"}]},
        {"seq": 1, "quote": "I swapped the release script", "ok": True, "facts": []},
        {"seq": 1, "quote": "I swapped the release script for build-release.sh.",
         "facts": [{"subject": "release script", "predicate": "p", "value": "unknown"},
                   {"subject": "release script", "predicate": "p", "value": "build-release.sh",
                    "confidence": 0.9}]},
        {"seq": 3, "quote": "", "facts": []},
        {"seq": 7, "quote": "x", "facts": [{"subject": "a", "predicate": "b", "value": "c"}]},
    ], ensure_ascii=False)  # fmt: skip
    checked = checks.check(batch, answer.read(bad))
    assert checked.drafts == [] and checked.corrective == []
    reasons = {(loss["path"], loss["reason"]) for loss in checked.losses}
    assert reasons == {
        ("$[1].ok", "a key outside the v4 contract"),
        ("$[2].facts[1].confidence", "a key outside the v4 contract"),
        ("$[0].quote", "the quote is not verbatim in turn 0"),
        ("$[2].facts[0]", "value is padding ('unknown')"),
        ("$[4]", "seq 7 is not a turn of this batch"),
    }


def test_a_wrong_type_gets_one_corrective_turn_then_the_batch_fails() -> None:
    wrong = '[{"seq": "0", "quote": "", "facts": []}]'
    world = World([wrong, wrong])
    outcome = world.run(extract_session(task()))
    assert outcome.status == "failed" and world.asked == 2
    assert "$[0].seq" in outcome.notes[-1] and "rerun resumes" in outcome.notes[-1]
    corrective = [r for r in world.log if r.get("type") == "attempt"][1]
    assert corrective["attempt"] == 2
    assert corrective["validation_issues"][0]["path"] == "$[0].seq"
    fixed = World([wrong, GOOD, NO_FLAGS, NO_FLAGS])
    assert fixed.run(extract_session(task())).status == "written" and fixed.asked == 4


def test_a_checkpointed_batch_and_review_are_not_asked_again() -> None:
    first = World([GOOD, NO_FLAGS, NO_FLAGS])
    assert first.run(extract_session(task())).status == "written"
    again = World([], Resume(units=dict(first.units)))
    outcome: Any = again.run(extract_session(task()))
    assert outcome.status == "written" and again.asked == 0
    assert again.files == first.files


def test_batches_hold_whole_turns_and_a_large_turn_alone() -> None:
    turns = [event(i, "user", "x" * size) for i, size in enumerate((3000, 3000, 3000, 9000, 10))]
    assert [b.seqs for b in cut(turns, 8192)] == [(0, 1), (2,), (3,), (4,)]
    assert [e.seq for e in candidates(SESSION.events)] == [0, 1, 3]
