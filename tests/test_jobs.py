"""jobs/ and cluster/: the files a nightly `ray job submit` stands on.

The YAML checks read each file as its consumer would (`yaml.safe_load`, the
Ray cluster launcher's own JSON schema) and check what the docs promise.

The end-to-end tests start a real Ray head with its dashboard's job server on
loopback, then run `ray job submit` exactly as jobs/README.md tells a user to:
the repository as the working dir, jobs/runtime_env.yaml as the runtime env,
the endpoint from the head's environment, and `ray job stop` for the
cooperative stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from taguru_ray.contract.names import output_name
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, assert_imports_whole, checkpoint_units

JOBS = REPO / "jobs"
CLUSTER = REPO / "cluster"
RAY = str(Path(sys.executable).with_name("ray"))
ENTRYPOINT = ["python", "jobs/extract.py"]
EXAMPLES = REPO / "examples" / "corpus"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# Values that look like credentials: an OpenAI-style key, an AWS access key id,
# a 64-hex token (what `ray get-auth-token --generate` makes).
KEY_LOOKING = re.compile(r"sk-[A-Za-z0-9_-]{8,}|AKIA[0-9A-Z]{16}|\b[0-9a-f]{64}\b")


def strings_in(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from strings_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings_in(item)
    elif node is not None:
        yield str(node)


def assert_no_secrets(document: Any) -> None:
    for text in strings_in(document):
        assert not KEY_LOOKING.search(text), text


# --- jobs/runtime_env.yaml and jobs/extract.py -----------------------------------------


def test_the_runtime_env_ships_the_repo_stops_with_sigint_and_holds_no_secret() -> None:
    from ray.runtime_env import RuntimeEnv

    from taguru_ray.settings import declarations

    env = load(JOBS / "runtime_env.yaml")
    RuntimeEnv(**env)  # Ray's own validation: known fields, env_vars all strings
    assert env["working_dir"] == "."
    assert {".git/", ".venv/"} <= set(env["excludes"])
    variables = env["env_vars"]
    assert variables["RAY_JOB_STOP_SIGNAL"] == "SIGINT"
    assert int(variables["RAY_JOB_STOP_WAIT_TIME_S"]) >= 10
    # Every TAGURU_ variable is one extract reads (a misspelt one would be ignored silently).
    known = {d.knob.env for d in declarations() if d.knob.env}
    assert {name for name in variables if name.startswith("TAGURU_")} <= known
    assert "TAGURU_EXTRACT_API_KEY" not in variables
    assert "pip" not in env and "uv" not in env and "conda" not in env
    assert_no_secrets(env)


def test_the_entrypoint_runs_taguru_ray_from_its_checkout_and_exits_with_its_code(
    tmp_path: Path,
) -> None:
    # Run from elsewhere, with no PYTHONPATH: the package is found beside the script.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    usage = subprocess.run(
        [sys.executable, str(JOBS / "extract.py"), "extract", "--no-such-flag"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert usage.returncode == 2, usage.stderr
    lines = usage.stderr.splitlines()
    assert lines[0] == f"taguru-ray 0.1.0 from {REPO / 'taguru_ray'}"
    assert "unrecognized arguments: --no-such-flag" in usage.stderr
    assert lines[-1] == "taguru-ray exited 2"


# --- cluster/aws-spot.yaml ---------------------------------------------------------------


def test_the_launcher_config_passes_rays_validation_with_an_on_demand_head_and_spot_workers() -> (
    None
):
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = load(CLUSTER / "aws-spot.yaml")
    # What `ray up` does to the file before its first cloud call: merge Ray's AWS
    # defaults, fill per-type worker bounds, check it against Ray's JSON schema.
    prepared = prepare_config(config)
    validate_config(prepared)
    assert config["provider"]["type"] == "aws"

    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    assert "InstanceMarketOptions" not in head["node_config"]  # on-demand
    assert head["resources"] == {"CPU": 0}
    workers = {name: spec for name, spec in types.items() if name != config["head_node_type"]}
    assert workers
    for name, spec in workers.items():
        assert spec["node_config"]["InstanceMarketOptions"]["MarketType"] == "spot", name
        assert 0 <= spec["min_workers"] <= spec["max_workers"] <= config["max_workers"], name
    assert 1 <= sum(spec["min_workers"] for spec in workers.values()) <= config["max_workers"]
    assert config["max_workers"] <= 100

    # setup_commands install taguru-ray from the checkout that file_mounts copies over.
    checkout = next(remote for remote, local in config["file_mounts"].items() if local == ".")
    assert f"pip install --no-cache-dir {checkout}" in config["setup_commands"]
    assert config["docker"]["image"] == "rayproject/ray:2.60.0-py311-cpu"

    head_start = " ".join(config["head_start_ray_commands"])
    assert "--dashboard-port=8265" in head_start and "--dashboard-host=0.0.0.0" in head_start
    for commands in (config["head_start_ray_commands"], config["worker_start_ray_commands"]):
        assert "RAY_AUTH_MODE=token" in " ".join(commands)
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert_no_secrets(config)


# --- cluster/kuberay-raycluster.yaml -----------------------------------------------------


def containers_of(group: dict[str, Any]) -> list[dict[str, Any]]:
    return group["template"]["spec"]["containers"]


def test_the_kuberay_manifest_is_a_raycluster_with_an_on_demand_head_and_spot_workers() -> None:
    manifest = load(CLUSTER / "kuberay-raycluster.yaml")
    assert manifest["apiVersion"] == "ray.io/v1"
    assert manifest["kind"] == "RayCluster"
    spec = manifest["spec"]
    assert spec["rayVersion"] == "2.60.0"

    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert head["rayStartParams"]["dashboard-host"] == "0.0.0.0"
    assert head["template"]["spec"]["nodeSelector"] == {
        "eks.amazonaws.com/capacityType": "ON_DEMAND"
    }
    (head_container,) = containers_of(head)
    ports = {port["name"]: port["containerPort"] for port in head_container["ports"]}
    assert ports == {"gcs-server": 6379, "dashboard": 8265, "client": 10001}

    groups = spec["workerGroupSpecs"]
    assert groups
    for group in groups:
        pod = group["template"]["spec"]
        assert 0 <= group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        assert pod["nodeSelector"] == {"eks.amazonaws.com/capacityType": "SPOT"}
        assert pod["tolerations"]

    containers = [head_container] + [c for group in groups for c in containers_of(group)]
    for container in containers:
        # The image the README builds: Ray 2.60.0 on Python 3.11.
        assert container["image"].endswith(":0.1.0-ray2.60.0-py311"), container["name"]
        requests = container["resources"]["requests"]
        assert requests["cpu"] and requests["memory"], container["name"]
        env = {item["name"]: item for item in container["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        assert "secretKeyRef" in env["RAY_AUTH_TOKEN"]["valueFrom"]  # never a literal
        assert "TAGURU_EXTRACT_API_KEY" not in env
    assert_no_secrets(manifest)


# --- a real Ray head of our own -------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_members(session: int) -> list[int]:
    """Live (not zombie) pids whose session id is `session` (Linux /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            if os.getsid(pid) != session:
                continue
            # The state follows the parenthesised command name, which may hold spaces.
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (ProcessLookupError, PermissionError, FileNotFoundError):
            continue
        if state != "Z":
            members.append(pid)
    return members


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # gone since it was listed
            os.kill(pid, signum)


@dataclass
class RayHead:
    """A single-node Ray cluster started with `ray start --head --block`.

    Stopping it must not touch any other Ray on this machine: the test
    session's own runtime (`ray.init()` in conftest) and whatever other test
    runs share the host. `ray stop` kills every Ray process it can find, so it
    is never used. Instead `ray start` runs as the leader of a new session
    (`start_new_session=True`): every daemon it spawns (GCS, raylet, dashboard,
    agents) and every worker the raylet forks inherits that session id — Ray
    gives workers their own process *groups*, but not their own sessions — and
    `--block` keeps the leader alive for the whole test, so its pid (the
    session id) cannot be reused by an unrelated process meanwhile. `stop()`
    signals exactly the processes of that session. The only processes Ray
    starts in sessions of their own are a job's entrypoint and the watcher it
    pairs with it; the watcher kills the entrypoint's process group within a
    second of the job's supervisor (a worker of our session) dying, then exits.
    """

    process: subprocess.Popen[bytes]
    temp_dir: Path
    dashboard_url: str
    token: str
    log: Path

    @classmethod
    def start(cls, node_env: dict[str, str]) -> RayHead:
        # Short and under /tmp whatever TMPDIR says: Ray's unix sockets live
        # under the temp dir, and a socket path is capped at 107 bytes.
        temp_dir = Path(tempfile.mkdtemp(prefix="trh-", dir="/tmp"))
        dashboard_port = free_port()
        token = secrets.token_hex(32)
        env = {**node_env, **cls.auth_env(token)}
        log = temp_dir / "ray-start.log"
        command = [
            RAY,
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={free_port()}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard_port}",
            # Fixed defaults (52365, 10001) would collide with any other head on the host.
            f"--dashboard-agent-listen-port={free_port()}",
            f"--ray-client-server-port={free_port()}",
            "--num-cpus=2",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
        ]
        with log.open("wb") as sink:
            process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        head = cls(process, temp_dir, f"http://127.0.0.1:{dashboard_port}", token, log)
        try:
            head.wait_for_job_server()
        except BaseException:
            head.stop()
            raise
        return head

    @staticmethod
    def auth_env(token: str) -> dict[str, str]:
        # Token auth on, with the token from the environment, as cluster/ sets it up
        # (and independent of any ~/.ray/auth_token on this machine).
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}

    def wait_for_job_server(self, timeout: float = 60.0) -> None:
        """Until `ray start` is done (it writes the cluster address last) and jobs are served."""
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {self.token}"}
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"ray start exited: {self.log.read_text(errors='replace')}")
            if (self.temp_dir / "ray_current_cluster").exists():
                try:
                    with httpx.Client(trust_env=False, timeout=2.0) as http:
                        if http.get(f"{self.dashboard_url}/api/jobs/", headers=headers).is_success:
                            return
                except httpx.HTTPError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no job server at {self.dashboard_url} after {timeout} s")
            time.sleep(0.5)

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM every process of the head's session, SIGKILL what outlives `grace`.

        The GCS and the raylet take over ten seconds to drain after SIGTERM; for
        a throwaway head whose temp dir is deleted next, that drain saves nothing.
        """
        session = self.process.pid
        signal_all(session_members(session), signal.SIGTERM)
        deadline = time.monotonic() + grace
        while session_members(session) and time.monotonic() < deadline:
            time.sleep(0.2)
        signal_all(session_members(session), signal.SIGKILL)
        self.process.wait(timeout=10)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def client_env(head: RayHead) -> dict[str, str]:
    """What CI has when it runs `ray job submit`: the Ray token, and no endpoint settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TAGURU_", "RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"))
    }
    env.update(RayHead.auth_env(head.token))
    return env


