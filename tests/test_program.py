"""A whole segment's program (`pipeline/segment_program.extract`) driven by a plain loop:
canned completions, a dict for a checkpoint, no asyncio, Ray or files."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.completion import Completion
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline import effects as fx
from taguru_ray.pipeline.claims import judge_alone
from taguru_ray.pipeline.segment_job import Resume, SegmentJob
from taguru_ray.pipeline.segment_program import extract
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.settings import Settings

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


class World:
    """What the interpreter would do, in memory: every effect handled in order."""

    def __init__(self, answers: list[str], resume: Resume | None = None) -> None:
        self.answers = list(answers)
        self.resume = resume or Resume()
        self.log: list[dict[str, Any]] = []
        self.units: dict[str, dict[str, Any]] = {}
        self.files: tuple[bytes, bytes] | None = None
        self.asked = 0

    def run(self, program: fx.Program[Any]) -> Any:
        result: Any = None
        while True:
            try:
                effect = program.send(result)
            except StopIteration as done:
                return done.value
            result = self.handle(effect)

    def handle(self, effect: Any) -> Any:
        if isinstance(effect, fx.Ask):
            self.asked += 1
            return fx.Answered(Completion("answer", self.answers.pop(0), "stop"), self.asked)
        if isinstance(effect, fx.LoadResume):
            return self.resume, None
        if isinstance(effect, fx.Begin):
            self.log.extend(effect.records)
        elif isinstance(effect, fx.LogAttempt | fx.LogMove | fx.Log):
            self.log.append(effect.record)
        elif isinstance(effect, fx.SaveUnit):
            self.units[effect.piece_id] = effect.unit
        elif isinstance(effect, fx.Parallel):
            return [self.run(start()) for start in effect.starts]
        elif isinstance(effect, fx.Commit):
            return judge_alone(effect.proposal)
        elif isinstance(effect, fx.Finish):
            self.files = (effect.source_file, effect.trace)
            return []
        elif isinstance(effect, fx.WhereRecords):
            return fx.RecordsKept(True, None)
        elif isinstance(effect, fx.CurrentRung):
            return None
        return None


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
