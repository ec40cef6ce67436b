"""The driver killed with SIGKILL mid-segment: the rerun pays only for what was not checkpointed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, Cli, checkpoint_units, checkpointed, quiesce

pytestmark = pytest.mark.slow

PARAGRAPHS = 16


@pytest.fixture(scope="module")
def slow_simulator() -> Iterator[SimulatorProcess]:
    # Slow enough that a kill lands between completions of one segment.
    with SimulatorProcess("--latency-ms", "400", "--slots", "4") as process:
        yield process


def long_segment(folder: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "long.md"
    path.write_text(
        "\n\n".join(
            f"Section {i} explains how Worker{i} talks to Service{i} through Gateway{i}. "
            + "z " * 160
            for i in range(PARAGRAPHS)
        )
    )
    return path


def args(out: Path, segment: Path) -> list[str]:
    return ["--context", CONTEXT, "--out", str(out), "--chunk-bytes", "512", str(segment)]


def units_in(out: Path, source: str) -> int:
    return checkpoint_units(out, source)


def test_rerun_after_sigkill_asks_only_for_missing_chunks_and_writes_the_same_bytes(
    ray_address: str, slow_simulator: SimulatorProcess, tmp_path: Path
) -> None:
    cli = Cli(ray_address, slow_simulator)
    segment = long_segment(tmp_path / "docs")
    source = str(segment)

    clean = tmp_path / "clean"
    slow_simulator.reset()
    assert cli.extract(*args(clean, segment)).returncode == 0
    chunks = slow_simulator.stats()["requests"]
    assert chunks >= 8

    out = tmp_path / "out"
    slow_simulator.reset()
    driver = subprocess.Popen(
        cli.command(*args(out, segment)),
        env=cli.env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while units_in(out, source) < 3:
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "no checkpoint units appeared"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    quiesce(slow_simulator)  # the dead driver's workers are gone with its job
    checkpointed = units_in(out, source)
    assert 3 <= checkpointed < chunks
    assert not (out / output_name(source)).exists()

    dry = cli.extract(*args(out, segment), "--dry-run")
    assert f"{checkpointed} reusable from checkpoint" in dry.stdout

    slow_simulator.reset()
    rerun = cli.extract(*args(out, segment))
    assert rerun.returncode == 0, rerun.stderr
    assert slow_simulator.stats()["requests"] == chunks - checkpointed
    name = output_name(source)
    assert (out / name).read_bytes() == (clean / name).read_bytes()
    attempts = (out / ".extract-trace" / name.replace(".jsonl", ".attempts.jsonl")).read_text()
    segment_records = [
        json.loads(line) for line in attempts.splitlines() if json.loads(line)["type"] == "segment"
    ]
    assert [r["resumed"] for r in segment_records] == [False, True]  # appended, not truncated
    trace = [json.loads(line) for line in (out / ".extract-trace" / name).read_text().splitlines()]
    reused = [r["reused"] for r in trace if r["type"] == "piece"]
    assert reused.count(True) == checkpointed


def test_a_killed_split_chunk_resumes_from_its_checkpointed_sub_pieces(
    ray_address: str, slow_simulator: SimulatorProcess, tmp_path: Path
) -> None:
    import hashlib

    cli = Cli(ray_address, slow_simulator)
    docs = tmp_path / "docs"
    docs.mkdir()
    segment = docs / "split.md"
    # Sixteen paragraphs of ~300 B, each answered with four facts (~95 tokens): at a
    # 100-token budget only two paragraphs fit (after escalation), so the chunk splits
    # down three levels into eight two-paragraph leaves.
    segment.write_text(
        "\n\n".join(
            f"The {n}ingest service reads the {n}topic and writes {n}files to the {n}bucket, "
            f"where the {n}engine scans them; " + "the nightly batch keeps every row " * 5
            for n in (
                "Alder",
                "Birch",
                "Cedar",
                "Dogwood",
                "Elm",
                "Fir",
                "Ginkgo",
                "Hazel",
                "Ironwood",
                "Juniper",
                "Kapok",
                "Larch",
                "Maple",
                "Nutmeg",
                "Oak",
                "Pine",
            )
        )
    )
    source = str(segment)
    budget = "100"

    def run_args(out: Path) -> list[str]:
        return ["--context", CONTEXT, "--out", str(out), "--max-output-tokens", budget, source]

    clean = tmp_path / "clean"
    slow_simulator.reset()
    assert cli.extract(*run_args(clean)).returncode == 0
    clean_requests = slow_simulator.stats()["requests"]

    out = tmp_path / "out"
    slow_simulator.reset()
    driver = subprocess.Popen(
        cli.command(*run_args(out)),
        env=cli.env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while units_in(out, source) < 2:
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "no sub-piece was checkpointed"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    quiesce(slow_simulator)
    checkpoint = checkpointed(out, source)
    assert checkpoint.get("splits")  # the split was recorded before its sub-pieces ran
    paid = {
        hashlib.sha256(unit["user"].encode()).hexdigest()[:16]
        for unit in checkpoint["units"].values()
    }

    slow_simulator.reset()
    rerun = cli.extract(*run_args(out))
    assert rerun.returncode == 0, rerun.stderr
    asked = set(slow_simulator.stats()["prompts"])
    assert not paid & asked  # no checkpointed sub-piece was asked again
    assert slow_simulator.stats()["requests"] < clean_requests
    name = output_name(source)
    assert (out / name).read_bytes() == (clean / name).read_bytes()
