"""The model's own replicas (--engine) on a real multi-node Ray cluster on this machine.

A head and two worker nodes, each worker declaring one GPU of its own type
(`ray.cluster_utils.Cluster`: Ray schedules a GPU it cannot see), with stand-ins
for vLLM and SGLang on the nodes' PATH and PYTHONPATH (`tests/engine_standins.py`).
Two runs of the CLI cover the acceptance of issue 48:

- `extract --engine simulate --engine-replicas 2 --engine-gpus 1` writes the bytes a
  run against one simulator writes, though a GPU node is removed while it runs: the
  replica on it is lost and replaced on a node added as an autoscaler would, no
  completion is answered twice, and no replica process is left after it;
- `benchmark extract` with a vLLM cell on the A10G node and an SGLang cell on the L4
  one: both run end to end through the stand-ins, started with the exact argv a GPU
  host runs, and each cell's record names the engine, its version and the GPU type
  read from the node it ran on.

Segment workers stay on the head (`--worker-resource`): what is lost with the node
is the replica alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from ray.cluster_utils import Cluster

from taguru_ray import __version__
from taguru_ray.simulate.harness import SimulatorProcess
from tests.engine_standins import invocations, standin_environment, write_standins
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

SEGMENTS = 30
HEAD = "engine_head"  # the head's custom resource: segment workers stay there
MODEL = "engine-cluster-model"


@contextlib.contextmanager
def environment(extra: dict[str, str]) -> Iterator[None]:
    """The stand-ins on a node's path: a raylet passes its environment to its workers."""
    saved = dict(os.environ)
    os.environ.update(extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def standins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_standins(tmp_path_factory.mktemp("standins"))


@pytest.fixture(scope="module")
def gpu_cluster(standins: Path) -> Iterator[tuple[Cluster, dict[str, Any]]]:
    with environment(standin_environment(standins, REPO)):
        made = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={"num_cpus": 2, "resources": {HEAD: 100}},
        )
        nodes = {
            kind: made.add_node(num_cpus=1, num_gpus=1, resources={f"accelerator_type:{kind}": 1})
            for kind in ("A10G", "L4")
        }
        made.wait_for_nodes()
    try:
        yield made, nodes
    finally:
        made.shutdown()


def corpus(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"{i:03d}.md").write_text(
            f"Node{i} forwards requests to Service{i}, which reads from Store{i}.\n"
        )
    return folder


