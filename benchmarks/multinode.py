"""A multi-node Ray cluster on one machine, with and without a worker node removed (issue 23).

A head and two worker nodes (`ray.cluster_utils.Cluster`, as `tests/test_multinode.py`
starts them); the worker nodes declare the custom resource `spot`, and `taguru-ray
extract` joins the cluster with `--address` and `--worker-resource spot`, the path a
real fleet uses, so its segment workers run on the worker nodes and the driver's
actors (gateway, ledger) on the head. Two simulator endpoints (`--endpoint` twice)
of C slots and latency L each serve every run. Three runs, in this order:

- **small**: a short run with the same flags, the start-up the marginal CPU leaves out;
- **clean**: the corpus, every node up: completions/s and CPU by process role;
- **removed**: the corpus again, and once a quarter of its segments have been asked
  one worker node is removed (`Cluster.remove_node`: its raylet, its segment worker
  and everything else on it die, as a spot instance reclaimed). Measured: how long
  until the segments the lost worker held are asked again, and throughput over the
  whole run.

Everything is read from outside the run: completions and their timing from the two
simulators' `/stats` (polled every STATS_POLL_S), CPU from `/proc` samples of every
process of the cluster and the driver (the simulators excluded), which segments were
lost from the driver's stderr ("the worker running it died"), and which request was
theirs from the prompt each segment's attempts log records (`.extract-trace/`).

    python -m benchmarks.multinode            # 600 segments (2 to 6 minutes here)
    python -m benchmarks.multinode --quick    # 300 segments
    python -m benchmarks.multinode --smoke    # 40 segments, C = 2 (the test's)

`make bench` runs it too (`benchmarks.run`, the preset matching its own) and keeps the
result under `multinode` in its JSON. Targets are reported, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from benchmarks.corpus import write_corpus
from benchmarks.process_runs import (
    CONTEXT,
    MODEL,
    PROJECT_ROOT,
    RESULTS_DIR,
    TREE_POLL_S,
    BenchFailed,
    _process_kind,
    psutil,
    set_aside,
    sim_window,
    work_dir,
)
from benchmarks.results_file import write_result
from benchmarks.roles import by_role, marginal_by_role
from taguru_ray.contract.names import TRACE, attempts_name
from taguru_ray.simulate.answers import first_user_turn
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.simulate.server import prompt_key

RESOURCE = "spot"  # what the worker nodes declare and --worker-resource asks for
STATS_POLL_S = 0.1  # two simulators polled: the main bench's load on /stats, half the resolution
DIED = re.compile(r"^taguru: extract: (.+): the worker running it died \(")
RECOVERY_WHAT = {
    "removed_at_s": "when Cluster.remove_node was called, seconds after the driver started",
    "lost_segments": "segments the driver resubmitted because the worker running them died",
    "recovery_s": "removal to the moment the last of the lost segments had been asked "
    "again: its prompt counted at a simulator once more than when the node was gone",
    "first_lost_asked_again_after_s": "the same, for the first of them",
    "loss_detected_after_s": "removal to the driver's first 'the worker running it died' line",
    "longest_silence_after_removal_s": "the longest span after the removal in which no "
    "request arrived at either simulator",
    "successor_worker_up_after_s": "removal to the first new ray::SegmentWorker process",
    "segments_per_s_whole_run": "segments / (last answer - first request) at the simulators",
}
ROUTINE = re.compile(r"the worker running it died \(|finished after \d+ worker death|: progress: ")
SUMMARY = re.compile(r"^extract: (\d+) written, (\d+) unchanged, (\d+) failed of (\d+) segment")


@dataclass
class Params:
    """The sizes of the multi-node benchmark; the defaults are `make bench`'s."""

    segments: int = 600
    small_segments: int = 100  # the run the marginal CPU is taken against
    segment_bytes: int = 1024  # one chunk, one completion per segment
    endpoints: int = 2
    slots: int = 32  # C per endpoint: both together are the main bench's 64
    latency_ms: float = 200.0  # L
    max_inflight: int = 64  # the endpoints' slots together
    segment_window: int = 256
    worker_nodes: int = 2
    workers: int = 2  # segment workers: one a worker node (SPREAD)
    remove_after: float = 0.25  # share of the segments asked before a node is removed
    run_timeout_s: float = 600.0
    cluster_timeout_s: float = 120.0


