"""Two builds on this machine, their saturation runs interleaved (`make bench-ab`).

One `make bench` is one sample of a shared VM: its throughput and CPU per
completion swing by a fifth or more with what else the host runs, and a
bench of record from another day may have run on a faster host. Whether a
change made the engine slower is a question for two builds measured in the
same minutes: this checks `--base` (any git revision) out into a worktree and
runs the saturation run of `make bench` (the same corpus, simulator and
flags) alternately on it and on this tree, base-head then head-base (drift
cancels in the medians), `--rounds` times each.

The JSON (`benchmarks/results/ab-<stamp>.json`, and `ab-latest.json`) has
each run's completions/s, its fraction of C/L and its steady CPU by process
role; per build the lowest, median and highest of each; and head/base
ratios of the medians. No target: the spread of the runs says how far a
ratio is from noise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.roles import steady_by_role
from benchmarks.run import (
    PRESETS,
    PROJECT_ROOT,
    RESULTS_DIR,
    Bench,
    BenchFailed,
    Params,
    SimulatorProcess,
    machine,
    measure_extract,
    throughput_flags,
    work_dir,
)

BUILDS = ("base", "head")


def order(rounds: int) -> list[str]:
    """Which build runs when: base, head, then head, base, and so on — a build's runs sit
    as often early as late in each pair, so drift over the session cancels."""
    turns: list[str] = []
    for round_ in range(rounds):
        turns.extend(BUILDS if round_ % 2 == 0 else reversed(BUILDS))
    return turns


def run_figures(summary: Mapping[str, Any], ideal: float) -> dict[str, Any]:
    """One run's numbers: completions/s, its fraction of C/L, steady CPU ms by role and
    the kernel's part of it."""
    rate = summary.get("completions_per_s")
    steady = summary.get("cpu_steady")
    table = steady_by_role(steady) if steady else {}
    return {
        "completions_per_s": rate,
        "throughput_vs_ideal": rate / ideal if rate and ideal else None,
        "cpu_ms_per_completion_steady": {
            role: entry["cpu_ms_per_completion"] for role, entry in table.items()
        },
        "system_ms_per_completion_steady": {
            role: entry["system_ms_per_completion"]
            for role, entry in table.items()
            if "system_ms_per_completion" in entry
        },
    }


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """The lowest, median and highest of the values measured (None: none was)."""
    known = [v for v in values if v is not None]
    if not known:
        return {"min": None, "median": None, "max": None}
    return {"min": min(known), "median": statistics.median(known), "max": max(known)}