def sources(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


def records(sidecar: Path, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in sidecar.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("type") == kind]


def replica_processes(model: str) -> list[psutil.Process]:
    """The guards and servers of replicas serving `model` (their argv names it)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        words = process.info["cmdline"] or []
        if model in words and any("taguru_ray" in w or "sglang" in w or "vllm" in w for w in words):
            found.append(process)
    return found


def extract(address: str, out: Path, docs: Path, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "taguru_ray", "extract", "--address", address,
        "--context", CONTEXT, "--out", str(out), "--max-inflight", "4",
        "--workers", "2", "--worker-resource", HEAD, *flags, str(docs),
    ]  # fmt: skip


def test_replicas_write_one_simulators_bytes_and_survive_a_gpu_node_taken_back(
    gpu_cluster: tuple[Cluster, dict[str, Any]], standins: Path, tmp_path: Path
) -> None:
    made, nodes = gpu_cluster
    docs = corpus(tmp_path / "docs", SEGMENTS)
    with SimulatorProcess("--slots", "8") as one:  # the bytes do not hang on its pace
        env = Cli(made.address, one).env(TAGURU_EXTRACT_MODEL=MODEL)
        clean = tmp_path / "clean"
        done = subprocess.run(
            extract(made.address, clean, docs), env=env, cwd=REPO, capture_output=True,
            text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    del env["TAGURU_EXTRACT_URL"]
    out, sidecar = tmp_path / "out", tmp_path / "side.jsonl"
    flags = ["--engine", "simulate", "--engine-replicas", "2", "--engine-gpus", "1"]
    # Slow enough that the run outlasts the loss being noticed (a few health questions).
    flags += ["--engine-args=--latency-ms 1000 --slots 2", "--diagnostics-out", str(sidecar)]
    driver = subprocess.Popen(
        extract(made.address, out, docs, *flags), env=env, cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while len(list(out.glob("*.jsonl"))) < 6:  # both replicas up, the run under way
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.1)
    made.remove_node(nodes["L4"])  # a spot GPU node taken back, with the replica on it
    with environment(standin_environment(standins, REPO)):  # the autoscaler's new node
        nodes["L4"] = made.add_node(num_cpus=1, num_gpus=1, resources={"accelerator_type:L4": 1})
    try:
        _, stderr = driver.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        driver.kill()
        pytest.fail(f"the run hung after the node was removed:\n{driver.communicate()[1][-3000:]}")
    assert driver.returncode == 0, stderr
    assert sources(out) == sources(clean)
    lost = [line for line in stderr.splitlines() if "engine: replica" in line and " lost (" in line]
    assert lost, stderr
    [gateway] = records(sidecar, "gateway")
    # Nothing answered twice: the lost replica's requests were asked again, each once.
    assert gateway["outcomes"]["ok"] == SEGMENTS, gateway
    [engine] = records(sidecar, "engine")
    assert engine["lost"] >= 1 and engine["engine"] == "simulate"
    assert set(engine["accelerators"]) <= {"A10G", "L4"} and engine["version"] == __version__
    assert replica_processes(MODEL) == []  # every server ended with the run


def test_benchmark_cells_start_vllm_and_sglang_on_the_gpu_type_they_name(
    gpu_cluster: tuple[Cluster, dict[str, Any]], standins: Path, tmp_path: Path
) -> None:
    made, _ = gpu_cluster
    docs = corpus(tmp_path / "docs", 4)
    models = tmp_path / "models.json"
    entry = {"model": MODEL, "gpus": 1, "structured_output": "json-schema"}
    models.write_text(json.dumps({"taguru_benchmark_models": 1, "models": [
        {**entry, "id": "vllm-a10g", "engine": "vllm", "accelerator": "A10G",
         "args": "--max-model-len 4096"},
        {**entry, "id": "sglang-l4", "engine": "sglang", "accelerator": "L4",
         "args": ["--mem-fraction-static", "0.8"]},
    ]}))  # fmt: skip
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    done = subprocess.run(
        [
            sys.executable, "-m", "taguru_ray", "benchmark", "extract", "--models", str(models),
            "--context", CONTEXT, "--out", str(results), "--address", made.address,
            "--workers", "1", "--worker-resource", HEAD, str(docs),
        ],
        env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO, capture_output=True, text=True,
        timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((results / "manifest.json").read_text())
    ran = {cell["model_id"]: (cell["outcome"], cell["engine"]) for cell in manifest["cells"]}
    assert ran == {
        "vllm-a10g": ("complete", {"engine": "vllm", "version": __version__, "accelerator":
                                   "A10G", "gpus": 1, "replicas": 1, "lost": 0}),
        "sglang-l4": ("complete", {"engine": "sglang", "version": __version__, "accelerator":
                                   "L4", "gpus": 1, "replicas": 1, "lost": 0}),
    }  # fmt: skip
    [vllm] = invocations(standins, "vllm")
    host, port = vllm["argv"][4], vllm["argv"][6]
    assert vllm == {
        "argv": ["vllm", "serve", MODEL, "--host", host, "--port", port,
                 "--tensor-parallel-size", "1", "--max-model-len", "4096"],
        "gpus": ["0"],
    }  # fmt: skip
    [sglang] = invocations(standins, "sglang")
    python, host, port = sglang["argv"][0], sglang["argv"][6], sglang["argv"][8]
    assert os.path.basename(python).startswith("python")
    assert sglang["argv"] == [
        python, "-m", "sglang.launch_server", "--model-path", MODEL, "--host", host,
        "--port", port, "--tp-size", "1", "--mem-fraction-static", "0.8",
    ]  # fmt: skip
    assert replica_processes(MODEL) == []
