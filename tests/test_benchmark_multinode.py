"""The multi-node benchmark's smallest configuration, end to end: the JSON's shape and sane
values, never its speed.

`python -m benchmarks.multinode --smoke` starts a head and two worker nodes
(`ray.cluster_utils.Cluster`) and two simulators, runs `taguru-ray extract` on them
three times (a small run, the corpus, the corpus with a worker node removed mid-run)
and writes the JSON `make bench` keeps under `multinode`. Its own cluster, not the
session's Ray.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

from tests.support import REPO

pytestmark = pytest.mark.slow

SEGMENTS = 40  # the smoke preset's
SMALL = 8
ROLES = {"driver", "gateway", "segment_workers", "ledger", "ray"}


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("multinode")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.multinode",
            "--smoke",
            "--results-dir",
            str(folder / "results"),
            "--work-dir",
            str(folder / "work"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    out = folder / "results"
    latest = out / "multinode-smoke-latest.json"
    written = [path for path in out.glob("multinode-smoke-*.json") if path != latest]
    assert len(written) == 1 and latest.read_bytes() == written[0].read_bytes()
    return json.loads(latest.read_text(encoding="utf-8"))


def _check_complete(run: dict[str, Any], segments: int) -> None:
    assert run["exit_code"] == 0
    assert run["written_files"] == segments
    assert run["summary"] == {"written": segments, "unchanged": 0, "failed": 0, "of": segments}
    assert _positive(run["wall_s"]) and _positive(run["segments_per_s"])
    assert len(run["completions_by_endpoint"]) == 2
    assert sum(run["completions_by_endpoint"]) == run["completions"]
    assert set(run["cpu_s_by_role"]) == ROLES
    assert _positive(run["cpu_s_by_role"]["driver"])
    assert _positive(run["cpu_s_by_role"]["segment_workers"])


def test_the_json_names_the_machine_the_parameters_and_the_cluster(
    results: dict[str, Any],
) -> None:
    assert results["name"] == "multinode-smoke"
    assert _positive(results["machine"]["cores"])
    params = results["parameters"]
    assert params["segments"] == SEGMENTS and params["small_segments"] == SMALL
    assert params["endpoints"] == 2 and params["worker_nodes"] >= 2
    assert _positive(results["cluster"]["start_s"])


def test_every_node_up_one_completion_a_segment_on_both_endpoints(
    results: dict[str, Any],
) -> None:
    for key, segments in (("small", SMALL), ("clean", SEGMENTS)):
        run = results[key]
        _check_complete(run, segments)
        assert run["completions"] == segments  # one chunk, one completion each
        assert run["by_outcome"] == {"ok": segments}
    clean = results["clean"]
    assert all(count > 0 for count in clean["completions_by_endpoint"])
    assert _positive(clean["ideal_completions_per_s"])


def test_segment_workers_ran_on_the_worker_nodes_and_the_gateway_on_the_head(
    results: dict[str, Any],
) -> None:
    placed = results["clean"]["placement"]
    assert placed["ray::SegmentWorker"] == ["worker-1", "worker-2"]
    assert placed["ray::Gateway"] == ["head"]
    assert placed["ray::Ledger"] == ["head"]


def test_cpu_per_completion_by_role_has_the_issue_targets(results: dict[str, Any]) -> None:
    roles = results["cpu_ms_per_completion"]
    assert set(roles) == ROLES
    assert [roles[r]["target"] for r in ("driver", "gateway", "segment_workers")] == [
        "<= 0.3",
        "<= 0.3",
        "<= 2.0",
    ]
    assert isinstance(roles["driver"]["cpu_ms_per_completion"], float)


def test_the_run_with_a_node_removed_completes_and_says_when_the_lost_segments_ran_again(
    results: dict[str, Any],
) -> None:
    removed = results["removed"]
    assert removed["completed"] is True and removed["failure"] is None
    _check_complete(removed, SEGMENTS)
    removal = removed["removal"]
    # Only a lost segment is asked twice: its request was in flight, or its answer not
    # yet checkpointed, when the node went (on a busy machine answers can wait a moment
    # for the worker's CPU, so in-flight permits alone do not bound them).
    asked_twice = removed["completions"] - SEGMENTS
    assert asked_twice == removal["completions_asked_twice"]
    assert 0 <= asked_twice <= removal["lost_asked_again"]
    assert removed["outputs_identical_to_clean"] is True
    assert removal["node"] == "worker-2"
    assert removal["lost_segments"] > 0
    assert (
        removal["lost_asked_again"] + removal["lost_done_without_a_new_request"]
        == (removal["lost_segments"])
    )
    assert removal["lost_prompt_unknown"] == []
    assert _positive(removal["recovery_s"])
    assert removal["first_lost_asked_again_after_s"] <= removal["recovery_s"]
    assert _positive(removal["loss_detected_after_s"])
    assert _positive(removal["segments_per_s_whole_run"])
    assert results["recovery_s"] == removal["recovery_s"]
    assert results["removed_vs_clean"] == removal["segments_per_s_vs_clean"]
    assert sum(removal["requests_per_s_timeline"]) == removed["completions"]