PRESETS: dict[str, dict[str, Any]] = {
    "full": {},
    "quick": {"segments": 300, "small_segments": 50},
    # Long enough (40 segments at 2 x 2 slots of 300 ms: about 3 s of requests) that the
    # node goes while the lost worker still holds segments.
    "smoke": {
        "segments": 40,
        "small_segments": 8,
        "slots": 2,
        "latency_ms": 300.0,
        "max_inflight": 4,
        "segment_window": 64,
        "run_timeout_s": 240.0,
    },
}


def preset(name: str) -> Params:
    return Params(**PRESETS[name])


def params_for(main_segments: int) -> Params:
    """The preset for a `benchmarks.run` of `main_segments`: full at its full corpus,
    quick at its quick corpus, smoke below."""
    from benchmarks.process_runs import PRESETS as MAIN_PRESETS
    from benchmarks.process_runs import Params as MainParams

    if main_segments >= MainParams().segments:
        return preset("full")
    if main_segments >= MAIN_PRESETS["quick"]["segments"]:
        return preset("quick")
    return preset("smoke")


# --------------------------------------------------------------------- the cluster


@dataclass
class Nodes:
    """The running cluster: its address and the worker nodes, by label."""

    cluster: Any  # ray.cluster_utils.Cluster
    workers: dict[str, Any]  # "worker-1" -> ray._private.node.Node
    started_s: float

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def raylets(self) -> dict[int, str]:
        """Raylet pid -> node label: a process's node is the raylet above it."""
        nodes = {"head": self.cluster.head_node, **self.workers}
        out: dict[int, str] = {}
        for label, node in nodes.items():
            for info in getattr(node, "all_processes", {}).get("raylet", []):
                out[info.process.pid] = label
        return out


@contextlib.contextmanager
def cluster(p: Params, log: Callable[[str], None]) -> Iterator[Nodes]:
    """A head (1 CPU) and `worker_nodes` nodes declaring RESOURCE; the driver is not
    connected (only the CLI joins). One retry: a node start on a loaded machine can
    time out."""
    from ray.cluster_utils import Cluster

    for attempt in (1, 2):
        made = Cluster(initialize_head=False, connect=False)
        started = time.perf_counter()
        try:
            # A dashboard port of its own: the default one is often another Ray's here.
            made.add_node(num_cpus=1, dashboard_port=_free_port())
            workers = {
                f"worker-{i + 1}": made.add_node(num_cpus=1, resources={RESOURCE: 1})
                for i in range(p.worker_nodes)
            }
            made.wait_for_nodes(timeout=p.cluster_timeout_s)
        except Exception as error:  # Ray raises plain Exception on a node's start timeout
            with contextlib.suppress(Exception):  # what did start, stopped as well as it goes
                made.shutdown()
            if attempt == 2:
                raise BenchFailed(f"the multi-node cluster did not start: {error}") from error
            log(f"  cluster start failed ({error}); once more")
            continue
        nodes = Nodes(made, workers, time.perf_counter() - started)
        log(f"  cluster up: head + {p.worker_nodes} worker nodes in {nodes.started_s:.1f} s")
        try:
            yield nodes
        finally:
            made.shutdown()
        return


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------- one run, measured


@dataclass
class _Proc:
    kind: str
    cpu_s: float
    ppid: int


