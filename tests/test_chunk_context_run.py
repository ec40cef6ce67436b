"""--chunk-context through one segment: the block in the user turn, the overview pass, Known:."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.engine.ports import Model
from taguru_ray.engine.segment import extract_segment
from taguru_ray.pipeline.overview import OVERVIEW_SYSTEM
from taguru_ray.pipeline.run_inputs import InputDigests, RunInputs
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from taguru_ray.pipeline.vocabulary import Relation, Vocabulary
from tests.corpora import STATUTE
from tests.test_segment_run import Canned, MemoryRecorder, answer, ok, settings

ACT = STATUTE

# The same act with no cross-reference, so the block has room for the overview's lines.
PLAIN = ACT.replace("前条の義務は、同法の定めるところによる。", "委員会を置く。")


def user_of(request: CompletionRequest) -> str:
    return request.messages[1]["content"]


def is_overview(request: CompletionRequest) -> bool:
    return request.messages[0]["content"] == OVERVIEW_SYSTEM


def extraction(request: CompletionRequest) -> Any:
    """An answer naming the act by the name only the heading path carries."""
    if "第二条" in user_of(request).split("\n\n", 1)[1]:
        return ok(answer(("前条の義務", "定める", "個人情報の保護に関する法律", 4)))
    return ok(answer(("事業者", "遵守する", "義務", 2)))


def overview(request: CompletionRequest) -> Any:
    user = user_of(request)
    units = [int(line.split()[2].rstrip(":")) for line in user.splitlines() if "- unit " in line]
    return ok(
        json.dumps(
            {
                "units": [{"unit": unit, "summary": f"単位{unit}の要旨。"} for unit in units],
                "cast": [{"name": "事業者", "gloss": "義務を負う者"}],
            },
            ensure_ascii=False,
        )
    )


def run(
    model: Canned,
    recorder: MemoryRecorder,
    mode: str,
    inputs: RunInputs | None = None,
    text: str = ACT,
    **overrides: Any,
) -> SegmentOutcome:
    job = SegmentJob(0, "docs/act.md", text.encode(), "docs/act.md", ())
    return asyncio.run(
        extract_segment(
            job,
            settings(chunk_context=mode, chunk_bytes=512, **overrides),
            "run1",
            Model(model.complete, model.next_seq),
            recorder,
            inputs,
        )
    )


def trace_of(recorder: MemoryRecorder) -> list[dict[str, Any]]:
    return [json.loads(line) for line in recorder.files["trace"].splitlines()]


def test_structure_prefixes_the_block_and_the_heading_path_attests_the_acts_name() -> None:
    model = Canned(extraction)
    recorder = MemoryRecorder()
    outcome = run(model, recorder, "structure")
    assert outcome.status == "written", outcome.notes
    second = user_of(model.requests[1])
    assert second.startswith(
        "Segment 'docs/act.md', part 2 of 2:\nChunk context (from this segment, to read part 2 "
        "of 2 by; extract facts only from the numbered paragraphs below):\n"
        "Position: 個人情報の保護に関する法律 › 第一章 総則 › 第二条（定義）\n"
        "References: 第一条（目的） — "
    )
    assert "\n\n[4] （定義）" in second  # the block holds no blank line and no [N] label
    assert not any("removed:" in note for note in outcome.notes)
    records = trace_of(recorder)
    kinds = [r["type"] for r in records]
    assert kinds.index("steering") < kinds.index("structure") < kinds.index("chunk")
    assert [r["heading"] for r in records if r["type"] == "structure"][2:] == [
        "第一条（目的）",
        "第二条（定義）",
    ]
    contexts = [r for r in records if r["type"] == "chunk_context"]
    assert contexts[1]["position"] == [0, 1, 3] and contexts[1]["references"] == [2]
    assert kinds[kinds.index("chunk_context") - 1] == "chunk"
    assert outcome.inputs is not None and outcome.inputs["chunk_context"] == "structure"


def test_without_the_block_the_same_answer_is_removed_as_unattested() -> None:
    model = Canned(extraction)
    outcome = run(model, MemoryRecorder(), "off")
    assert outcome.status == "written"
    assert any("個人情報の保護に関する法律" in n and "removed:" in n for n in outcome.notes)


def test_overview_asks_once_per_chunk_and_its_cast_rides_in_every_block() -> None:
    model = Canned(lambda r: overview(r) if is_overview(r) else extraction(r))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, "overview", text=PLAIN)
    assert outcome.status == "written", outcome.notes
    stages = [a["stage"] for a in recorder.attempts()]
    assert stages[:2] == ["overview", "overview"] and stages[2:] == ["item", "item"]
    extraction_turns = [user_of(r) for r in model.requests if not is_overview(r)]
    assert all("\nCast: 事業者 — 義務を負う者\n" in turn for turn in extraction_turns)
    assert "Before: 第一条（目的） — 単位2の要旨。" in extraction_turns[1]
    records = trace_of(recorder)
    assert [r["chunk_index"] for r in records if r["type"] == "overview"] == [0, 1]
    contexts = [r for r in records if r["type"] == "chunk_context"]
    assert contexts[1]["cast"] == ["事業者"] and contexts[1]["synopsis"] == [2]
    assert len(recorder.overview) == 2 and recorder.overview_digest
    # A resume reuses the cached answers and the units bound to them: nothing is asked.
    again = Canned(lambda r: overview(r) if is_overview(r) else extraction(r))
    assert run(again, recorder, "overview", text=PLAIN).status == "written"
    assert again.requests == []


def test_a_failed_overview_is_one_note_never_a_failure_and_is_not_asked_again() -> None:
    model = Canned(lambda r: ok("no JSON here") if is_overview(r) else extraction(r))
    recorder = MemoryRecorder()
    outcome = run(model, recorder, "overview")
    assert outcome.status == "written", outcome.notes
    skipped = [n for n in outcome.notes if "overview skipped" in n]
    assert len(skipped) == 2 and skipped[0].startswith("taguru: extract: docs/act.md: chunk 1/2: ")
    assert set(recorder.overview.values()) == {""}
    assert not any(r["type"] == "overview" for r in trace_of(recorder))
    again = Canned(lambda r: overview(r) if is_overview(r) else extraction(r))
    run(again, recorder, "overview")
    assert not any(is_overview(r) for r in again.requests)


def test_ingested_adds_what_the_export_knows_about_the_cast() -> None:
    vocabulary = Vocabulary(
        concepts=frozenset({"事業者", "委員会"}),
        labels=frozenset({"監督する"}),
        relations={"事業者": [Relation("監督する", "委員会", False, 1.0)]},
    )
    model = Canned(lambda r: overview(r) if is_overview(r) else extraction(r))
    recorder = MemoryRecorder()
    outcome = run(
        model,
        recorder,
        "ingested",
        RunInputs(vocabulary=vocabulary, digests=InputDigests(ingested_digest="d" * 64)),
        text=PLAIN,
    )
    assert outcome.status == "written", outcome.notes
    turn = next(user_of(r) for r in model.requests if not is_overview(r))
    assert "\nKnown: 事業者 — 委員会 → 監督する\n" in turn
    contexts = [r for r in trace_of(recorder) if r["type"] == "chunk_context"]
    assert contexts[0]["known"] == ["事業者"]
    assert outcome.inputs is not None and outcome.inputs["chunk_context"] == "ingested:" + "d" * 64