API_KEY = "sk-test-0123456789abcdef-cluster-env-only"


@pytest.fixture(scope="module")
def ray_head(simulator_process: SimulatorProcess) -> Iterator[RayHead]:
    # The node's environment, as cluster/ sets it: the endpoint and the key come
    # from here, not from the repository. PATH leads with this virtualenv, as a
    # node's PATH leads with the Python that runs Ray (the entrypoint says
    # `python`). No PYTHONPATH: taguru_ray must come from the job's working dir.
    if not Path("/proc").is_dir():
        pytest.skip("RayHead.stop finds the head's processes by session id in /proc (Linux)")
    node_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "RAY_", "PYTHONPATH"))
    }
    node_env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        TAGURU_EXTRACT_URL=simulator_process.chat_url,
        TAGURU_EXTRACT_MODEL="taguru-sim",
        TAGURU_EXTRACT_API_KEY=API_KEY,
    )
    head = RayHead.start(node_env)
    try:
        yield head
    finally:
        head.stop()


def ray_job(head: RayHead, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RAY, "job", *args],
        env=client_env(head),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def submit(
    head: RayHead,
    job_id: str,
    *extract_args: str,
    wait: bool = True,
    working_dir: Path | None = None,
) -> str:
    """`ray job submit` as jobs/README.md writes it, from the repo root; returns its output.

    Without `working_dir`, the runtime env's own `working_dir: .` applies.
    """
    result = ray_job(
        head,
        "submit",
        "--address",
        head.dashboard_url,
        "--submission-id",
        job_id,
        "--runtime-env",
        "jobs/runtime_env.yaml",
        *(["--working-dir", str(working_dir)] if working_dir else []),
        *([] if wait else ["--no-wait"]),
        "--",
        *ENTRYPOINT,
        "extract",
        *extract_args,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def job_api(head: RayHead, path: str) -> Any:
    """The job server's REST API (what `ray job status` and `ray job logs` call)."""
    with httpx.Client(trust_env=False, timeout=30.0) as http:
        response = http.get(
            f"{head.dashboard_url}/api/jobs/{path}",
            headers={"Authorization": f"Bearer {head.token}"},
        )
    response.raise_for_status()
    return response.json()


def job_status(head: RayHead, job_id: str) -> tuple[str, int | None]:
    info = job_api(head, job_id)
    return info["status"], info.get("driver_exit_code")


def job_log(head: RayHead, job_id: str) -> str:
    return job_api(head, f"{job_id}/logs")["logs"]


def imported_from(log: str) -> Path:
    """The package folder jobs/extract.py names on the log's first line of its own."""
    line = next(line for line in log.splitlines() if line.startswith("taguru-ray 0.1.0 from "))
    return Path(line.removeprefix("taguru-ray 0.1.0 from "))


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, folder)
    return folder


