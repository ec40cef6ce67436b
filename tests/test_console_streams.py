"""The streams a script written for `taguru extract` reads (seed 000, CONTRACT.md section 6):
per-segment lines and the summary on stdout, every stderr line under ``taguru: extract: ``."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support import CONTEXT, REPO, Cli

PREFIX = "taguru: extract: "


def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "examples" / "corpus", docs)
    return docs


def test_the_summary_is_on_stdout_and_every_stderr_line_carries_the_prefix(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    env = cli.env(TAGURU_RAY_PROGRESS_SECONDS="0.2")
    cli.simulator.set_script(
        [{"match": "Ray is an open source", "fault": "stall", "stall_seconds": 1.5, "times": 1}]
    )
    result = cli.extract(
        "--context", CONTEXT, "--out", str(out), "--progress", "lines", str(docs), env=env
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)"
    assert all(" → " in line for line in lines[:-1]) and len(lines) == 4
    errors = result.stderr.splitlines()
    assert errors and all(line.startswith(PREFIX) for line in errors), result.stderr
    assert any(line.startswith(f"{PREFIX}progress: ") for line in errors)
    assert any(" completion(s), " in line for line in errors)  # the tally, prefixed

    dry = cli.extract("--context", CONTEXT, "--out", str(out), "--dry-run", "--force", str(docs))
    assert dry.stdout.splitlines()[-1] == (
        "extract: 3 planned, 0 unchanged, 0 failed of 3 segment(s)"
    )
    assert all(line.startswith(PREFIX) for line in dry.stderr.splitlines())


def test_usage_and_startup_errors_are_one_prefixed_line(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    cases = [
        ("--no-such-flag",),  # argparse's own error
        ("--parallel", "2", "--parallel", "3", str(docs)),  # a flag given twice
        ("--context", CONTEXT, str(docs)),  # no --out: the settings' usage error
        ("--context", "not-a-uuid", "--out", str(tmp_path / "o"), str(docs)),
    ]
    for args in cases:
        result = cli.extract(*args)
        assert result.returncode == 2, (args, result.stderr)
        [line] = result.stderr.splitlines()
        assert line.startswith(PREFIX), (args, line)
        assert result.stdout == ""
    hinted = cli.extract("--no-such-flag").stderr
    assert hinted.rstrip().endswith("— try 'taguru-ray extract --help'")


def test_a_run_whose_readers_went_away_finishes_instead_of_wedging(
    cli: Cli, tmp_path: Path
) -> None:
    """stdout and stderr pipes with no reader (a killed harness, `| head` done): each line
    is dropped, the run writes every segment and exits — at W = 1 a lost line once left
    the window waiting on a segment it never heard end."""
    import os
    import subprocess

    docs, out = corpus(tmp_path), tmp_path / "out"
    read_out, write_out = os.pipe()
    read_err, write_err = os.pipe()
    os.close(read_out)
    os.close(read_err)  # no reader from the start: every write is EPIPE
    done = subprocess.run(
        cli.command("--context", CONTEXT, "--out", str(out), "--max-inflight", "1", str(docs)),
        env=cli.env(),
        stdout=write_out,
        stderr=write_err,
        timeout=180,
        cwd=REPO,
    )
    os.close(write_out)
    os.close(write_err)
    assert done.returncode == 0
    assert len(list(out.glob("*.jsonl"))) == 3
