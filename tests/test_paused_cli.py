"""End to end against the simulator: a 429 with Retry-After shows on the progress line as
a pause, with its length and when it resumes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow


def test_a_429_pause_shows_on_the_progress_line(cli: Cli, tmp_path: Path) -> None:
    docs, out = tmp_path / "docs", tmp_path / "out"
    shutil.copytree(REPO / "examples" / "corpus", docs)
    # The first two requests are answered 429 with Retry-After 4 s: the gateway pauses the
    # endpoint for every caller, and a progress line says so at once — plain lines
    # come every 15 s by default, so the pause would otherwise be over unseen.
    cli.simulator.set_script([{"fault": "429", "retry_after": 4, "times": 2}])
    result = cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--progress",
        "lines",
        str(docs),
        env=cli.env(TAGURU_RAY_PROGRESS_SECONDS="15"),
    )
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "progress: " in line]
    paused = [line for line in said if "paused by a 429 (Retry-After 4s), resumes in " in line]
    assert paused, result.stderr
    left = {int(m) for line in paused for m in re.findall(r"resumes in (\d+)s", line)}
    assert left and left <= {1, 2, 3, 4}
