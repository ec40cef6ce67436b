"""What every bench script shares, below them all: the constants and sizes (`Params`,
`PRESETS`), one `taguru-ray extract` (or any) subprocess measured from outside
(`run_process`: CPU of its whole process tree, by kind, over its steady window; the
simulator's view of its throughput), the work folder and the machine's description.

`run.py` (`make bench`) and `multinode.py` both build on it; neither imports the other's
module scope (issue 51: the import circle between them).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

import taguru_ray
from benchmarks.corpus import write_corpus
from taguru_ray.simulate.harness import SimulatorProcess

try:
    import psutil
except ImportError:
    importlib.import_module("ray")  # Ray vendors psutil and puts it on sys.path
    psutil = importlib.import_module("psutil")

PROJECT_ROOT = Path(taguru_ray.__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
MODEL = "taguru-sim"
SKIP_MARKER = b": unchanged, skipped"  # the driver's report line for a manifest skip
STATS_POLL_S = 0.05  # the timing resolution of every throughput number
TREE_POLL_S = 0.2  # psutil walks /proc: cheap, but not free on 2 cores
REAP_GRACE_S = 20.0  # Ray's processes outliving their driver get this long to exit
PR_SET_CHILD_SUBREAPER = 36
STARTUP_TRIES = 3
RAY_DID_NOT_START = "a local Ray: Ray did not start"  # the driver's StartupError line


# --------------------------------------------------------------------- parameters


@dataclass
class Params:
    """Every size the benchmark takes; the defaults are the issue's values."""

    segments: int = 2000  # the saturation corpus
    segment_bytes: int = 1024  # one chunk each: far below the 24 576-byte chunk cap
    slots: int = 64  # C
    latency_ms: float = 200.0  # L
    segment_window: int = 256  # W for every throughput run: wide enough for any sweep level
    workers: int = 2
    window1_segments: int = 100  # --segment-window 1 runs at 1/L; 2000 would take 400 s
    overhead_segments: int = 200  # the small run CPU per completion is compared with
    sweep_levels: tuple[int, ...] = (8, 16, 32, 64, 128)
    # Issue 36: `benchmark extract` with default flags, two cells at once against servers
    # of these slots (latency L each): each cell measured against its own C/L.
    cell_slots: tuple[int, ...] = (4, 12)
    cell_segments: int = 400
    # Issue 23: a million unchanged segments, the corpus written once and kept
    # (benchmarks/prepared.py); memory at each tenfold step up to it.
    skip_segments: int = 1_000_000
    memory_segments: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    # Issue 49: `sessions import --mask` of a session whose one line is this many MiB;
    # memory per input byte between the smallest and the largest.
    import_line_mib: tuple[float, ...] = (2.0, 16.0)
    # Issue 47: a million-row Parquet dataset's skip-only rerun (benchmarks/datasets.py).
    dataset_rows: int = 1_000_000
    run_timeout_s: float = 1800.0
    # Issue 47: text-layer PDFs converted, pages per second per core (benchmarks/documents.py).
    pdf_documents: int = 20
    pdf_pages: int = 25


PRESETS: dict[str, dict[str, Any]] = {
    "full": {},
    "quick": {
        "segments": 600,
        "window1_segments": 40,
        "overhead_segments": 100,
        "sweep_levels": (16, 64, 128),
        "skip_segments": 20_000,
        "memory_segments": (2_000, 20_000),
        "dataset_rows": 20_000,
        "cell_segments": 200,
        "import_line_mib": (1.0, 8.0),
        "pdf_documents": 10,
        "pdf_pages": 20,
    },
    "smoke": {
        "segments": 20,
        "slots": 4,
        "latency_ms": 100.0,
        "segment_window": 16,
        "window1_segments": 6,
        "overhead_segments": 8,
        "sweep_levels": (2, 4),
        "skip_segments": 200,
        "memory_segments": (20, 50, 200),
        "dataset_rows": 200,
        "run_timeout_s": 300.0,
        "cell_slots": (2, 4),
        "cell_segments": 12,
        "import_line_mib": (0.25, 1.0),
        "pdf_documents": 2,
        "pdf_pages": 3,
    },
}


