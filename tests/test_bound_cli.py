"""Every run says what bounded it (ADR 0048): the summary line and the sidecar's record,
from real runs of the CLI against the simulator on the session's Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import Cli

pytestmark = [pytest.mark.slow, pytest.mark.ray]

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
SUMMARY = "taguru: extract: in flight "


def corpus(folder: Path, count: int) -> Path:
    folder.mkdir()
    for index in range(count):
        (folder / f"seg-{index:03d}.md").write_text(
            f"# Part {index}\n\nAlpha{index} works with Beta{index}.\n", encoding="utf-8"
        )
    return folder


def gateway_record(sidecar: Path) -> dict[str, object]:
    records = [json.loads(line) for line in sidecar.read_text(encoding="utf-8").splitlines()]
    return next(r for r in reversed(records) if r["type"] == "gateway")


def bound_line(stderr: str) -> str:
    """The summary's line (a progress line, printed on a slow run, names a bound too)."""
    return next(line for line in stderr.splitlines() if line.startswith(SUMMARY))


def test_a_narrow_window_says_window(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", 32)
    sidecar = tmp_path / "sidecar.jsonl"
    # Slow answers: the window's four segments on the wire most of the time, however busy
    # the machine keeps the client between them.
    with SimulatorProcess("--slots", "16", "--latency-ms", "800") as slow:
        env = cli.env(TAGURU_EXTRACT_URL=slow.chat_url)
        result = cli.extract(
            "--context", CONTEXT, "--out", str(tmp_path / "out"), "--segment-window", "4",
            "--diagnostics-out", str(sidecar), str(docs), env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = bound_line(result.stderr)
    assert "window 4) · bound: window (the segment window of 4 held" in line, line
    record = gateway_record(sidecar)
    assert (record["bound"], record["window"], record["inflight_peak"]) == ("window", 4, 4)
    assert 2.0 <= float(record["inflight_mean"]) <= 4.0  # type: ignore[arg-type]  # exact
    assert 0.0 <= float(record["client_cpu_share"]) <= 1.0  # type: ignore[arg-type]


def test_a_server_that_429s_says_the_endpoint(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", 12)
    sidecar = tmp_path / "sidecar.jsonl"
    cli.simulator.set_script([{"fault": "429", "times": 3, "retry_after": 0.2}])
    result = cli.extract(
        "--context", CONTEXT, "--out", str(tmp_path / "out"), "--diagnostics-out", str(sidecar),
        str(docs),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "· bound: endpoint (" in bound_line(result.stderr)
    record = gateway_record(sidecar)
    assert record["bound"] == "endpoint" and record["outcomes"]["http_429"] == 3  # type: ignore[index]
    assert "429" in str(record["bound_why"]) or "Retry-After" in str(record["bound_why"])


def test_a_run_that_asks_nothing_says_no_bound(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", 2)
    out = tmp_path / "out"
    assert cli.extract("--context", CONTEXT, "--out", str(out), str(docs)).returncode == 0
    rerun = cli.extract("--context", CONTEXT, "--out", str(out), str(docs))
    assert rerun.returncode == 0 and "· bound: " not in rerun.stderr
