"""The joined Ray head lost mid-run is named as the head, not blamed on a worker.

Issue 37, item 13: with `--address` joining a head that then dies, each segment's
actor calls failed, was resubmitted four times and failed as "its worker died 4
times". A real head (`ray.cluster_utils.Cluster`, its own processes) loses its
GCS and then its segment workers while the run is under way: the run must end,
say once that the head is gone, and never blame a worker. (Killing the head's
raylet too would end this driver at once — on one machine it is the driver's own
raylet, and Ray exits a driver whose raylet is gone before any line is printed.)
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from ray.cluster_utils import Cluster

from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

SEGMENTS = 30


def test_a_lost_head_is_named_once_and_no_worker_is_blamed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(SEGMENTS):
        (docs / f"{i:03d}.md").write_text(f"Node{i} forwards requests to Service{i}.\n")
    made = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 2})
    try:
        with SimulatorProcess("--latency-ms", "400", "--slots", "2") as paced:
            cli = Cli(made.address, paced)
            driver = subprocess.Popen(
                cli.command("--context", CONTEXT, "--out", str(tmp_path / "out"),
                            "--max-inflight", "2", str(docs)),
                env=cli.env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + 120
            while paced.stats()["requests"] < 4:
                assert driver.poll() is None, driver.communicate()
                assert time.monotonic() < deadline, "the run made no progress"
                time.sleep(0.05)
            # The head's control plane goes, then the segment workers with it (as when the
            # head's machine is lost under a driver elsewhere): all processes this test
            # started, ended by PID.
            head = made.head_node.all_processes
            head["gcs_server"][0].process.kill()
            raylet = psutil.Process(head["raylet"][0].process.pid)
            for child in raylet.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if "SegmentWorker" in " ".join(child.cmdline()):
                        child.kill()
            try:
                _, stderr = driver.communicate(timeout=240)
            except subprocess.TimeoutExpired:
                driver.kill()
                _, stderr = driver.communicate()
                pytest.fail(f"the run hung after its head was lost:\n{stderr[-3000:]}")
    finally:
        made.shutdown()
    assert driver.returncode != 0, stderr
    assert stderr.count("the Ray head at") == 1, stderr[-3000:]
    assert "worker died" not in stderr, stderr[-3000:]
    assert "Traceback" not in stderr and "this is a bug" not in stderr, stderr[-3000:]


def test_a_gcs_address_splits_into_host_and_port() -> None:
    from taguru_ray.engine.head import split_address

    assert split_address("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert split_address("[::1]:6379") == ("::1", 6379)
    assert split_address("no-port") is None and split_address("host:http") is None
