"""A segment program's effects handled in memory, in order: the interpreter's job with no
Ray, no asyncio and no files, for tests that drive `pipeline.segment_program`."""

from __future__ import annotations

from typing import Any

from taguru_ray.contract.completion import Completion
from taguru_ray.pipeline import effects as fx
from taguru_ray.pipeline.claims import judge_alone
from taguru_ray.pipeline.segment_job import Resume


class World:
    """What the interpreter would do, in memory: every effect handled in order."""

    def __init__(self, answers: list[str] | None = None, resume: Resume | None = None) -> None:
        self.answers = list(answers or [])
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

    def answer(self, ask: fx.Ask) -> str:
        """The next scripted answer; a subclass may answer from the request instead."""
        return self.answers.pop(0)

    def handle(self, effect: Any) -> Any:
        if isinstance(effect, fx.Ask):
            self.asked += 1
            return fx.Answered(Completion("answer", self.answer(effect), "stop"), self.asked)
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
