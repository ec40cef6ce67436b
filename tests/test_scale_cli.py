"""Scale-out end to end: stopping, preemption, endpoints, pauses, adaptive concurrency."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, Cli, quiesce

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slow() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--latency-ms", "300", "--slots", "8") as process:
        yield process


def corpus(folder: Path, segments: int, paragraphs: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(segments):
        (folder / f"{s:03d}.md").write_text(
            "\n\n".join(
                f"Segment{s} part {p}: the Gateway{s}x{p} forwards calls to the Backend{s}x{p} "
                "service, which answers from its Cache tier. " + "filler words follow here " * 8
                for p in range(paragraphs)
            )
        )
    return folder


# How long a run may take to get going: bounds a wait, never a measure of speed (a
# busy machine starts Ray workers slowly).
STARTUP_S = 180


def args(out: Path, docs: Path, *extra: str) -> list[str]:
    return ["--context", CONTEXT, "--out", str(out), "--chunk-bytes", "512", *extra, str(docs)]


def units(out: Path) -> int:
    """Units checkpointed and not yet settled, over every segment (ADR 0049)."""
    total = 0
    for path in (out / ".extract-trace").glob("*.attempts.jsonl"):
        held = 0  # this segment's
        for line in path.read_text().splitlines():
            record = json.loads(line) if line.endswith("}") else {}
            if record.get("type") == "checkpoint":
                held = 0 if record.get("settled") else held + ("unit" in record)
        total += held
    return total


def pieces_written(out: Path) -> int:
    total = 0
    for path in (out / ".extract-trace").glob("*.jsonl"):
        if path.name.endswith(".attempts.jsonl"):
            continue
        total += sum(
            1 for line in path.read_text().splitlines() if json.loads(line)["type"] == "piece"
        )
    return total


def quiet(simulator: SimulatorProcess) -> dict[str, Any]:
    """The simulator's counters once a killed run's last requests have landed."""
    quiesce(simulator)
    return simulator.stats()


def start(cli: Cli, *arguments: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cli.command(*arguments),
        env=cli.env(**env),
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def segment_workers() -> list[psutil.Process]:
    """The segment worker processes of this test session's Ray: the raylet that starts
    them is a child of this process (conftest's ray.init), so a suite running beside
    this one on the same machine is never touched."""
    found = []
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "SegmentWorker" in " ".join(process.cmdline()):
                found.append(process)
    return found


def no_segment_workers_left() -> None:
    """Wait for the worker processes of finished runs to exit (Ray ends them with their
    driver's job)."""
    deadline = time.monotonic() + STARTUP_S
    while segment_workers():
        assert time.monotonic() < deadline, "a finished run's segment workers lingered"
        time.sleep(0.2)


def a_worker_once_a_unit_is_checkpointed(
    driver: subprocess.Popen[str], out: Path
) -> psutil.Process:
    """A SegmentWorker process of the running extract, once it has checkpointed work."""
    deadline = time.monotonic() + STARTUP_S
    while units(out) < 1:
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    workers = segment_workers()
    assert workers, "no SegmentWorker process found"
    return workers[0]


def test_sigint_lets_completions_in_flight_finish_and_exits_130(
    ray_address: str, slow: SimulatorProcess, tmp_path: Path
) -> None:
    cli = Cli(ray_address, slow)
    docs, out = corpus(tmp_path / "docs", 4), tmp_path / "out"
    slow.reset()
    driver = start(cli, *args(out, docs, "--parallel", "2", "--segment-window", "4"))
    deadline = time.monotonic() + STARTUP_S
    while units(out) < 2:
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    driver.send_signal(signal.SIGINT)
    stdout, stderr = driver.communicate(timeout=60)
    assert driver.returncode == 130, stderr
    assert "stopping: completions in flight finish and are checkpointed" in stderr
    assert "— stopped early, chunk checkpoints saved; rerun to resume" in stdout
    assert "stopped after reaching " in stderr
    stats = quiet(slow)
    # Every completion the simulator answered is a checkpointed unit or a written piece.
    assert stats["by_outcome"].get("ok", 0) == units(out) + pieces_written(out)

    slow.reset()
    rerun = cli.extract(*args(out, docs))
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.splitlines()[-1].startswith("extract: ") and " 0 failed " in rerun.stdout


def test_a_stopped_run_that_also_had_a_failure_exits_1_as_the_reference_does(
    ray_address: str, slow: SimulatorProcess, tmp_path: Path
) -> None:
    cli = Cli(ray_address, slow)
    docs, out = corpus(tmp_path / "docs", 4), tmp_path / "out"
    (docs / "000-bad.md").write_bytes(b"\xff\xfe is not UTF-8\n")  # first in name order: fails
    driver = start(cli, *args(out, docs, "--segment-window", "4"))
    deadline = time.monotonic() + STARTUP_S
    while units(out) < 1:
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    driver.send_signal(signal.SIGINT)
    stdout, stderr = driver.communicate(timeout=60)
    assert driver.returncode == 1, stderr  # a failed segment outranks the stop's 130
    summary = stdout.splitlines()[-1]
    assert summary.startswith("extract: ") and " 1 failed of 5 segment(s)" in summary
    assert summary.endswith("— stopped early, chunk checkpoints saved; rerun to resume")
    quiet(slow)


def test_a_worker_process_killed_mid_run_does_not_fail_the_run(
    ray_address: str, slow: SimulatorProcess, tmp_path: Path
) -> None:
    cli = Cli(ray_address, slow)
    docs = corpus(tmp_path / "docs", 3)
    clean = tmp_path / "clean"
    assert cli.extract(*args(clean, docs)).returncode == 0
    no_segment_workers_left()  # the worker killed below is this run's

    out = tmp_path / "out"
    driver = start(cli, *args(out, docs, "--workers", "2"))
    worker = a_worker_once_a_unit_is_checkpointed(driver, out)
    os.kill(worker.pid, signal.SIGKILL)
    _, stderr = driver.communicate(timeout=180)
    assert driver.returncode == 0, stderr
    for path in clean.glob("*.jsonl"):
        assert (out / path.name).read_bytes() == path.read_bytes()


def test_a_worker_that_stops_answering_is_restarted_and_the_run_completes(
    ray_address: str, slow: SimulatorProcess, tmp_path: Path
) -> None:
    """A frozen worker process (SIGSTOP: alive to Ray, silent to everyone) would hold
    its segments for ever; the watchdog restarts it and they are resubmitted."""
    cli = Cli(ray_address, slow)
    docs = corpus(tmp_path / "docs", 4)
    clean = tmp_path / "clean"
    assert cli.extract(*args(clean, docs)).returncode == 0
    no_segment_workers_left()  # every worker seen from here on is this run's

    out = tmp_path / "out"
    driver = start(cli, *args(out, docs, "--workers", "2"), TAGURU_RAY_WORKER_HANG_SECS="4")
    a_worker_once_a_unit_is_checkpointed(driver, out)
    # Every worker frozen at once, none can finish its segments before the watchdog
    # notices: the run completes only through the restart (deterministic on a busy box).
    frozen = segment_workers()
    for process in frozen:
        os.kill(process.pid, signal.SIGSTOP)
    try:
        _, stderr = driver.communicate(timeout=180)
    finally:
        for process in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
    assert driver.returncode == 0, stderr
    assert "has not answered for 4 s (TAGURU_RAY_WORKER_HANG_SECS); restarting it" in stderr
    assert "resubmitting" in stderr
    for path in clean.glob("*.jsonl"):
        assert (out / path.name).read_bytes() == path.read_bytes()


def test_a_429_retry_after_pauses_every_caller(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", 8, paragraphs=4)
    cli.simulator.set_script([{"fault": "429", "times": 1, "retry_after": 2}])
    result = cli.extract(*args(tmp_path / "out", docs, "--parallel", "2"))
    assert result.returncode == 0, result.stderr
    arrivals = cli.simulator.stats()["arrivals"]
    [paused_at] = [t for t, outcome in arrivals if outcome == "429"]
    inside = [t for t, _ in arrivals if paused_at + 0.3 < t < paused_at + 1.9]
    assert inside == []  # nobody, from any worker, asked while the endpoint rested
    assert any(t >= paused_at + 1.9 for t, _ in arrivals)


def test_several_endpoints_share_the_load_and_a_failing_one_is_rested(
    ray_address: str, tmp_path: Path
) -> None:
    with SimulatorProcess("--latency-ms", "50") as good, SimulatorProcess() as bad:
        cli = Cli(ray_address, good)
        docs = corpus(tmp_path / "docs", 6, paragraphs=3)
        both = cli.extract(
            *args(tmp_path / "both", docs, "--endpoint", good.chat_url, "--endpoint", bad.chat_url)
        )
        assert both.returncode == 0, both.stderr
        assert good.stats()["requests"] > 0 and bad.stats()["requests"] > 0

        bad.set_script([{"fault": "500"}])
        bad.reset()
        good.reset()
        failing = cli.extract(
            *args(
                tmp_path / "failing", docs, "--endpoint", good.chat_url, "--endpoint", bad.chat_url
            )
        )
        assert failing.returncode == 0, failing.stderr
        assert bad.stats()["requests"] <= 6  # rested after three failures in a row
        assert good.stats()["by_outcome"]["ok"] > 0


def test_adaptive_concurrency_reports_its_limit_and_progress_lines_show(
    ray_address: str, tmp_path: Path
) -> None:
    with SimulatorProcess("--latency-ms", "20", "--slots", "3") as knee:
        cli = Cli(ray_address, knee)
        docs = corpus(tmp_path / "docs", 160, paragraphs=2)
        result = cli.extract(
            *args(tmp_path / "out", docs, "--max-inflight", "auto", "--segment-window", "160"),
            env=cli.env(TAGURU_RAY_PROGRESS_SECONDS="0.5"),
        )
        assert result.returncode == 0, result.stderr
        # 32 in flight fill three slots: slow start doubles once, then sees the queue.
        assert "taguru: extract: in-flight limit 32 → 64 (median latency " in result.stderr
        assert " segment(s) (" in result.stderr and " in flight (limit " in result.stderr
        assert "extract: " in result.stderr and " input + " in result.stderr
        assert len(list((tmp_path / "out").glob("*.jsonl"))) == 160
        assert output_name(str(docs / "000.md")) in {
            p.name for p in (tmp_path / "out").glob("*.jsonl")
        }


def test_metrics_reach_prometheus_through_rays_exporter(cli: Cli, tmp_path: Path) -> None:
    import httpx
    import ray

    docs = corpus(tmp_path / "docs", 2, paragraphs=2)
    assert cli.extract(*args(tmp_path / "out", docs)).returncode == 0
    port = ray._private.worker.global_worker.node.metrics_export_port
    wanted = {
        "ray_taguru_ray_requests_total",
        "ray_taguru_ray_attempts_total",
        "ray_taguru_ray_tokens_total",
        "ray_taguru_ray_in_flight",
    }
    found: set[str] = set()
    deadline = time.monotonic() + 30  # the exporter publishes every few seconds
    while not wanted <= found and time.monotonic() < deadline:
        time.sleep(1)
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        found = {
            line.split("{")[0].split(" ")[0]
            for line in text.splitlines()
            if line.startswith("ray_taguru_ray_")
        }
    assert wanted <= found


def test_kept_permits_hold_the_cap_number_every_attempt_once_and_count_every_request(
    cli: Cli, tmp_path: Path
) -> None:
    """Two workers with more segments than permits: permits pass from request to request
    inside each worker (ADR 0017), the gateway hearing in batches. The cap still holds at
    the server, attempt_seq is still 1..N run-wide, and the totals count every request."""
    docs, out = corpus(tmp_path / "docs", 40, paragraphs=2), tmp_path / "out"
    result = cli.extract(
        *args(out, docs, "--max-inflight", "4", "--workers", "2", "--segment-window", "40")
    )
    assert result.returncode == 0, result.stderr
    stats = cli.simulator.stats()
    assert stats["max_in_flight"] <= 4
    seqs = sorted(
        record["attempt_seq"]
        for path in (out / ".extract-trace").glob("*.attempts.jsonl")
        for record in map(json.loads, path.read_text().splitlines())
        if record["type"] == "attempt"
    )
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 40
    totals = (
        f"extract: {len(seqs)} completion(s), {stats['requests']} request(s), "
        f"{stats['prompt_tokens']} input + {stats['completion_tokens']} output tokens"
    )
    assert totals in result.stderr
