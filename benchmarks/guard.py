"""The working tree against the last recorded commit, alternated (`make bench-guard`).

`results/history.jsonl` (`history.py`) holds a line per bench: the commit, the
steady CPU per completion of each process kind and the saturation ratios. This
checks out the newest commit recorded there (measured on a clean tree), and
runs the saturation step's three runs — the bare client, taguru-ray with
default flags, taguru-ray opened up — on it and on the working tree
alternately (base-head, then head-base: drift cancels in the medians, ADR
0045), and prints each figure's median for both builds, their ranges and the
change. It asserts nothing: a rise beyond the ranges is the finding, and
`make test` never times anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import history
from benchmarks.ab import BUILDS, checkout, order, spread
from benchmarks.run import (
    PRESETS,
    PROJECT_ROOT,
    RESULTS_DIR,
    Bench,
    BenchFailed,
    Params,
    SimulatorProcess,
    _become_subreaper,
    machine,
    measure_extract,
    measure_loadgen,
    throughput_flags,
    work_dir,
)

# The figures compared, in the order printed: (name, where in a run's figures).
ROLES = ("total", "segment_workers", "driver", "gateway", "ledger", "ray")


def run_figures(
    defaults: Mapping[str, Any], tuned: Mapping[str, Any], loadgen: Mapping[str, Any]
) -> dict[str, float | None]:
    """One build's figures in one round, flat: CPU ms a completion by role for each run,
    and each run's rate over the round's bare client."""
    out: dict[str, float | None] = {}
    for name, run in (("defaults", defaults), ("tuned", tuned)):
        cpu = history.cpu_by_role(run)
        for role in ROLES:
            out[f"cpu_ms/{name}/{role}"] = cpu.get(role)
    rate = loadgen.get("completions_per_s")
    for name, run in (("defaults", defaults), ("tuned", tuned)):
        mine = run.get("completions_per_s")
        out[f"{name}_vs_loadgen"] = mine / rate if mine is not None and rate else None
    return out


def compare(rounds: Mapping[str, Sequence[Mapping[str, float | None]]]) -> dict[str, Any]:
    """Per figure: each build's spread and head/base − 1 of the medians."""
    names = list(dict.fromkeys(name for build in BUILDS for run in rounds[build] for name in run))
    table: dict[str, Any] = {}
    for name in names:
        base = spread([run.get(name) for run in rounds["base"]])
        head = spread([run.get(name) for run in rounds["head"]])
        change = (
            head["median"] / base["median"] - 1.0
            if head["median"] is not None and base["median"]
            else None
        )
        table[name] = {"base": base, "head": head, "change": change}
    return table


def run_guard(params: Params, base: str, rounds: int, results_dir: Path, work: Path) -> Path:
    _become_subreaper()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    head_sha, dirty = history.commit(PROJECT_ROOT)
    load = history.load_1min()
    figures: dict[str, list[dict[str, float | None]]] = {build: [] for build in BUILDS}
    failures: list[dict[str, Any]] = []
    sim_args = ("--slots", str(params.slots), "--latency-ms", f"{params.latency_ms:g}")
    with checkout(base, work) as (base_tree, base_sha), SimulatorProcess(*sim_args) as sim:
        benches = {
            "base": Bench(params, work, sim, tree=base_tree),
            "head": Bench(params, work, sim),
        }
        corpus = benches["head"].corpus(params.segments)
        loadgen: dict[str, Any] = {}
        for turn, build in enumerate(order(rounds)):
            bench = benches[build]
            if turn % 2 == 0:  # the yardstick once a round, shared by its two builds
                loadgen = measure_loadgen(bench, corpus)
            flags = throughput_flags(bench, str(params.slots))
            try:
                tuned = measure_extract(bench, corpus, f"guard-{build}-{turn}-tuned", *flags)
                defaults = measure_extract(bench, corpus, f"guard-{build}-{turn}-defaults")
            except BenchFailed as failure:  # one lost run leaves the rounds standing
                failures.append({"turn": turn, "build": build, "failed": str(failure)})
                bench.log(f"  {build} (round {turn // 2 + 1}): failed — {failure}")
                continue
            for run in (tuned, defaults):
                if "skipped" in run:
                    raise BenchFailed(f"the {build} build refused the flags: {run['skipped']}")
            figures[build].append(run_figures(defaults, tuned, loadgen))
            bench.log(f"  {build} (round {turn // 2 + 1}) done")
    results = {
        "name": "guard",
        "timestamp": stamp,
        "machine": machine(),
        "load_1min_at_start": load,
        "parameters": {**asdict(params), "rounds": rounds, "order": order(rounds)},
        "base": {"revision": base, "commit": base_sha},
        "head": {"commit": head_sha, "uncommitted_changes": dirty},
        "figures": figures,
        "failed_runs": failures,
        "comparison": compare(figures),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / f"guard-{stamp}.json"
    body = json.dumps(results, indent=2, sort_keys=True) + "\n"
    target.write_text(body, encoding="utf-8")
    (results_dir / "guard-latest.json").write_text(body, encoding="utf-8")
    return target


def report(path: Path) -> list[str]:
    """A line per figure: base and head medians with their ranges, and the change."""
    results = json.loads(path.read_text(encoding="utf-8"))
    out = [
        f"bench-guard: base {results['base']['commit'][:12]} (the last recorded commit) "
        f"against the working tree ({(results['head']['commit'] or '?')[:12]}"
        f"{' + changes' if results['head']['uncommitted_changes'] else ''}), "
        f"{results['parameters']['rounds']} round(s) alternated; load average at the start "
        f"{_num(results['load_1min_at_start'], 1)}",
        f"{'figure':32s} {'base median (range)':>26s} {'head median (range)':>26s} {'change':>8s}",
    ]
    for name, row in results["comparison"].items():
        change = row["change"]
        out.append(
            f"{name:32s} {_cell(row['base']):>26s} {_cell(row['head']):>26s} "
            f"{(f'{100 * change:+.1f} %') if change is not None else 'n/a':>8s}"
        )
    out.append(f"results: {path}")
    return out


def _cell(values: Mapping[str, float | None]) -> str:
    return f"{_num(values['median'], 3)} ({_num(values['min'], 2)}–{_num(values['max'], 2)})"


def _num(value: float | None, digits: int) -> str:
    return f"{value:.{digits}f}" if value is not None else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="the working tree against the last recorded commit (make bench-guard)"
    )
    parser.add_argument("--base", help="compare with this revision instead of the history's")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each build (default 2)")
    parser.add_argument("--smoke", action="store_true", help="the smallest configuration")
    parser.add_argument("--history-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work-dir", type=Path, help="keep corpora and outputs here")
    parser.add_argument("--segments", type=int)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    base = args.base or history.last_recorded_commit(args.history_dir)
    if base is None:
        print(
            f"bench-guard: {args.history_dir / history.HISTORY} records no commit measured on a "
            "clean tree — run `make bench` (or `make bench-saturation`) on a commit first, or "
            "give --base REV",
            file=sys.stderr,
        )
        return 1
    params = replace(Params(), **PRESETS["smoke" if args.smoke else "full"])
    if args.segments is not None:
        params = replace(params, segments=args.segments)
    with work_dir(args.work_dir, prefix="taguru-ray-guard-") as work:
        try:
            path = run_guard(params, base, args.rounds, args.results_dir, work)
        except BenchFailed as failure:
            print(f"bench-guard: {failure}", file=sys.stderr)
            return 1
    print("\n".join(report(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