class _Sampler(threading.Thread):
    """Polls both simulators' `/stats` and every process under this one (the cluster's
    daemons and workers, the driver; not the simulators) until stopped.

    `/stats` carries a count per prompt: each increase is kept as an event (the poll's
    time, the key, the key's count over both simulators), so a segment's requests can be
    timed once its prompt is known.
    """

    def __init__(self, sims: list[SimulatorProcess], exclude: set[int], started: float) -> None:
        super().__init__(daemon=True)
        self.urls = [sim.root_url + "/stats" for sim in sims]
        self.exclude = exclude
        self.started = started
        self.stop = threading.Event()
        self.samples: list[tuple[float, dict[str, Any]]] = []  # merged scalar stats
        self.events: list[tuple[float, str, int]] = []  # (at, prompt key, count over both)
        self.counts: list[dict[str, int]] = [{} for _ in sims]
        self.procs: dict[int, _Proc] = {}
        self.worker_seen: dict[int, float] = {}  # SegmentWorker pid -> first seen titled so
        self.driver = 0
        self.errors = 0
        self.lock = threading.Lock()  # the run's thread samples the tree too (before, after)

    def now(self) -> float:
        return time.perf_counter() - self.started

    def run(self) -> None:
        next_tree = 0.0
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            while not self.stop.is_set():
                self.poll_stats(client)
                if time.perf_counter() >= next_tree:
                    self.sample_tree()
                    next_tree = time.perf_counter() + TREE_POLL_S
                self.stop.wait(STATS_POLL_S)

    def poll_stats(self, client: httpx.Client) -> None:
        bodies = []
        for url in self.urls:
            try:
                bodies.append(client.get(url).json())
            except (httpx.HTTPError, ValueError):
                self.errors += 1
                return
        at = self.now()  # stamped after the answers: an event is seen no later than this
        for index, body in enumerate(bodies):
            counts = self.counts[index]
            for key, count in body.get("prompts", {}).items():
                if count > counts.get(key, 0):
                    counts[key] = count
                    total = sum(c.get(key, 0) for c in self.counts)
                    self.events.append((at, key, total))
        self.samples.append((at, merge_stats(bodies)))

    def sample_tree(self) -> None:
        with self.lock:
            self._sample_tree()

    def _sample_tree(self) -> None:
        try:
            procs = psutil.Process().children(recursive=True)
        except psutil.Error:
            return
        at = self.now()
        for proc in procs:
            if proc.pid in self.exclude:
                continue
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                known = self.procs.get(proc.pid)
                kind = "driver" if proc.pid == self.driver else _process_kind(proc, known)  # type: ignore[arg-type]
                ppid = known.ppid if known else proc.ppid()
                self.procs[proc.pid] = _Proc(kind, times.user + times.system, ppid)
                if kind == "ray::SegmentWorker" and proc.pid not in self.worker_seen:
                    self.worker_seen[proc.pid] = at


