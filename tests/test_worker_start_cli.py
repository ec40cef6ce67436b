"""How many segment workers a run starts, counted in the Ray it ran on: one a segment at
most, none for a rerun that skips everything, `--workers` for a corpus that has more."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray

from tests.support import CONTEXT, Cli

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def segment_workers_started() -> int:
    """Every segment worker this test's Ray has seen, ended ones included (GCS's table)."""
    actors = ray._private.state.actors()  # the state API needs a dashboard; GCS does not
    return sum(1 for info in actors.values() if info["ActorClassName"] == "SegmentWorker")


def extract(cli: Cli, docs: Path, out: Path) -> int:
    """Run extract; the segment workers it started."""
    before = segment_workers_started()
    result = cli.extract("--context", CONTEXT, "--out", str(out), "--workers", "2", str(docs))
    assert result.returncode == 0, result.stderr
    return segment_workers_started() - before


def test_a_run_starts_a_worker_per_segment_at_most_and_none_to_skip(
    cli: Cli, tmp_path: Path
) -> None:
    one = tmp_path / "one"
    one.mkdir()
    (one / "a.md").write_text("Alice met Bob in Paris.\n")
    assert extract(cli, one, tmp_path / "out-one") == 1
    assert extract(cli, one, tmp_path / "out-one") == 0  # unchanged: skipped, no worker

    three = tmp_path / "three"
    three.mkdir()
    for name in "abc":
        (three / f"{name}.md").write_text(f"Carol {name} works at Acme.\n")
    assert extract(cli, three, tmp_path / "out-three") == 2
    (three / "b.md").write_text("Carol b moved to Dover.\n")
    assert extract(cli, three, tmp_path / "out-three") == 2  # one to redo: workers start