# --------------------------------------------------------------------- process runs


@dataclass
class SimWindow:
    """Throughput as the simulator saw it: first request in to last answer out.

    Times are midpoints between the two `/stats` polls that bracket each event,
    so the error is at most half a poll interval at either end.
    """

    completions: int
    first_request_s: float  # after the process started
    last_completion_s: float
    completions_per_s: float
    steady_completions_per_s: float | None  # between 10 % and 90 % of completions
    max_outstanding: int  # in service + queued at the simulator, peak seen
    mean_latency_s: float | None  # Little's law: mean outstanding / throughput
    max_in_flight: int  # the simulator's own gauge (capped by its slots)
    by_outcome: dict[str, int]


@dataclass
class SteadyCpu:
    """CPU by process kind over a run's steady state (10 % to 90 % of its completions):
    read between the two walks of the process tree that bracket it, with the window's
    completions scaled to that span at the window's own rate. Start-up, the first
    requests' ramp and the run's tail are all outside it."""

    from_s: float
    to_s: float
    completions: float
    cpu_start_s: dict[str, float]
    cpu_end_s: dict[str, float]
    # The kernel's part of the same (system time), by kind: what file operations,
    # sockets and thread hand-offs cost, apart from the interpreter's own work.
    system_start_s: dict[str, float] = field(default_factory=dict)
    system_end_s: dict[str, float] = field(default_factory=dict)


@dataclass
class ProcessRun:
    """What one subprocess cost, measured from outside it."""

    argv: list[str]
    exit_code: int
    wall_s: float
    cpu_s: float  # user + system of the process and every descendant: the two below
    cpu_reaped_s: float  # exact: RUSAGE_CHILDREN over everything reaped with accounting
    cpu_sampled_only_s: float  # last /proc sample of processes reaped without it
    cpu_sampled_s: dict[str, float]  # by process kind, last sample: where the CPU went
    driver_peak_rss_mb: float | None
    stdout_lines: int
    marked_lines: int  # lines holding the run's marker (a skip line)
    first_marked_s: float | None  # when the first and last of them arrived
    last_marked_s: float | None
    stdout_tail: list[str]
    stderr_tail: list[str]
    sim: SimWindow | None = None
    cpu_steady: SteadyCpu | None = None  # CPU by kind over the steady window


class _Sampler(threading.Thread):
    """Polls the simulator's counters and the process tree until stopped."""

    def __init__(self, pid: int, started: float, stats_url: str | None) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.started = started
        self.stats_url = stats_url
        self.stop = threading.Event()
        self.stats: list[tuple[float, dict[str, Any]]] = []
        self.cpu: dict[int, _Sample] = {}
        # CPU seconds by process kind after each walk of the tree (every pid's last
        # sample, exited ones included): the steady window's two ends are read here.
        self.series: list[tuple[float, dict[str, float]]] = []
        self.system_series: list[dict[str, float]] = []  # of each walk: the system part
        self.peak_rss_kb: int | None = None

    def run(self) -> None:
        client = httpx.Client(trust_env=False, timeout=5.0) if self.stats_url else None
        next_tree = 0.0
        try:
            while not self.stop.is_set():
                now = time.perf_counter()
                if client is not None and self.stats_url is not None:
                    with contextlib.suppress(httpx.HTTPError, ValueError):
                        body = client.get(self.stats_url).json()
                        # Stamped after the answer: an event is seen no later than this.
                        self.stats.append((time.perf_counter() - self.started, body))
                if now >= next_tree:
                    self._sample_tree()
                    next_tree = now + TREE_POLL_S
                self.stop.wait(STATS_POLL_S)
        finally:
            if client is not None:
                client.close()

    def _sample_tree(self) -> None:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        ignores: dict[int, bool] = {}
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                parent = proc.ppid()
                if parent not in ignores:
                    ignores[parent] = _ignores_sigchld(parent)
                known = self.cpu.get(proc.pid)
                kind = "driver" if proc.pid == self.pid else _process_kind(proc, known)
                self.cpu[proc.pid] = _Sample(
                    kind, times.user + times.system, ignores[parent], times.system
                )
        totals: dict[str, float] = {}
        system: dict[str, float] = {}
        for sample in self.cpu.values():
            totals[sample.kind] = totals.get(sample.kind, 0.0) + sample.cpu_s
            system[sample.kind] = system.get(sample.kind, 0.0) + sample.system_s
        self.series.append((time.perf_counter() - self.started, totals))
        self.system_series.append(system)
        hwm = _vm_hwm_kb(self.pid)
        if hwm is not None:
            self.peak_rss_kb = max(self.peak_rss_kb or 0, hwm)