@pytest.mark.slow
def test_a_submitted_job_extracts_from_the_working_dir_and_a_resubmit_skips_everything(
    ray_head: RayHead, simulator: SimulatorProcess, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path), tmp_path / "out"
    args = ("--context", CONTEXT, "--out", str(out), str(docs))

    first = submit(ray_head, "extract-first", *args, working_dir=REPO)
    assert job_status(ray_head, "extract-first") == ("SUCCEEDED", 0)
    log = job_log(ray_head, "extract-first")
    assert "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)" in log, first
    assert log.rstrip().endswith("taguru-ray exited 0"), log
    assert imported_from(log).is_relative_to(ray_head.temp_dir)  # Ray's copy, not the checkout

    sources = sorted(str(path) for path in docs.iterdir())
    assert sorted(p.name for p in out.glob("*.jsonl")) == sorted(map(output_name, sources))
    manifest = json.loads((out / ".extract-manifest.json").read_text())["documents"]
    assert sorted(manifest) == sources
    asked = simulator.stats()["requests"]
    assert asked >= len(sources)

    # The nightly rerun, as jobs/README.md writes it (the runtime env's `working_dir: .`).
    second = submit(ray_head, "extract-again", *args)
    assert job_status(ray_head, "extract-again") == ("SUCCEEDED", 0)
    again = job_log(ray_head, "extract-again")
    assert "extract: 0 written, 3 unchanged, 0 failed of 3 segment(s)" in again, second
    assert imported_from(again).is_relative_to(ray_head.temp_dir)
    assert simulator.stats()["requests"] == asked  # nothing asked twice

    # The key came from the head's environment: in no job log, no job record, no file.
    listing = ray_job(ray_head, "list", "--address", ray_head.dashboard_url).stdout
    assert "extract-again" in listing
    for text in (first, second, log, again, listing):
        assert API_KEY not in text
    assert all(API_KEY.encode() not in p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert_imports_whole(str(out))


def units_in(out: Path, source: str) -> int:
    return checkpoint_units(out, source)


@pytest.mark.slow
def test_ray_job_stop_lets_in_flight_completions_land_and_a_resubmit_asks_only_the_rest(
    ray_head: RayHead, simulator: SimulatorProcess, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    segment = docs / "long.md"
    segment.write_text(
        "\n\n".join(
            f"Section {i} explains how Worker{i} talks to Service{i} through Gateway{i}. "
            + "z " * 160
            for i in range(8)
        )
    )
    source, out = str(segment), tmp_path / "out"
    # One chunk at a time, so some chunks have not started when the stop comes.
    args = ("--context", CONTEXT, "--out", str(out), "--chunk-bytes", "512", "--parallel", "1")
    # One completion hangs at the model for a while: the stop lands while it is in flight.
    simulator.set_script([{"match": "Worker5 talks", "fault": "stall", "stall_seconds": 8}])

    submit(ray_head, "extract-stopped", *args, source, wait=False)
    before, steady_since, deadline = -1, time.monotonic(), time.monotonic() + 60
    while True:  # until the checkpoint stops growing with a completion in flight: the stall
        assert job_status(ray_head, "extract-stopped")[0] in ("PENDING", "RUNNING")
        assert time.monotonic() < deadline, job_log(ray_head, "extract-stopped")
        units = units_in(out, source)
        if units != before or simulator.stats()["in_flight"] == 0:
            before, steady_since = units, time.monotonic()
        elif before > 0 and time.monotonic() - steady_since > 1.0:
            break
        time.sleep(0.1)
    stopped = ray_job(ray_head, "stop", "--address", ray_head.dashboard_url, "extract-stopped")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr

    assert job_status(ray_head, "extract-stopped")[0] == "STOPPED"
    log = job_log(ray_head, "extract-stopped")
    assert "stopped early, chunk checkpoints saved; rerun to resume" in log, log
    assert log.rstrip().endswith("taguru-ray exited 130"), log
    # The completion that was in flight finished and was checkpointed; nothing new started.
    assert units_in(out, source) == before + 1
    assert not (out / output_name(source)).exists()

    simulator.set_script([])
    simulator.reset()
    submit(ray_head, "extract-resumed", *args, source)
    assert job_status(ray_head, "extract-resumed") == ("SUCCEEDED", 0)
    trace = (out / ".extract-trace" / output_name(source)).read_text().splitlines()
    chunks = json.loads(trace[0])["chunk_total"]
    assert simulator.stats()["requests"] == chunks - (before + 1)  # nothing paid for twice
    assert_imports_whole(str(out))


def test_spot_workers_declare_the_resource_that_keeps_segment_workers_on_them() -> None:
    launcher = yaml.safe_load((REPO / "cluster" / "aws-spot.yaml").read_text())
    spot = [t for name, t in launcher["available_node_types"].items() if "spot" in name]
    assert spot and all(t["resources"].get("taguru_worker") for t in spot)
    kuberay = yaml.safe_load((REPO / "cluster" / "kuberay-raycluster.yaml").read_text())
    [group] = kuberay["spec"]["workerGroupSpecs"]
    assert "taguru_worker" in group["rayStartParams"]["resources"]
