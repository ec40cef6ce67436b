"""A whole segment's program (`pipeline/segment_program.extract`) driven by a plain loop:
canned completions, a dict for a checkpoint, no asyncio, Ray or files."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline.segment_job import Resume, SegmentJob
from taguru_ray.pipeline.segment_program import extract
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.settings import Settings
from tests.program_world import World

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
TEXT = "# Ray\n\nRay runs on Kubernetes.\n\nKubeRay manages Ray clusters."
GOOD = json.dumps(
    {
        "associations": [
            {"subject": "Ray", "label": "runs on", "object": "Kubernetes", "paragraph": 1}
        ],
        "aliases": [],
    }
)


def task(**overrides: Any) -> SegmentTask:
    settings = Settings.of(paths=("d",), out="out", context=CONTEXT, model="m", **overrides)
    job = SegmentJob(0, "docs/ray.md", TEXT.encode(), "docs/ray.md", ())
    return SegmentTask(job, settings, "run1")


def test_a_segment_is_written_once_its_answer_is_checkpointed_and_committed() -> None:
    world = World([GOOD])
    outcome = world.run(extract(task()))
    assert outcome.status == "written", outcome.notes
    assert world.files is not None
    parsed = parse_source_file(world.files[0])
    assert [(a.subject, a.label, a.object) for a in parsed.associations] == [
        ("Ray", "runs on", "Kubernetes")
    ]
    assert [r["type"] for r in world.log] == ["segment", "settings", "system", "attempt"]
    assert len(world.units) == 1 and outcome.inputs is not None


def test_a_checkpointed_piece_is_reused_without_a_completion() -> None:
    first = World([GOOD])
    first.run(extract(task()))
    again = World([], Resume(units=dict(first.units)))
    outcome = again.run(extract(task()))
    assert outcome.status == "written" and again.asked == 0
    assert again.files is not None and first.files is not None
    assert again.files[0] == first.files[0]  # the same source file, byte for byte


def test_a_piece_that_never_answers_fails_the_segment_with_its_records_named() -> None:
    world = World(["not json", "still not json"])
    outcome = world.run(extract(task()))
    assert outcome.status == "failed" and world.files is None
    assert "would not produce the JSON object" in outcome.notes[-1]
    assert "records: out/.extract-trace/" in outcome.notes[-1]