@dataclass(frozen=True)
class _Sample:
    kind: str
    cpu_s: float
    # Reaped by a parent that ignores SIGCHLD (the raylet does): the kernel then
    # drops the child's CPU instead of adding it to the parent's children
    # times, so RUSAGE_CHILDREN never sees it and this sample is all there is.
    unaccounted: bool
    system_s: float = 0.0  # the kernel's part of cpu_s


def _ignores_sigchld(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)
    except (OSError, ValueError):
        return False
    return False


def _process_kind(proc: psutil.Process, known: _Sample | None) -> str:
    """`ray::SegmentWorker`, `raylet`, `gcs_server`, ...: a name to group CPU by.

    Ray retitles a worker (`ray::SegmentWorker`) after it starts; the kernel's
    short name is cut at 15 characters, so a title that cannot be read (the
    process is exiting) keeps the one seen before.
    """
    with contextlib.suppress(psutil.Error, IndexError):
        title = proc.cmdline()[0]
        # While it runs a call Ray titles it `ray::SegmentWorker.submit`: the role
        # is the actor's.
        return title.split()[0].split(".", 1)[0] if title.startswith("ray::") else proc.name()
    if known is not None:
        return known.kind
    try:
        return proc.name()
    except psutil.Error:
        return "?"


def _vm_hwm_kb(pid: int) -> int | None:
    """The process's peak RSS so far (Linux's VmHWM): no peak between polls is missed."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _become_subreaper() -> bool:
    """Adopt orphaned descendants so their CPU reaches RUSAGE_CHILDREN.

    Ray's worker processes are children of the raylet; when the raylet is
    stopped they would be re-parented to init and their CPU lost to this
    process's accounting. As a subreaper it is re-parented here instead, and
    reaping it adds its CPU to ours. Linux only; elsewhere CPU is a lower bound.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _reap_strays(keep: set[int]) -> None:
    """Wait for (then kill) adopted descendants of a finished run, by pid. The resource
    tracker a prepared corpus's process pool started is this process's own, not the
    run's: it lives as long as this process, and waiting for it cost each later run
    REAP_GRACE_S."""
    deadline = time.monotonic() + REAP_GRACE_S
    while True:
        strays = [c for c in psutil.Process().children() if c.pid not in keep and not _tracker(c)]
        if not strays:
            return
        for child in strays:
            with contextlib.suppress(ChildProcessError):
                pid, _ = os.waitpid(child.pid, os.WNOHANG)
                if pid == 0 and time.monotonic() > deadline:
                    os.kill(child.pid, signal.SIGKILL)
                    os.waitpid(child.pid, 0)
        time.sleep(0.05)


def _tracker(process: psutil.Process) -> bool:
    """Whether `process` is multiprocessing's resource tracker."""
    with contextlib.suppress(psutil.Error):
        return any("multiprocessing.resource_tracker" in part for part in process.cmdline())
    return False


