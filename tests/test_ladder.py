"""The reliability ladder with canned answers: escalate, split, descend, runaway, demote."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.engine.ports import Model
from taguru_ray.engine.segment import extract_segment
from taguru_ray.llm.probe import probe
from taguru_ray.pipeline.ladder import (
    JSON_OBJECT,
    JSON_SCHEMA,
    PROMPTED,
    LadderConfig,
    RungState,
    non_conformance,
)
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from tests.test_segment_run import MemoryRecorder, ok, settings

# Eight paragraphs, each naming two things: small answers per paragraph, so the
# answer for a piece grows with the number of paragraphs it holds.
TEXT = "\n\n".join(
    f"Service{i} depends on Store{i} for its records, and every request it serves reads "
    "them again, so the store sits on the hot path of each page."
    for i in range(8)
)


def answer_for(request: CompletionRequest) -> str:
    user = request.messages[1]["content"]
    triples = []
    for block in user.split("\n\n")[1:]:
        n = int(block[1 : block.index("]")])
        triples.append(
            {"subject": f"Service{n}", "label": "depends on", "object": f"Store{n}", "paragraph": n}
        )
    return json.dumps({"associations": triples, "aliases": []})


class Server:
    """Answers like a model server: cuts at max_tokens (4 bytes a token), can misbehave."""

    def __init__(
        self,
        *,
        loop_under_schema: bool = False,
        timeout_over: int | None = None,
        runaway: bool = False,
        ignore_format: bool = False,
    ) -> None:
        self.loop_under_schema = loop_under_schema
        self.timeout_over = timeout_over  # pieces with more paragraphs time out
        self.runaway = runaway
        self.ignore_format = ignore_format
        self.requests: list[CompletionRequest] = []
        self.seq = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        await asyncio.sleep(0)
        text = answer_for(request)
        schema = (request.response_format or {}).get("type") == "json_schema"
        blocks = request.messages[1]["content"].count("\n\n")
        if self.timeout_over is not None and blocks > self.timeout_over:
            return Completion("timeout", error="timed out after 1 s (TAGURU_EXTRACT_TIMEOUT_SECS)")
        if self.runaway or (self.loop_under_schema and schema):
            text = json.dumps(
                {
                    "associations": [{"subject": "x" * 50, "label": "loops", "object": "y" * 50}]
                    * 400
                }
            )
        if self.ignore_format:
            text = f"Sure! Here it is:\n```json\n{text}\n```"
        cap = request.max_tokens
        if cap is not None and len(text.encode()) > cap * 4:
            return ok(text.encode()[: cap * 4].decode(errors="ignore"), "length")
        return ok(text)

    async def next_seq(self) -> int:
        self.seq += 1
        return self.seq


class Rung:
    def __init__(self, rung: str | None) -> None:
        self.state = RungState(rung) if rung else None

    async def current(self) -> str | None:
        return self.state.rung if self.state else None

    async def demote(self, ran_under: str) -> tuple[bool, str]:
        assert self.state is not None
        return self.state.demote(ran_under)


def run(
    server: Server, recorder: MemoryRecorder, rung: str | None = PROMPTED, **overrides: Any
) -> SegmentOutcome:
    job = SegmentJob(0, "docs/s.md", TEXT.encode(), "docs/s.md", ())
    model = Model(server.complete, server.next_seq, rung=Rung(rung))
    return asyncio.run(extract_segment(job, settings(**overrides), "run1", model, recorder))


def log(recorder: MemoryRecorder, kind: str) -> list[dict[str, Any]]:
    return [r for r in recorder.log_records if r["type"] == kind]


# One paragraph's answer is ~100 bytes (25 tokens); all eight ~760 bytes.
def test_a_cut_off_answer_escalates_once_and_the_truncated_answer_is_discarded() -> None:
    server, recorder = Server(), MemoryRecorder()
    outcome = run(server, recorder, max_output_tokens=120)
    assert outcome.status == "written"
    assert [r.max_tokens for r in server.requests] == [120, 240]
    [move] = log(recorder, "move")
    assert (move["move"], move["from_max_tokens"], move["to_max_tokens"]) == ("escalate", 120, 240)
    first, second = log(recorder, "attempt")
    assert (first["state"], first["rung"], first["requested_max_tokens"]) == (
        "length_limited",
        PROMPTED,
        120,
    )
    assert second["messages"] == first["messages"]  # a neutral resend, no shorter-please
    assert len(parse_source_file(recorder.files["source"]).associations) == 8


def test_still_cut_off_splits_the_piece_and_each_half_runs_from_the_top() -> None:
    server, recorder = Server(), MemoryRecorder()
    outcome = run(server, recorder, max_output_tokens=60)
    assert outcome.status == "written"
    moves = [(m["move"], m.get("sub_pieces")) for m in log(recorder, "move")]
    assert moves[:2] == [("escalate", None), ("split", 2)]
    trace = [json.loads(line) for line in recorder.files["trace"].splitlines()]
    pieces = [r for r in trace if r["type"] == "piece"]
    assert len(pieces) >= 2 and {p["chunk_index"] for p in pieces} == {0}
    assert [p["paragraph_first"] for p in pieces] == sorted(p["paragraph_first"] for p in pieces)
    assert len(recorder.splits) == len(pieces) - 1  # a binary tree of splits
    assert set(recorder.units) == {p["piece_id"] for p in pieces}
    parsed = parse_source_file(recorder.files["source"])
    assert [a.paragraph for a in parsed.associations] == list(range(8))
    assert any("splitting the" in note for note in outcome.notes)


def test_a_resumed_run_goes_straight_to_the_recorded_sub_pieces() -> None:
    first = MemoryRecorder()
    run(Server(), first, max_output_tokens=60)
    leaves = list(first.units.items())
    resumed = MemoryRecorder(units=dict(leaves[:2]), splits=dict(first.splits))
    server = Server()
    outcome = run(server, resumed, max_output_tokens=60)
    assert outcome.status == "written"
    assert len(server.requests) == len(leaves) - 2  # the rest, one answer each
    assert resumed.files["source"] == first.files["source"]


def test_a_piece_too_small_to_split_fails_with_a_named_diagnosis() -> None:
    outcome = run(Server(), MemoryRecorder(), max_output_tokens=5)
    assert outcome.status == "failed"
    line = outcome.notes[-1]
    innermost = int(line.split(" B): ")[0].rsplit(", ", 1)[1])
    assert innermost <= 512  # the innermost piece is named, not the chunk
    assert "is too small to split — raise --max-output-tokens or " in line
    assert "TAGURU_EXTRACT_ESCALATION_FACTOR" in line


def test_a_timeout_goes_straight_to_the_split_rung_never_retried_or_escalated() -> None:
    server, recorder = Server(timeout_over=4), MemoryRecorder()
    outcome = run(server, recorder, max_output_tokens=1000)
    assert outcome.status == "written"
    assert [r.retry_timeouts for r in server.requests] == [False] * len(server.requests)
    first = log(recorder, "attempt")[0]
    assert first["state"] == "timeout"
    assert [m["move"] for m in log(recorder, "move")] == ["split"]
    assert log(recorder, "move")[0]["reason"].startswith("timed out; splitting")


def test_a_timeout_at_the_floor_names_both_knobs() -> None:
    outcome = run(
        Server(timeout_over=0), MemoryRecorder(), structured_output="json-object", chunk_bytes=512
    )
    assert "raise TAGURU_EXTRACT_TIMEOUT_SECS or lower --chunk-bytes" in outcome.notes[-1]


def test_a_runaway_gets_no_escalation_and_no_split_and_names_both_sizes() -> None:
    server, recorder = Server(runaway=True), MemoryRecorder()
    outcome = run(
        server, recorder, JSON_OBJECT, structured_output="json-object", max_output_tokens=5000
    )
    assert len(server.requests) == 1
    [move] = log(recorder, "move")
    assert move["move"] == "runaway" and move["answer_bytes"] > 8 * move["piece_bytes"]
    assert (
        f"a runaway answer: {move['answer_bytes']} B cut off for a {move['piece_bytes']} B"
        in outcome.notes[-1]
    )


def test_auto_demotes_a_looping_rung_run_wide_and_the_piece_restarts_at_the_top() -> None:
    server, recorder = Server(loop_under_schema=True), MemoryRecorder()
    rung = Rung(JSON_SCHEMA)
    job = SegmentJob(0, "docs/s.md", TEXT.encode(), "docs/s.md", ())
    model = Model(server.complete, server.next_seq, rung=rung)
    outcome = asyncio.run(
        extract_segment(
            job, settings(structured_output="auto", max_output_tokens=400), "run1", model, recorder
        )
    )
    assert outcome.status == "written"
    moves = [(m["move"], m.get("from_rung"), m.get("to_rung")) for m in log(recorder, "move")]
    assert ("demote", JSON_SCHEMA, JSON_OBJECT) in moves
    assert rung.state is not None and rung.state.rung == JSON_OBJECT
    assert any(
        "structured output: json_schema demoted to json_object — " in n for n in outcome.notes
    )
    assert log(recorder, "attempt")[-1]["rung"] == JSON_OBJECT


def test_a_pinned_rung_never_demotes() -> None:
    server, recorder = Server(loop_under_schema=True), MemoryRecorder()
    outcome = run(
        server,
        recorder,
        JSON_SCHEMA,
        structured_output="json-schema",
        max_output_tokens=400,
        runaway_ratio=0,
    )
    assert outcome.status == "failed"
    assert "demote" not in [m["move"] for m in log(recorder, "move")]
    assert "split" in [m["move"] for m in log(recorder, "move")]


def test_an_answer_breaking_the_requested_format_is_named_provider_non_conformance() -> None:
    outcome = run(
        Server(ignore_format=True), MemoryRecorder(), JSON_OBJECT, structured_output="json-object"
    )
    assert outcome.status == "written"
    assert any(
        "provider non-conformance: the answer violated the requested response_format" in n
        for n in outcome.notes
    )


def test_escalation_factor_zero_resends_with_no_cap() -> None:
    server = Server()
    run(server, MemoryRecorder(), max_output_tokens=120, escalation_factor=0)
    assert [r.max_tokens for r in server.requests] == [120, None]


def test_compare_and_demote_moves_only_from_the_rung_a_piece_ran_under() -> None:
    state = RungState(JSON_SCHEMA)
    assert state.demote(JSON_SCHEMA) == (True, JSON_OBJECT)
    assert state.demote(JSON_SCHEMA) == (False, JSON_OBJECT)  # another piece got there first
    assert state.demote(JSON_OBJECT) == (True, PROMPTED)
    assert state.demote(PROMPTED) == (False, PROMPTED)


def test_the_ladder_engages_with_either_control() -> None:
    assert not LadderConfig.of("off", 0, 2, 8).engaged
    assert LadderConfig.of("off", 100, 2, 8).engaged
    assert LadderConfig.of("json-object", 0, 2, 8).engaged
    assert LadderConfig.of("auto", 0, 2, 8).demotable


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [("honest", JSON_SCHEMA), ("ignores", PROMPTED), ("rejects_schema", JSON_OBJECT)],
)
def test_the_auto_probe_keeps_the_strongest_rung_that_verifies(
    behaviour: str, expected: str
) -> None:
    async def complete(request: CompletionRequest) -> Completion:
        shape = (request.response_format or {}).get("type")
        if behaviour == "rejects_schema" and shape == "json_schema":
            return Completion(
                "transport", error="HTTP 400: response_format not supported", status=400
            )
        if behaviour == "ignores":
            return ok('A knowledge graph links things. {"associations": [], "aliases": []}')
        return ok('{"associations": [], "aliases": []}')

    rung, why = asyncio.run(probe(complete))
    assert rung == expected and why


def test_non_conformance_reads_the_rung_promise() -> None:
    assert non_conformance(JSON_OBJECT, '{"associations": []}') is None
    assert non_conformance(JSON_SCHEMA, '{"associations": []}') == "aliases: missing"
    assert non_conformance(JSON_OBJECT, "```json\n{}\n```") is not None
    assert non_conformance(PROMPTED, "anything") is None


def test_a_cut_off_stage_2_correction_is_resent_once_then_left_standing() -> None:
    shadowed = json.dumps(
        {
            "associations": [{"subject": "Service0", "label": "depends on", "object": "Store0"}],
            "aliases": [{"alias": "Store0", "canonical": "Service0", "kind": "concept"}],
        }
    )
    requests: list[CompletionRequest] = []
    seq = 0

    async def complete(request: CompletionRequest) -> Completion:
        requests.append(request)
        if len(requests) == 1:
            return ok(shadowed)
        return ok(shadowed[:40], "length")  # every correction is cut off

    async def next_seq() -> int:
        nonlocal seq
        seq += 1
        return seq

    recorder = MemoryRecorder()
    job = SegmentJob(0, "docs/s.md", TEXT.encode(), "docs/s.md", ())
    model = Model(complete, next_seq, rung=Rung(PROMPTED))
    outcome = asyncio.run(
        extract_segment(job, settings(max_output_tokens=2000), "run1", model, recorder)
    )
    assert outcome.status == "written"
    assert [r.max_tokens for r in requests] == [2000, 2000, 4000]
    [move] = log(recorder, "move")
    assert move["move"] == "escalate" and "cross-chunk correction" in move["reason"]
    stages = [a["stage"] for a in log(recorder, "attempt")]
    assert stages == ["item", "cross_chunk", "cross_chunk"]
    assert outcome.counts["removed"] == 1
    assert parse_source_file(recorder.files["source"]).aliases == []
