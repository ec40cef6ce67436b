"""A spot node taken back mid-run, on a real multi-node Ray cluster on this machine.

A head and two worker nodes (`ray.cluster_utils.Cluster`), the segment workers
placed on the worker nodes by `--worker-resource` as a real fleet places them;
one worker node is removed while the run is under way, as a spot instance is
reclaimed. The run must complete within a bounded time, ask no checkpointed
completion again, and write the files an uninterrupted run writes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

SEGMENTS = 40
RESOURCE = "spot"


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, list[object]]]:
    # Not connected: the test session's driver stays on its own Ray; only the CLI joins.
    made = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1})
    nodes = [made.add_node(num_cpus=1, resources={RESOURCE: 1}) for _ in range(2)]
    made.wait_for_nodes()
    try:
        yield made, nodes
    finally:
        made.shutdown()


@pytest.fixture(scope="module")
def paced() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--latency-ms", "300", "--slots", "4") as process:
        yield process


def corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for i in range(SEGMENTS):
        (folder / f"{i:03d}.md").write_text(
            f"Node{i} forwards requests to Service{i}, which reads from Store{i}.\n"
        )
    return folder


def command(address: str, out: Path, docs: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "taguru_ray",
        "extract",
        "--address",
        address,
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--max-inflight",
        "4",
        "--workers",
        "2",
        "--worker-resource",
        RESOURCE,
        str(docs),
    ]


def sources(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


def test_a_worker_node_removed_mid_run_costs_only_what_was_in_flight(
    cluster: tuple[Cluster, list[object]], paced: SimulatorProcess, tmp_path: Path
) -> None:
    made, nodes = cluster
    cli = Cli(made.address, paced)
    docs = corpus(tmp_path / "docs")
    clean = tmp_path / "clean"
    paced.reset()
    done = subprocess.run(
        command(made.address, clean, docs),
        env=cli.env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert paced.stats()["requests"] == SEGMENTS

    out = tmp_path / "out"
    paced.reset()
    driver = subprocess.Popen(
        command(made.address, out, docs),
        env=cli.env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while paced.stats()["requests"] < 8:
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.05)
    made.remove_node(nodes[1])  # a spot node taken back, with the worker it held
    removed_at = time.monotonic()
    try:
        _, stderr = driver.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        driver.kill()
        _, stderr = driver.communicate()
        pytest.fail(f"the run hung after the node was removed:\n{stderr[-3000:]}")
    assert driver.returncode == 0, stderr
    assert time.monotonic() - removed_at < 180
    # At most the completions in flight on the lost node are asked again (--max-inflight).
    assert SEGMENTS <= paced.stats()["requests"] <= SEGMENTS + 4
    assert sources(out) == sources(clean)
