"""Carryover and gleaning (seed 002) with canned answers: prompts, records, counters."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.engine.ports import Model
from taguru_ray.engine.segment import extract_segment
from taguru_ray.pipeline.carryover import carried, combine, render_carryover
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.validate import PieceOutput
from tests.test_segment_run import MemoryRecorder, ok, settings

TEXT = "\n\n".join(f"Service{i} calls Store{i} through Gate{i}. " + "x " * 200 for i in range(4))


def output(*triples: tuple[str, str, str]) -> PieceOutput:
    return PieceOutput(
        associations=[
            {"subject": s, "label": label, "object": o, "weight": 1.0, "paragraph": 0}
            for s, label, o in triples
        ],
        aliases=[],
        questions=[],
    )


def test_carried_names_are_the_most_recent_listed_oldest_first_with_their_type() -> None:
    outputs = [
        output(("A", "uses", "B"), ("A", "schema:type", "Service")),
        output(("C", "uses", "D"), ("B", "calls", "E")),
    ]
    assert carried(outputs, 3) == [("D", ""), ("B", ""), ("E", "")]
    assert carried(outputs, 10)[0] == ("A", "Service")
    assert carried(outputs, 0) == []
    assert "- A (Service)" in render_carryover([("A", "Service")])


def test_combining_answers_keeps_both_and_folds_exact_repeats() -> None:
    first = {"associations": [{"subject": "a", "label": "b", "object": "c"}], "aliases": []}
    more = {
        "associations": [
            {"subject": "a", "label": "b", "object": "c"},
            {"subject": "c", "label": "b", "object": "d"},
        ]
    }
    assert combine(first, more)["associations"] == [
        {"subject": "a", "label": "b", "object": "c"},
        {"subject": "c", "label": "b", "object": "d"},
    ]


class Model_:
    def __init__(self, glean_fails: bool = False) -> None:
        self.requests: list[CompletionRequest] = []
        self.glean_fails = glean_fails
        self.seq = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        user = request.messages[1]["content"]
        index = int(user.split("\n\n", 1)[1][1])
        if request.messages[-1]["content"].startswith("Look at the part once more"):
            if self.glean_fails:
                return ok("no idea")
            triple = {"subject": f"Service{index}", "label": "reaches", "object": f"Gate{index}"}
            return ok(json.dumps({"associations": [triple], "aliases": []}))
        triple = {"subject": f"Service{index}", "label": "calls", "object": f"Store{index}"}
        return ok(json.dumps({"associations": [triple], "aliases": []}))

    async def next_seq(self) -> int:
        self.seq += 1
        return self.seq


def run(model: Model_, recorder: MemoryRecorder, **overrides: Any) -> SegmentOutcome:
    job = SegmentJob(0, "docs/c.md", TEXT.encode(), "docs/c.md", ())
    return asyncio.run(
        extract_segment(
            job,
            settings(chunk_bytes=512, **overrides),
            "run1",
            Model(model.complete, model.next_seq),
            recorder,
        )
    )


def test_each_chunk_is_told_the_names_earlier_chunks_settled_on() -> None:
    model, recorder = Model_(), MemoryRecorder()
    outcome = run(model, recorder, carryover=8, parallel=4)
    assert outcome.status == "written"
    systems = [r.messages[0]["content"] for r in model.requests]
    assert "Service0" not in systems[0]
    assert "- Service0\n- Store0" in systems[1] and "Service1" not in systems[1]
    assert "- Store2" in systems[3]
    logged = [r for r in recorder.log_records if r["type"] == "system"]
    assert len(logged) == len(set(systems))  # each distinct prompt recorded once
    trace = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    per_chunk = [r for r in trace if r["type"] == "steering" and r["chunk_index"] is not None]
    assert [r["chunk_index"] for r in per_chunk] == [0, 1, 2, 3]
    assert per_chunk[1]["carryover"] == [
        {"name": "Service0", "type": None},
        {"name": "Store0", "type": None},
    ]
    assert outcome.counts["carryover_names"] == 2 + 4 + 6
    assert outcome.report is not None and "carried over" not in outcome.report


def test_a_gleaning_pass_adds_what_the_first_missed() -> None:
    model, recorder = Model_(), MemoryRecorder()
    outcome = run(model, recorder, gleanings=1)
    assert outcome.counts["gleaning_passes"] == 4 and outcome.counts["failed_gleanings"] == 0
    from taguru_ray.contract.source_file import parse_source_file

    labels = [a.label for a in parse_source_file(recorder.files["source"]).associations]
    assert labels.count("reaches") == 4 and labels.count("calls") == 4
    attempts = [r for r in recorder.log_records if r["type"] == "attempt"]
    gleanings = [r for r in attempts if r["stage"] == "gleaning"]
    assert len(gleanings) == 4
    # A gleaning pass extends an answer; it corrects nothing (metrics count corrections).
    first = {r["piece_id"]: r for r in attempts if r["stage"] == "item"}
    for record in gleanings:
        assert "corrects" not in record
        assert record["gleans"] == {
            "run_id": "run1",
            "attempt_seq": first[record["piece_id"]]["attempt_seq"],
        }
    sidecar = [r for r in recorder.sidecar_records if r["type"] == "attempt"]
    assert [r["stage"] for r in sidecar].count("gleaning") == 4
    assert outcome.report is not None and "4 gleaning pass(es)" in outcome.report


def test_gleaning_stops_at_a_pass_that_finds_nothing_new() -> None:
    model, recorder = Model_(), MemoryRecorder()
    outcome = run(model, recorder, gleanings=3)
    # Pass 1 adds "reaches"; pass 2 answers it again, adds nothing, and ends the chunk's gleaning.
    assert outcome.counts["gleaning_passes"] == 8 and outcome.counts["failed_gleanings"] == 0
    stages = [r["stage"] for r in recorder.log_records if r["type"] == "attempt"]
    assert stages.count("gleaning") == 8


def test_a_failed_gleaning_keeps_the_first_answer_and_is_counted() -> None:
    model, recorder = Model_(glean_fails=True), MemoryRecorder()
    outcome = run(model, recorder, gleanings=2)
    assert outcome.status == "written"
    # One failed pass per chunk ends its gleaning: the same ask would fail the same way.
    assert outcome.counts["gleaning_passes"] == 0 and outcome.counts["failed_gleanings"] == 4
    assert outcome.report is not None and "0 gleaning pass(es), 4 failed" in outcome.report