def merge_stats(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """The simulators' counters summed, in the shape `process_runs.sim_window` reads."""
    outcomes: dict[str, int] = {}
    for body in bodies:
        for key, count in body["by_outcome"].items():
            outcomes[key] = outcomes.get(key, 0) + int(count)
    total = {
        key: sum(int(body[key]) for body in bodies)
        for key in ("requests", "in_flight", "queued", "max_in_flight")
    }
    return {**total, "by_outcome": outcomes}


@dataclass
class Run:
    """One `taguru-ray extract` on the cluster, as measured from outside."""

    name: str
    segments: int
    exit_code: int
    wall_s: float
    lines: list[tuple[float, str, str]]  # (at, "out"/"err", text)
    sampler: _Sampler
    baseline: dict[int, _Proc]
    final: list[dict[str, Any]]  # each simulator's last /stats
    clocks: list[float]  # each simulator's clock 0 (its reset), on the run's clock
    removal: dict[str, Any] | None = None
    out: Path = field(default_factory=Path)
    timed_out: bool = False

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU each process spent during the run (last sample less the one before the
        run), summed by process kind."""
        totals: dict[str, float] = {}
        for pid, proc in self.sampler.procs.items():
            before = self.baseline.get(pid)
            spent = proc.cpu_s - (before.cpu_s if before else 0.0)
            totals[proc.kind] = totals.get(proc.kind, 0.0) + max(spent, 0.0)
        return dict(sorted(totals.items()))

    def arrivals(self) -> list[float]:
        """Every request's arrival at either simulator, on the run's clock."""
        return sorted(
            at + clock
            for body, clock in zip(self.final, self.clocks, strict=True)
            for at, _ in body.get("arrivals", [])
        )


def _env() -> dict[str, str]:
    # Nothing of the caller's endpoint or cluster; the endpoints come as flags.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TAGURU_") and k not in ("RAY_ADDRESS",)
    }
    env["TAGURU_EXTRACT_MODEL"] = MODEL
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    return env


def argv(
    p: Params, nodes: Nodes, sims: list[SimulatorProcess], corpus: Path, out: Path
) -> list[str]:
    endpoints = [part for sim in sims for part in ("--endpoint", sim.chat_url)]
    return [
        sys.executable,
        "-m",
        "taguru_ray",
        "extract",
        "--address",
        nodes.address,
        "--context",
        CONTEXT,
        "--out",
        str(out),
        *endpoints,
        "--max-inflight",
        str(p.max_inflight),
        "--segment-window",
        str(p.segment_window),
        "--workers",
        str(p.workers),
        "--worker-resource",
        RESOURCE,
        str(corpus),
    ]


def _read_lines(pipe: Any, tag: str, started: float, into: list[tuple[float, str, str]]) -> None:
    for raw in pipe:
        into.append((time.perf_counter() - started, tag, raw.decode("utf-8", "replace").rstrip()))
    pipe.close()


def _exited(pid: int) -> bool:
    """Whether the child has exited, leaving it unreaped: a zombie's /proc still holds
    its CPU times, so the driver's last sample is exact."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:
        return True


def extract(
    p: Params,
    nodes: Nodes,
    sims: list[SimulatorProcess],
    corpus: Path,
    out: Path,
    name: str,
    segments: int,
    remove: str | None = None,
) -> Run:
    """Run the CLI to its end; with `remove`, take that worker node away once
    `remove_after` of the segments have been asked."""
    started = time.perf_counter()
    clocks = []
    for sim in sims:
        before = time.perf_counter()
        sim.reset()  # the simulator's clock restarts while this call is under way
        clocks.append((before + time.perf_counter()) / 2 - started)
    sampler = _Sampler(sims, {sim.pid for sim in sims}, started)
    sampler.sample_tree()
    baseline = dict(sampler.procs)
    proc = subprocess.Popen(
        argv(p, nodes, sims, corpus, out),
        env=_env(),
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    sampler.driver = proc.pid
    sampler.start()
    lines: list[tuple[float, str, str]] = []
    readers = [
        threading.Thread(target=_read_lines, args=(pipe, tag, started, lines), daemon=True)
        for pipe, tag in ((proc.stdout, "out"), (proc.stderr, "err"))
    ]
    for reader in readers:
        reader.start()
    deadline = started + p.run_timeout_s
    removal = None
    timed_out = False
    try:
        if remove is not None:
            removal = _remove_when_due(p, nodes, sims, remove, proc, started, deadline)
        while not _exited(proc.pid):
            if time.perf_counter() > deadline:
                timed_out = True
                proc.kill()
                break
            time.sleep(0.05)
        sampler.sample_tree()  # the driver, a zombie now: its CPU times are final
    finally:
        exit_code = proc.wait()
        wall = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
        for reader in readers:
            reader.join(timeout=10)
    final = [sim.stats() for sim in sims]
    run = Run(name, segments, exit_code, wall, sorted(lines), sampler, baseline, final, clocks)
    run.removal, run.out, run.timed_out = removal, out, timed_out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{out}.log", "w", encoding="utf-8") as log:
        log.writelines(f"{at:9.3f} {tag} {text}\n" for at, tag, text in run.lines)
    return run


def failure(run: Run, timeout_s: float) -> str | None:
    """Why the run did not complete, or None."""
    if run.timed_out:
        return f"{run.name}: killed after {timeout_s:.0f} s without an end{_tail(run.lines)}"
    if run.exit_code != 0:
        return f"{run.name}: exit {run.exit_code}{_tail(run.lines)}"
    return None


def _remove_when_due(
    p: Params,
    nodes: Nodes,
    sims: list[SimulatorProcess],
    label: str,
    proc: subprocess.Popen[bytes],
    started: float,
    deadline: float,
) -> dict[str, Any]:
    due = max(1, int(p.remove_after * p.segments))
    asked = 0
    while asked < due:
        if proc.poll() is not None:
            raise BenchFailed(f"the run ended after {asked} requests, before the removal at {due}")
        if time.perf_counter() > deadline:
            proc.kill()
            raise BenchFailed(f"the run asked {asked} requests of {due} before the timeout")
        time.sleep(0.1)
        asked = sum(int(sim.stats()["requests"]) for sim in sims)
    at = time.perf_counter() - started
    nodes.cluster.remove_node(nodes.workers.pop(label))
    done = time.perf_counter() - started
    # Every request the removed node sent has arrived by now: what a prompt counts from
    # here on is the segment asked again.
    counts: dict[str, int] = {}
    for sim in sims:
        for key, count in sim.stats()["prompts"].items():
            counts[key] = counts.get(key, 0) + int(count)
    return {
        "node": label,
        "requests_before": asked,
        "at_s": at,
        "remove_call_s": done - at,
        "counts_after": counts,
        "counted_at_s": time.perf_counter() - started,
    }


def _tail(lines: list[tuple[float, str, str]]) -> str:
    errors = [text for _, tag, text in lines if tag == "err"][-8:]
    return ("\n" + "\n".join(errors)) if errors else ""


# --------------------------------------------------------------------- the numbers


def summary(run: Run, p: Params, nodes_by_raylet: dict[int, str]) -> dict[str, Any]:
    """A run's numbers for the JSON."""
    window = sim_window(run.sampler.samples)
    completions = sum(int(body["requests"]) for body in run.final)
    written = sorted(path.name for path in run.out.glob("*.jsonl"))
    said = next((m for _, tag, t in run.lines if tag == "out" and (m := SUMMARY.match(t))), None)
    cpu = run.cpu_by_kind()
    roles = by_role(cpu)
    complete = window is not None and not run.timed_out and run.exit_code == 0
    span = window.last_completion_s - window.first_request_s if complete and window else None
    out: dict[str, Any] = {
        "segments": run.segments,
        "exit_code": run.exit_code,
        "wall_s": run.wall_s,
        "written_files": len(written),
        "summary": {
            "written": int(said.group(1)),
            "unchanged": int(said.group(2)),
            "failed": int(said.group(3)),
            "of": int(said.group(4)),
        }
        if said
        else None,
        "completions": completions,
        "completions_by_endpoint": [int(body["requests"]) for body in run.final],
        "by_outcome": window.by_outcome if window else None,
        "completions_per_s": window.completions_per_s if window else None,
        "segments_per_s": run.segments / span if span else None,
        "steady_completions_per_s": window.steady_completions_per_s if window else None,
        "mean_latency_s": window.mean_latency_s if window else None,
        "max_outstanding": window.max_outstanding if window else None,
        "first_request_s": window.first_request_s if window else None,
        "last_completion_s": window.last_completion_s if window else None,
        "ideal_completions_per_s": p.endpoints * p.slots / (p.latency_ms / 1000.0),
        "cpu_s": sum(cpu.values()),
        "cpu_sampled_s": cpu,
        "cpu_s_by_role": roles,
        "cpu_ms_per_completion_by_role": {
            role: 1000.0 * seconds / completions if completions else None
            for role, seconds in roles.items()
        },
        "placement": placement(run, nodes_by_raylet),
        "stats_poll_errors": run.sampler.errors,
        "stderr_tail": [text for _, tag, text in run.lines if tag == "err"][-10:],
        # What the driver said besides its per-segment lines, timed (the whole of both
        # streams is in <work>/multinode-out/<run>.log).
        "stderr_notes": [
            f"{at:.1f} s: {text}"
            for at, tag, text in run.lines
            if tag == "err" and not ROUTINE.search(text)
        ][:20],
    }
    return out


def placement(run: Run, raylets: dict[int, str]) -> dict[str, list[str]]:
    """The node each actor kind ran on, from its raylet parent (`?` when its raylet
    was gone before the process was first seen)."""
    out: dict[str, set[str]] = {}
    for proc in run.sampler.procs.values():
        if proc.kind.startswith("ray::") and proc.kind != "ray::IDLE":
            out.setdefault(proc.kind, set()).add(raylets.get(proc.ppid, "?"))
    return {kind: sorted(labels) for kind, labels in sorted(out.items())}


def recovery(run: Run, clean: dict[str, Any]) -> dict[str, Any]:
    """What the removal cost: the segments lost with the node's worker, when they were
    asked again, the longest silence at the endpoints, throughput over the whole run."""
    removal = run.removal or {}
    removed_at = float(removal["at_s"])
    died: dict[str, float] = {}
    for at, tag, text in run.lines:
        if tag == "err" and (match := DIED.match(text)):
            died.setdefault(match.group(1), at)
    keys = {source: _prompt_of(run.out, source) for source in died}
    after: dict[str, int] = removal.get("counts_after", {})
    rerun: dict[str, float] = {}
    for at, key, total in run.sampler.events:
        if at > removal["counted_at_s"] and total > after.get(key, 0):
            rerun.setdefault(key, at)
    times = [rerun[key] - removed_at for key in keys.values() if key in rerun]
    unmatched = sorted(source for source, key in keys.items() if key is None)
    arrivals = run.arrivals()
    later = [removed_at, *(at for at in arrivals if at > removed_at)]
    gaps = [b - a for a, b in itertools.pairwise(later)]
    successors = [at - removed_at for at in run.sampler.worker_seen.values() if at > removed_at]
    segments_per_s = run_rate = None
    if arrivals and not run.timed_out and run.exit_code == 0:
        window = sim_window(run.sampler.samples)
        if window:
            run_rate = window.completions_per_s
            segments_per_s = run.segments / (window.last_completion_s - window.first_request_s)
    return {
        "node": removal.get("node"),
        "removed_at_s": removed_at,
        "requests_before_removal": removal.get("requests_before"),
        "remove_call_s": removal.get("remove_call_s"),
        "lost_segments": len(died),
        "loss_detected_after_s": min(died.values()) - removed_at if died else None,
        "lost_asked_again": len(times),
        "lost_done_without_a_new_request": len(died) - len(times) - len(unmatched),
        "lost_prompt_unknown": unmatched[:10],
        "first_lost_asked_again_after_s": min(times) if times else None,
        # The "how long until the lost segments run again": all of them.
        "recovery_s": max(times) if times else None,
        "longest_silence_after_removal_s": max(gaps) if gaps else None,
        "successor_worker_up_after_s": min(successors) if successors else None,
        "completions_asked_twice": sum(int(b["requests"]) for b in run.final) - run.segments,
        "completions_per_s_whole_run": run_rate,
        "segments_per_s_whole_run": segments_per_s,
        "segments_per_s_vs_clean": (
            segments_per_s / clean["segments_per_s"]
            if segments_per_s and clean.get("segments_per_s")
            else None
        ),
        "requests_per_s_timeline": _timeline(arrivals),
        "what": RECOVERY_WHAT,
    }


def _prompt_of(out: Path, source: str) -> str | None:
    """The simulator's key for the segment's first prompt (its attempts log keeps the
    messages sent): every request for the segment's one chunk carries that user turn."""
    path = out / TRACE / attempts_name(source)
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record.get("type") == "attempt" and isinstance(record.get("messages"), list):
                    turn = first_user_turn(record["messages"])
                    return prompt_key(turn) if turn is not None else None
    except (OSError, ValueError):
        return None
    return None


def _timeline(arrivals: list[float]) -> list[int]:
    """Requests arriving in each second of the run (from the driver's start)."""
    if not arrivals:
        return []
    bins = [0] * (int(arrivals[-1]) + 1)
    for at in arrivals:
        bins[max(int(at), 0)] += 1
    return bins


def same_outputs(a: Path, b: Path) -> bool:
    def files(folder: Path) -> dict[str, bytes]:
        return {path.name: path.read_bytes() for path in sorted(folder.glob("*.jsonl"))}

    return files(a) == files(b)


# --------------------------------------------------------------------- the measurement


def measure_multinode(
    p: Params, work: Path, log: Callable[[str], None] = lambda line: print(line, flush=True)
) -> dict[str, Any]:
    """The three runs on one cluster; the dict `make bench` keeps under `multinode`."""
    if p.worker_nodes < 2:
        raise BenchFailed("the multi-node benchmark needs two worker nodes or more")
    started = time.perf_counter()
    small_corpus = work / f"multinode-corpus-{p.small_segments}x{p.segment_bytes}"
    corpus = work / f"multinode-corpus-{p.segments}x{p.segment_bytes}"
    write_corpus(small_corpus, p.small_segments, p.segment_bytes)
    write_corpus(corpus, p.segments, p.segment_bytes)
    sim_args = ("--slots", str(p.slots), "--latency-ms", f"{p.latency_ms:g}")
    with contextlib.ExitStack() as stack:
        sims = [stack.enter_context(SimulatorProcess(*sim_args)) for _ in range(p.endpoints)]
        nodes = stack.enter_context(cluster(p, log))
        raylets = nodes.raylets()
        runs: dict[str, dict[str, Any]] = {}
        outs = {name: work / "multinode-out" / name for name in ("small", "clean", "removed")}
        plan = (
            ("small", small_corpus, p.small_segments, None),
            ("clean", corpus, p.segments, None),
            ("removed", corpus, p.segments, f"worker-{p.worker_nodes}"),
        )
        for name, folder, count, remove in plan:
            set_aside(work, outs[name])  # an earlier bench's, kept in --work-dir
            run = extract(p, nodes, sims, folder, outs[name], name, count, remove)
            why = failure(run, p.run_timeout_s)
            if why is not None and remove is None:
                raise BenchFailed(why)
            runs[name] = summary(run, p, raylets)
            if remove is not None:
                # A run that never ends once a node is gone is this measurement's finding,
                # not the benchmark's failure: the other numbers still stand.
                runs[name]["completed"] = why is None
                runs[name]["failure"] = why
                runs[name]["removal"] = recovery(run, runs["clean"])
                runs[name]["outputs_identical_to_clean"] = why is None and same_outputs(
                    outs["clean"], outs["removed"]
                )
            log(f"  multinode {name}: {_said(runs[name])}")
        cluster_start_s = nodes.started_s
    small, clean, removed = runs["small"], runs["clean"], runs["removed"]
    return {
        "parameters": asdict(p),
        "cluster": {
            "head": {"num_cpus": 1},
            "worker_nodes": p.worker_nodes,
            "worker_node_resources": {"CPU": 1, RESOURCE: 1},
            "start_s": cluster_start_s,
            "removal": "Cluster.remove_node (allow_graceful: every process of the node "
            "signalled, then killed)",
        },
        "clean": clean,
        "removed": removed,
        "small": small,
        "cpu_ms_per_completion": marginal_by_role(
            small["cpu_sampled_s"],
            small["completions"],
            clean["cpu_sampled_s"],
            clean["completions"],
        ),
        "recovery_s": removed["removal"]["recovery_s"],
        "removed_vs_clean": removed["removal"]["segments_per_s_vs_clean"],
        "elapsed_s": time.perf_counter() - started,
    }


def measure_for_bench(main_segments: int, work: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """`make bench`'s step: the preset matching its corpus; a failure (the cluster
    would not start, a run without nodes removed failed) is recorded, not raised, so
    the rest of the bench's JSON is still written."""
    p = params_for(main_segments)
    try:
        return measure_multinode(p, work, log)
    except BenchFailed as failed:
        log(f"  multinode: {failed}")
        return {"parameters": asdict(p), "failed": str(failed)}


def _said(run: dict[str, Any]) -> str:
    rate = run.get("segments_per_s")
    text = f"{rate:.1f} segments/s" if rate else "no rate"
    text += f", {run['completions']} completions"
    removal = run.get("removal")
    if run.get("failure"):
        text += f"; NOT COMPLETED: {run['failure'].splitlines()[0]}"
    if removal:
        rec = removal["recovery_s"]
        text += f"; {removal['lost_segments']} segments lost, all asked again after "
        text += f"{rec:.1f} s" if rec is not None else "n/a"
        whole = removal["segments_per_s_whole_run"]
        text += f", whole run {whole:.1f} segments/s" if whole else ""
    return text


# --------------------------------------------------------------------- the command


def parse_args(argv: list[str] | None) -> tuple[Params, argparse.Namespace]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--quick", action="store_true", help="300 segments")
    chosen.add_argument("--smoke", action="store_true", help="the smallest configuration")
    parser.add_argument("--segments", type=int)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work-dir", type=Path, help="keep corpora and outputs here")
    parser.add_argument("--name", help="the JSON's name prefix (default: multinode[-preset])")
    args = parser.parse_args(argv)
    args.preset = "smoke" if args.smoke else "quick" if args.quick else "full"
    params = preset(args.preset)
    if args.segments is not None:
        params = replace(params, segments=args.segments)
    return params, args


def main(argv: list[str] | None = None) -> int:
    params, args = parse_args(argv)
    name = args.name or ("multinode" if args.preset == "full" else f"multinode-{args.preset}")
    from benchmarks.process_runs import machine

    with work_dir(args.work_dir, "taguru-ray-multinode-") as work:
        try:
            result = {"name": name, "machine": machine(), **measure_multinode(params, work)}
        except BenchFailed as failure:
            print(f"multinode: {failure}", file=sys.stderr)
            return 1
    write_result(args.results_dir, name, result)
    clean, removal = result["clean"], result["removed"]["removal"]
    print(
        json.dumps(
            {
                "clean_segments_per_s": clean["segments_per_s"],
                "removed_segments_per_s_whole_run": removal["segments_per_s_whole_run"],
                "removed_vs_clean": result["removed_vs_clean"],
                "lost_segments": removal["lost_segments"],
                "recovery_s": result["recovery_s"],
                "results": str(args.results_dir / f"{name}-latest.json"),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