def _cpu_children_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(
    argv: list[str],
    env: dict[str, str],
    *,
    keep: set[int],
    stats_url: str | None = None,
    marker: bytes | None = None,
    timeout: float = 1800.0,
    cwd: Path = PROJECT_ROOT,
) -> ProcessRun:
    """Run `argv` to its end, measuring it from outside.

    `keep` are children of this process that are not part of the run (the
    simulator): they are never reaped here, so their CPU stays out of `cpu_s`.
    `cwd` is the tree whose `taguru_ray` runs: `-m` and Ray's workers import from it.
    """
    cpu_before = _cpu_children_s()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = _Sampler(proc.pid, started, stats_url)
    sampler.start()
    lines = _LineReader(proc.stdout, started, marker)
    errors = _LineReader(proc.stderr, started, None)
    try:
        exit_code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        exit_code = proc.wait()
    wall = time.perf_counter() - started
    sampler.stop.set()
    sampler.join()
    lines.join()
    errors.join()
    _reap_strays(keep | {proc.pid})
    reaped = _cpu_children_s() - cpu_before
    dropped = sum(sample.cpu_s for sample in sampler.cpu.values() if sample.unaccounted)
    by_kind: dict[str, float] = {}
    for sample in sampler.cpu.values():
        by_kind[sample.kind] = by_kind.get(sample.kind, 0.0) + sample.cpu_s
    return ProcessRun(
        argv=argv,
        exit_code=exit_code,
        wall_s=wall,
        cpu_s=reaped + dropped,
        cpu_reaped_s=reaped,
        cpu_sampled_only_s=dropped,
        cpu_sampled_s=dict(sorted(by_kind.items())),
        driver_peak_rss_mb=sampler.peak_rss_kb / 1024 if sampler.peak_rss_kb else None,
        stdout_lines=lines.count,
        marked_lines=lines.marked,
        first_marked_s=lines.first,
        last_marked_s=lines.last,
        stdout_tail=list(lines.tail)[-3:],
        stderr_tail=list(errors.tail),
        sim=sim_window(sampler.stats) if stats_url else None,
        cpu_steady=(
            steady_cpu(sampler.series, sampler.stats, sampler.system_series) if stats_url else None
        ),
    )


class _LineReader(threading.Thread):
    """Drains a pipe (so the child never blocks on it), keeping counts and a tail.

    Lines holding `marker` are also timed on arrival: the first and last skip
    line bracket the driver's skip loop without its interpreter and Ray start.
    """

    def __init__(self, pipe: Any, started: float, marker: bytes | None) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.started = started
        self.marker = marker
        self.count = 0
        self.marked = 0
        self.first: float | None = None
        self.last: float | None = None
        self.tail: deque[str] = deque(maxlen=10)
        self.start()

    def run(self) -> None:
        for raw in self.pipe:
            self.count += 1
            if self.marker is not None and self.marker in raw:
                now = time.perf_counter() - self.started
                self.first = now if self.first is None else self.first
                self.last = now
                self.marked += 1
            self.tail.append(raw.decode("utf-8", errors="replace").rstrip("\n"))
        self.pipe.close()


def _answered(stats: dict[str, Any]) -> int:
    """Requests answered: counted on arrival, answered once it holds no slot and waits
    for none."""
    return int(stats["requests"]) - int(stats["in_flight"]) - int(stats["queued"])


def steady_cpu(
    series: list[tuple[float, dict[str, float]]],
    samples: list[tuple[float, dict[str, Any]]],
    system: list[dict[str, float]] | None = None,
) -> SteadyCpu | None:
    """CPU by process kind from 10 % to 90 % of the run's completions (`SteadyCpu`);
    None when the run was too short for a tree walk on either side of that window."""
    if not samples:
        return None
    total = int(samples[-1][1]["requests"])
    low = next(((at, _answered(s)) for at, s in samples if _answered(s) >= 0.1 * total), None)
    high = next(((at, _answered(s)) for at, s in samples if _answered(s) >= 0.9 * total), None)
    if total == 0 or low is None or high is None or high[0] <= low[0] or high[1] <= low[1]:
        return None
    start = next((i for i in reversed(range(len(series))) if series[i][0] <= low[0]), None)
    end = next((i for i, entry in enumerate(series) if entry[0] >= high[0]), None)
    if start is None or end is None:
        return None
    (begun, cpu_start), (ended, cpu_end) = series[start], series[end]
    rate = (high[1] - low[1]) / (high[0] - low[0])
    return SteadyCpu(
        begun,
        ended,
        rate * (ended - begun),
        cpu_start,
        cpu_end,
        system[start] if system else {},
        system[end] if system else {},
    )