def summarize(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Per build the spread of every figure; head/base ratios of the medians."""
    out: dict[str, Any] = {}
    for build in BUILDS:
        figures = [run["figures"] for run in runs.get(build, []) if "figures" in run]
        roles = sorted({role for f in figures for role in f["cpu_ms_per_completion_steady"]})
        out[build] = {
            "completions_per_s": spread([f["completions_per_s"] for f in figures]),
            "throughput_vs_ideal": spread([f["throughput_vs_ideal"] for f in figures]),
            "cpu_ms_per_completion_steady": {
                role: spread([f["cpu_ms_per_completion_steady"].get(role) for f in figures])
                for role in roles
            },
            "system_ms_per_completion_steady": {
                role: spread(
                    [f.get("system_ms_per_completion_steady", {}).get(role) for f in figures]
                )
                for role in roles
            },
        }

    def ratio(head: float | None, base: float | None) -> float | None:
        return head / base if head is not None and base else None

    base, head = out["base"], out["head"]
    out["head_vs_base"] = {
        "completions_per_s": ratio(
            head["completions_per_s"]["median"], base["completions_per_s"]["median"]
        ),
        "cpu_ms_per_completion_steady": {
            role: ratio(spread_["median"], base["cpu_ms_per_completion_steady"][role]["median"])
            for role, spread_ in head["cpu_ms_per_completion_steady"].items()
            if role in base["cpu_ms_per_completion_steady"]
        },
    }
    return out


@contextlib.contextmanager
def checkout(revision: str, into: Path) -> Iterator[tuple[Path, str]]:
    """`revision` of this repository as a worktree under `into`, with its full hash;
    removed afterwards."""
    try:
        sha = _git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except BenchFailed:
        raise BenchFailed(
            f"--base {revision}: not a commit of this repository — give a revision "
            "`git log` shows (a hash, a tag, HEAD~3)"
        ) from None
    tree = into / f"base-{sha[:12]}"
    if tree.exists():  # left by a killed A/B in a kept --work-dir
        with contextlib.suppress(BenchFailed):
            _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(tree, ignore_errors=True)  # ours by its name, registered or not
        _git("worktree", "prune")
    _git("worktree", "add", "--detach", "--force", str(tree), sha)
    try:
        yield tree, sha
    finally:
        try:
            _git("worktree", "remove", "--force", str(tree))
        except BenchFailed as failure:  # never in place of what ended the A/B
            print(f"bench-ab: {failure} — `git worktree prune` drops it", file=sys.stderr)


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise BenchFailed("git: not found — the A/B checks the base out with git") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        first = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0])
        raise BenchFailed(f"git {' '.join(args[:2])}: {first}")
    return done.stdout.strip()


def run_ab(params: Params, revision: str, rounds: int, results_dir: Path, work: Path) -> Path:
    """Every round, both builds; returns the JSON written."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    head_sha = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    runs: dict[str, list[dict[str, Any]]] = {build: [] for build in BUILDS}
    sim_args = ("--slots", str(params.slots), "--latency-ms", f"{params.latency_ms:g}")
    with checkout(revision, work) as (base_tree, base_sha), SimulatorProcess(*sim_args) as sim:
        benches = {
            "base": Bench(params, work, sim, tree=base_tree),
            "head": Bench(params, work, sim),
        }
        corpus = benches["head"].corpus(params.segments)
        flags = throughput_flags(benches["head"], str(params.slots))
        for turn, build in enumerate(order(rounds)):
            bench = benches[build]
            try:
                summary = measure_extract(bench, corpus, f"ab-{build}-{turn}", *flags)
            except BenchFailed as failure:
                # One run lost (its Ray never came up on a host under load) leaves the
                # others standing: the run is kept as failed, out of the medians.
                failed = str(failure).splitlines()[0]
                runs[build].append({"turn": turn, "failed": failed})
                bench.log(f"  {build} (run {turn + 1}): failed — {failed}")
                continue
            if "skipped" in summary:
                raise BenchFailed(f"the {build} build refused the flags: {summary['skipped']}")
            figures = run_figures(summary, bench.ideal)
            runs[build].append({"turn": turn, "figures": figures, "run": summary})
            bench.log(_line(build, turn, figures))
    results = {
        "name": "ab",
        "timestamp": stamp,
        "machine": machine(),
        "parameters": {**asdict(params), "rounds": rounds, "order": order(rounds)},
        "base": {"revision": revision, "commit": base_sha},
        "head": {"commit": head_sha, "uncommitted_changes": dirty},
        "summary": summarize(runs),
        "runs": runs,
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / f"ab-{stamp}.json"
    body = json.dumps(results, indent=2, sort_keys=True) + "\n"
    target.write_text(body, encoding="utf-8")
    (results_dir / "ab-latest.json").write_text(body, encoding="utf-8")
    return target


def _line(build: str, turn: int, figures: Mapping[str, Any]) -> str:
    rate = figures["completions_per_s"]
    roles = figures["cpu_ms_per_completion_steady"]
    shown = ", ".join(f"{role} {ms:.2f}" for role, ms in roles.items() if ms is not None)
    return f"  {build} (run {turn + 1}): {rate or 0:.1f} completions/s; ms a completion: {shown}"


def print_summary(path: Path) -> None:
    results = json.loads(path.read_text(encoding="utf-8"))
    summary = results["summary"]
    for build in BUILDS:
        rate = summary[build]["completions_per_s"]
        print(
            f"{build:5s} completions/s median {_num(rate['median'])} "
            f"(runs {_num(rate['min'])}–{_num(rate['max'])})"
        )
    ratios = summary["head_vs_base"]
    print(f"head/base completions/s {_num(ratios['completions_per_s'], 3)}")
    for role, value in ratios["cpu_ms_per_completion_steady"].items():
        print(f"head/base cpu per completion, {role:16s} {_num(value, 3)}")
    print(f"results: {path}")


def _num(value: float | None, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if value is not None else "n/a"


def parse_args(argv: list[str] | None) -> tuple[Params, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        description="two builds' saturation runs interleaved on this machine (make bench-ab)"
    )
    parser.add_argument("--base", required=True, help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each build (default 3)")
    parser.add_argument("--smoke", action="store_true", help="the smallest configuration")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work-dir", type=Path, help="keep corpora and outputs here")
    for key in ("segments", "slots", "segment_window", "workers"):
        parser.add_argument("--" + key.replace("_", "-"), type=int, dest=key)
    parser.add_argument("--latency-ms", type=float, dest="latency_ms")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    params = replace(Params(), **PRESETS["smoke" if args.smoke else "full"])
    for key in ("segments", "slots", "segment_window", "workers", "latency_ms"):
        if getattr(args, key) is not None:
            params = replace(params, **{key: getattr(args, key)})
    return params, args


def main(argv: list[str] | None = None) -> int:
    params, args = parse_args(argv)
    with work_dir(args.work_dir, prefix="taguru-ray-ab-") as work:
        try:
            path = run_ab(params, args.base, args.rounds, args.results_dir, work)
        except BenchFailed as failure:
            print(f"bench-ab: {failure}", file=sys.stderr)
            return 1
    print_summary(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
