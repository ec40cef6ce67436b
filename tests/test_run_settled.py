"""A run never exits 0 short of a segment: every segment ends written, unchanged or
failed, or the run says it stopped (exit 130) — else it exits 1 with a line.

A parallel `make test` once saw the S3 SIGKILL test's driver end with "0 written,
0 unchanged, 0 failed of 2 segment(s)" and exit 0: its lease's renewal ran late on
the busy machine, a worker's write was fenced, the segment came back interrupted,
and the run went on as if nothing had happened. No Ray here: the driver's side of
it, with the worker's outcome stood in for.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from taguru_ray.engine.run import ExtractRun
from taguru_ray.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from taguru_ray.pipeline.segment_job import SegmentJob, SegmentOutcome
from tests.test_early_settling import make_run


class Remote:
    """An actor method's `.remote`, remembered instead of sent."""

    def __init__(self, calls: list[tuple[str, Any]], name: str) -> None:
        self._calls, self._name = calls, name

    def remote(self, *args: Any) -> None:
        self._calls.append((self._name, args))


class Actor:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Remote:
        return Remote(self.calls, name)


def interrupted(run: ExtractRun, index: int) -> None:
    """Segment `index` comes back from its worker interrupted (its writes were fenced)."""
    source = run.sources[index]
    fenced = f"taguru: extract: {source}: the lease on out was lost or lapsed unrenewed"

    async def on_a_worker(job: SegmentJob) -> SegmentOutcome:
        return SegmentOutcome(job.index, job.source, "interrupted", notes=[fenced], fenced=True)

    run.workers.run_segment = on_a_worker  # type: ignore[method-assign]
    run.window.dispatched(index)
    asyncio.run(run.dispatch._extract(SegmentJob(index, source, b"", source, ())))


def test_an_interrupted_segment_stops_the_run_which_exits_130_not_0(tmp_path: Path) -> None:
    run, sources, printed, errors = make_run(tmp_path, "nn")
    run.actors.ledger, run.actors.gateway = Actor(), Actor()
    interrupted(run, 0)
    assert run.stopping  # nothing after it may commit (abandoned): the run stops here
    assert ("abandon", (0,)) in run.actors.ledger.calls
    assert ("stop", ()) in run.actors.gateway.calls  # no new permit: nothing more is paid for
    assert any(
        line.endswith(
            f"stopping: {sources[0]} was interrupted, and no later segment can be "
            "written in this run — rerun to resume"
        )
        for line in errors
    )
    assert run.summary.close({}) == EXIT_INTERRUPTED
    assert printed[-1] == (
        "extract: 0 written, 0 unchanged, 0 failed of 2 segment(s) — stopped early, chunk "
        "checkpoints saved; rerun to resume"
    )
    assert errors[-1] == "taguru: extract: stopped after reaching 0 of 2 segment(s)"


def test_a_run_short_of_a_segment_without_a_stop_exits_1_with_a_line(tmp_path: Path) -> None:
    run, _, printed, errors = make_run(tmp_path, "nnn")
    run.tally.written = 1  # the other two neither written, unchanged nor failed
    assert run.summary.close({}) == EXIT_FAILED
    assert printed[-1] == "extract: 1 written, 0 unchanged, 0 failed of 3 segment(s)"
    assert errors[-1] == (
        "taguru: extract: 2 of 3 segment(s) were neither written, unchanged nor failed, yet "
        "the run was not stopped — rerun to resume"
    )


def test_a_run_that_settled_every_segment_exits_0(tmp_path: Path) -> None:
    run, _, _, errors = make_run(tmp_path, "nnn")
    run.tally.written, run.tally.unchanged, run.tally.failed = 1, 2, 0
    assert run.tally.unsettled == 0
    assert run.summary.close({}) == EXIT_OK
    assert not any("neither written" in line for line in errors)