def sim_window(samples: list[tuple[float, dict[str, Any]]]) -> SimWindow | None:
    """Throughput from the simulator's counters, polled every STATS_POLL_S."""
    if not samples:
        return None
    final = samples[-1][1]
    total = int(final["requests"])

    def crossing(test: Callable[[dict[str, Any]], bool]) -> float | None:
        previous = 0.0
        for at, stats in samples:
            if test(stats):
                return (previous + at) / 2
            previous = at
        return None

    first = crossing(lambda s: int(s["requests"]) > 0)
    last = crossing(lambda s: _answered(s) >= total)
    if total == 0 or first is None or last is None or last <= first:
        return None
    steady = None
    low, high = (
        crossing(lambda s: _answered(s) >= 0.1 * total),
        crossing(lambda s: _answered(s) >= 0.9 * total),
    )
    if low is not None and high is not None and high > low:
        steady = (0.9 - 0.1) * total / (high - low)
    active = [s for at, s in samples if first <= at <= last]
    outstanding = [int(s["in_flight"]) + int(s["queued"]) for s in active]
    rate = total / (last - first)
    mean_outstanding = sum(outstanding) / len(outstanding) if outstanding else 0.0
    return SimWindow(
        completions=total,
        first_request_s=first,
        last_completion_s=last,
        completions_per_s=rate,
        steady_completions_per_s=steady,
        max_outstanding=max(outstanding, default=0),
        mean_latency_s=mean_outstanding / rate if outstanding else None,
        max_in_flight=int(final["max_in_flight"]),
        by_outcome=dict(final["by_outcome"]),
    )


# --------------------------------------------------------------------- the bench


@dataclass
class Bench:
    """The shared pieces every measurement uses: sizes, folders, the simulator."""

    params: Params
    work: Path
    sim: SimulatorProcess
    address: str | None = None  # join this Ray instead of starting one per run
    log: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    tree: Path = PROJECT_ROOT  # the checkout whose build runs (benchmarks/ab.py: another)
    keep: frozenset[int] = frozenset()  # more children no run may reap (a Ray this process runs)

    @property
    def ideal(self) -> float:
        return self.params.slots / (self.params.latency_ms / 1000.0)

    def corpus(self, segments: int) -> Path:
        """The first `segments` segments in a folder of their own (prefixes are equal)."""
        folder = self.work / f"corpus-{segments}x{self.params.segment_bytes}"
        write_corpus(folder, segments, self.params.segment_bytes)
        return folder

    def env(self) -> dict[str, str]:
        # Nothing of the caller's endpoint or cluster: each run starts its own Ray.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TAGURU_") and k not in ("RAY_ADDRESS",)
        }
        env.update(
            TAGURU_EXTRACT_URL=self.sim.chat_url,
            TAGURU_EXTRACT_MODEL=MODEL,
            PYTHONPATH=os.pathsep.join(
                p for p in (str(self.tree), os.environ.get("PYTHONPATH", "")) if p
            ),
        )
        return env

    def extract_args(self, corpus: Path, out: Path, *flags: str) -> list[str]:
        """The extract arguments after the verb; the manifest builder parses the same."""
        joined = ["--address", self.address] if self.address else []
        return ["--context", CONTEXT, "--out", str(out), *joined, *flags, str(corpus)]

    def extract(
        self,
        corpus: Path,
        out: Path,
        *flags: str,
        timed: bool = True,
        env: dict[str, str] | None = None,
    ) -> ProcessRun:
        """One `taguru-ray extract` run; `timed` polls the simulator for its window."""
        argv = [sys.executable, "-m", "taguru_ray", "extract"]
        argv += self.extract_args(corpus, out, *flags)
        self.sim.reset()
        return run_process(
            argv,
            {**self.env(), **(env or {})},
            keep={self.sim.pid, *self.keep},
            stats_url=self.sim.root_url + "/stats" if timed else None,
            marker=SKIP_MARKER,
            timeout=self.params.run_timeout_s,
            cwd=self.tree,
        )

    def fresh_out(self, name: str) -> Path:
        out = self.work / "out" / name
        set_aside(self.work, out)
        return out


def _run_summary(run: ProcessRun, completions: int | None = None) -> dict[str, Any]:
    """A run's numbers for the JSON: everything measured, plus CPU per completion."""
    summary = asdict(run)
    summary["argv"] = run.argv[2:]  # drop the interpreter path: machine-specific noise
    done = completions if completions is not None else (run.sim.completions if run.sim else 0)
    summary["cpu_ms_per_completion"] = 1000.0 * run.cpu_s / done if done else None
    return summary


def _skipped_if_refused(run: ProcessRun) -> str | None:
    """A flag this build does not have yet is exit 2 with a usage line: skip, not fail."""
    if run.exit_code != 2:
        return None
    why = next((line for line in reversed(run.stderr_tail) if line.strip()), "exit 2")
    return f"refused by this build (exit 2): {why}"


def _check(run: ProcessRun, what: str) -> None:
    if run.exit_code != 0:
        tail = "\n".join(run.stderr_tail[-8:])
        raise BenchFailed(f"{what}: exit {run.exit_code}\n{tail}")


def prepare_extracted(bench: Bench, segments: int) -> tuple[Path, Path, int]:
    """A corpus whose every segment is already extracted, without calling a model.

    The manifest entries are built with taguru-ray's own functions from the
    very flags the timed run passes, so `Manifest.unchanged` holds for every
    segment; each output file is a valid source file (header and passage). A
    big corpus is written once and kept for later runs (`benchmarks/prepared.py`).
    Returns (corpus, out, bytes of the corpus).
    """
    from benchmarks.prepared import prepare
    from taguru_ray.cli.extract import parse_flags
    from taguru_ray.settings import resolve_settings
    from taguru_ray.store.config_file import read_config_file

    def settings_for(corpus: Path, out: Path) -> Any:
        args = bench.extract_args(corpus, out)
        return resolve_settings(parse_flags(args), bench.env(), read_config_file)

    return prepare(segments, bench.params.segment_bytes, bench.work, settings_for, bench.log)


def _skip_run(bench: Bench, corpus: Path, out: Path, size: int) -> ProcessRun:
    """One real run over an already-extracted corpus, checked to have skipped it all."""
    from benchmarks.prepared import forget

    run = bench.extract(corpus, out, timed=False)
    if bench.sim.stats()["requests"] or run.exit_code != 0:
        forget(out)  # a corpus the run changed is written again next time, never reused
    _check(run, f"skip of {size}")
    if bench.sim.stats()["requests"]:
        raise BenchFailed(f"the skip run of {size} segments called the model")
    if run.marked_lines != size:
        forget(out)
        raise BenchFailed(f"the skip run of {size} skipped {run.marked_lines} segments")
    return run


class BenchFailed(RuntimeError):
    """A run the measurement depends on failed; its stderr tail says why."""


def machine() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    def pkg(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "ray": pkg("ray"),
        "httpx": pkg("httpx"),
        "aiohttp": pkg("aiohttp"),
        "taguru_ray": taguru_ray.__version__,
        "load_average_at_start": list(os.getloadavg()),
    }


TRASH = "set-aside"


def set_aside(work: Path, folder: Path) -> None:
    """Move an earlier run's `folder` out of the way; deleted when the bench ends.

    Deleting it here would charge the next run: on ext4 without a journal (this
    VM's disk), each file created in the 30 s after a deletion scans the inodes
    deleted since (the kernel's `recently_deleted`), and after the 12 000 files
    of a saturation run's --out a create cost 0.3-0.85 ms of kernel CPU instead
    of 0.02-0.04 ms — a millisecond and more per completion on the workers.
    """
    if not folder.exists():
        return
    try:
        trash = work / TRASH
        trash.mkdir(exist_ok=True)
        folder.rename(trash / f"{folder.name}-{time.time_ns()}")
    except OSError as error:
        raise BenchFailed(
            f"could not set {folder} aside ({error.strerror}) — remove it, or give "
            "another --work-dir"
        ) from None


@contextlib.contextmanager
def work_dir(keep: Path | None, prefix: str = "taguru-ray-bench-") -> Iterator[Path]:
    """`keep` (made if missing, left behind but for what runs set aside), or a
    temporary folder removed at the end."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        try:
            yield keep
        finally:
            shutil.rmtree(keep / TRASH, ignore_errors=True)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)
