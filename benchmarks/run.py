"""`make bench`: measure taguru-ray against the simulator and write the results.

Every measurement is one function below; each runs `taguru-ray extract` as a
subprocess with its own local Ray (the way a user runs it) against one
simulator subprocess with C slots and latency L, and reads the numbers from
outside: completions and their timing from the simulator's `/stats`
counters, CPU from the kernel's accounting of the extract process tree,
memory from the driver's peak RSS. The JSON under `benchmarks/results/`
holds every number, the machine, the parameters and the ratios the targets
are stated in; `latest.png` plots throughput against the ideal and the
in-flight sweep.

    python -m benchmarks.run            # the issue's sizes (about 5 minutes here)
    python -m benchmarks.run --quick    # smaller sizes, same measurements
    python -m benchmarks.run --smoke    # the smallest configuration (the test's)

Targets are reported, never asserted: a 2-core machine shared with other
work is noisy, so the JSON is evidence for a reader, not a gate.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import history, sessions_memory
from benchmarks.documents import DOCLING_PAGES_PER_CORE, measure_documents
from benchmarks.multinode import measure_for_bench
from benchmarks.process_runs import (
    CONTEXT,
    MODEL,
    PRESETS,
    PROJECT_ROOT,
    RAY_DID_NOT_START,
    RESULTS_DIR,
    STARTUP_TRIES,
    Bench,
    BenchFailed,
    Params,
    _become_subreaper,
    _check,
    _run_summary,
    _skip_run,
    _skipped_if_refused,
    machine,
    prepare_extracted,
    run_process,
    work_dir,
)
from benchmarks.roles import marginal_by_role, steady_by_role
from taguru_ray.simulate.harness import SimulatorProcess

try:
    import psutil
except ImportError:
    importlib.import_module("ray")  # Ray vendors psutil and puts it on sys.path
    psutil = importlib.import_module("psutil")

# --------------------------------------------------------------------- measurements


def measure_loadgen(bench: Bench, corpus: Path) -> dict[str, Any]:
    """The bare asyncio+aiohttp generator at C in flight on the same corpus and simulator."""
    argv = [
        sys.executable,
        "-m",
        "benchmarks.loadgen",
        "--url",
        bench.sim.chat_url,
        "--model",
        MODEL,
        "--concurrency",
        str(bench.params.slots),
        str(corpus),
    ]
    bench.sim.reset()
    run = run_process(
        argv,
        bench.env(),
        keep={bench.sim.pid},
        stats_url=bench.sim.root_url + "/stats",
        timeout=bench.params.run_timeout_s,
    )
    _check(run, "loadgen")
    summary = _run_summary(run)
    own = json.loads(run.stdout_tail[-1])
    summary["own_clock"] = own
    # The simulator's window when the run outlasts a few polls; a tiny run is timed
    # by the generator's own clock instead.
    summary["completions_per_s"] = (
        run.sim.completions_per_s if run.sim else own["completions_per_s"]
    )
    return summary


def measure_extract(
    bench: Bench, corpus: Path, name: str, *flags: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """One extract run on `corpus`; completions/s from the simulator's window. A run whose
    local Ray did not come up is tried again (STARTUP_TRIES in all): Ray gives its raylet a
    fixed 30 s to register, which a 2-core host shared with other work can miss."""
    for _ in range(STARTUP_TRIES):
        run = bench.extract(corpus, bench.fresh_out(name), *flags, env=env)
        if run.exit_code != 1 or not any(RAY_DID_NOT_START in line for line in run.stderr_tail):
            break
        bench.log(f"  {name}: Ray did not start in time; trying again")
    skipped = _skipped_if_refused(run)
    if skipped:
        return {"skipped": skipped, "flags": list(flags)}
    _check(run, name)
    summary = _run_summary(run)
    summary["flags"] = list(flags)
    summary["completions_per_s"] = run.sim.completions_per_s if run.sim else None
    return summary


def throughput_flags(bench: Bench, inflight: str, window: int | None = None) -> list[str]:
    p = bench.params
    return [
        "--max-inflight",
        inflight,
        "--segment-window",
        str(window if window is not None else p.segment_window),
        "--workers",
        str(p.workers),
    ]


def measure_saturation(bench: Bench) -> dict[str, Any]:
    """C in flight on the main corpus, against C/L and the bare generator (run on both sides),
    then the same corpus with default flags (issue 36): no window, no in-flight flag."""
    p = bench.params
    corpus = bench.corpus(p.segments)
    before = measure_loadgen(bench, corpus)
    extract = measure_extract(bench, corpus, "saturation", *throughput_flags(bench, str(p.slots)))
    defaults = measure_extract(bench, corpus, "defaults")
    after = measure_loadgen(bench, corpus)
    # The generator's capability is its better run: the stricter yardstick.
    best = max(before["completions_per_s"] or 0.0, after["completions_per_s"] or 0.0)
    return {
        "segments": p.segments,
        "ideal_completions_per_s": bench.ideal,
        "taguru_ray": extract,
        "defaults": defaults,
        "loadgen_before": before,
        "loadgen_after": after,
        "loadgen_best_completions_per_s": best,
        "loadgen_cpu_ms_per_completion": _loadgen_cpu_ms(before, after),
        "defaults_cpu_ms_per_completion_steady": _steady_total_ms(defaults),
    }


def _loadgen_cpu_ms(*runs: dict[str, Any]) -> float | None:
    """The bare client's CPU per request over its sending (its own clock), the lower of its
    runs: the stricter yardstick, as its rate is."""
    found = [
        1000.0 * run["own_clock"]["cpu_s"] / run["own_clock"]["completions"]
        for run in runs
        if run.get("own_clock", {}).get("cpu_s") is not None and run["own_clock"]["completions"]
    ]
    return min(found) if found else None


def _steady_total_ms(run: dict[str, Any]) -> float | None:
    """CPU per completion of the whole process tree over a run's steady state."""
    steady = run.get("cpu_steady")
    if not steady or not steady.get("completions"):
        return None
    spent = sum(steady["cpu_end_s"].values()) - sum(steady["cpu_start_s"].values())
    return 1000.0 * spent / steady["completions"]


def measure_benchmark_cells(bench: Bench) -> dict[str, Any]:
    """`benchmark extract` with default flags, one cell per server of `cell_slots` slots at L,
    all at once (issue 36): each cell's completions/s against its own C/L, and its bound."""
    p = bench.params
    corpus = bench.corpus(p.cell_segments)
    results = bench.fresh_out("benchmark-cells")
    latency = f"{p.latency_ms:g}"
    with contextlib.ExitStack() as stack:
        sims = [
            stack.enter_context(SimulatorProcess("--slots", str(c), "--latency-ms", latency))
            for c in p.cell_slots
        ]
        models = {
            "taguru_benchmark_models": 1,
            "models": [
                {"id": f"sim-{c}-slots", "model": MODEL, "url": sim.chat_url, "gpu": f"{c}-slots"}
                for c, sim in zip(p.cell_slots, sims, strict=True)
            ],
        }
        models_file = bench.work / "benchmark-cells-models.json"
        models_file.write_text(json.dumps(models), encoding="utf-8")
        argv = [sys.executable, "-m", "taguru_ray", "benchmark", "extract", "--models"]
        argv += [str(models_file), "--context", CONTEXT, "--out", str(results)]
        argv += ["--address", bench.address] if bench.address else []
        run = run_process(
            [*argv, str(corpus)],
            bench.env(),
            keep={bench.sim.pid, *(sim.pid for sim in sims)},
            timeout=p.run_timeout_s,
            cwd=bench.tree,
        )
    _check(run, "benchmark extract")
    manifest = json.loads((results / "manifest.json").read_text(encoding="utf-8"))
    cells = []
    by_model = {cell["model_id"]: cell for cell in manifest["cells"]}  # cells sort by id
    for slots in p.cell_slots:
        cell = by_model[f"sim-{slots}-slots"]
        block = cell.get("saturation") or {}
        ideal = slots / (p.latency_ms / 1000.0)
        rate = block.get("completions_per_second")
        cells.append(
            {
                "cell_id": cell["cell_id"],
                "slots": slots,
                "ideal_completions_per_s": ideal,
                "completions_per_s": rate,
                "vs_capacity": _ratio(rate, ideal),
                **{key: block.get(key) for key in CELL_KEYS},
            }
        )
    return {"segments": p.cell_segments, "cells": cells, "run": _run_summary(run, 0)}


CELL_KEYS = (
    "inflight_settled",
    "inflight_observed_mean",
    "inflight_observed_peak",
    "bound",
    "bound_why",
    "client_cpu_share",
    "host_cpu_busy",
    "steady_seconds",
)


COMMIT_ORDER = ("name", "arrival", "arrival", "name")


def measure_commit_order(bench: Bench) -> dict[str, Any]:
    """What committing in name order costs at C in flight (ADR 0019).

    The same corpus and flags as the saturation run, alternated name, arrival,
    arrival, name (drift on a shared machine cancels in the means): `name` is
    every real run; `arrival` (TAGURU_RAY_COMMIT_ORDER, the baseline only) judges
    a segment as its answers land, as the engine did before segments committed
    in order.
    """
    p = bench.params
    corpus = bench.corpus(p.segments)
    runs: dict[str, list[dict[str, Any]]] = {"name": [], "arrival": []}
    for turn, order in enumerate(COMMIT_ORDER):
        result = measure_extract(
            bench,
            corpus,
            f"commit-{order}-{turn}",
            *throughput_flags(bench, str(p.slots)),
            env={"TAGURU_RAY_COMMIT_ORDER": order},
        )
        runs[order].append(result)
        bench.log(f"  commit order {order} (run {turn + 1}): {_rate(result)}")
    rates = {
        order: [r["completions_per_s"] for r in found if r.get("completions_per_s")]
        for order, found in runs.items()
    }
    means = {order: statistics.mean(v) if v else None for order, v in rates.items()}
    return {
        "segments": p.segments,
        "order": list(COMMIT_ORDER),
        "name_completions_per_s": rates["name"],
        "arrival_completions_per_s": rates["arrival"],
        "name_mean_completions_per_s": means["name"],
        "arrival_mean_completions_per_s": means["arrival"],
        "runs": runs["name"] + runs["arrival"],
    }


def measure_window1(bench: Bench) -> dict[str, Any]:
    """--segment-window 1 (the reference's sequential hand-off) on a smaller corpus."""
    p = bench.params
    corpus = bench.corpus(p.window1_segments)
    result = measure_extract(bench, corpus, "window-1", *throughput_flags(bench, str(p.slots), 1))
    result["segments"] = p.window1_segments
    result["ideal_completions_per_s"] = 1000.0 / p.latency_ms
    return result


def measure_overhead(bench: Bench, saturation: dict[str, Any]) -> dict[str, Any]:
    """CPU per completion on a small run vs the saturation run, same flags: it should fall."""
    p = bench.params
    corpus = bench.corpus(p.overhead_segments)
    small = measure_extract(bench, corpus, "overhead", *throughput_flags(bench, str(p.slots)))
    large = saturation["taguru_ray"]
    points = [
        {"segments": p.overhead_segments, "cpu_s": small.get("cpu_s"), "completions": _done(small)},
        {"segments": p.segments, "cpu_s": large.get("cpu_s"), "completions": _done(large)},
    ]
    for point in points:
        point["cpu_ms_per_completion"] = (
            1000.0 * point["cpu_s"] / point["completions"] if point["completions"] else None
        )
    marginal = None
    if points[0]["cpu_s"] is not None and points[1]["cpu_s"] is not None:
        extra = points[1]["completions"] - points[0]["completions"]
        if extra > 0:
            # The slope: what one more completion costs once startup is paid.
            marginal = 1000.0 * (points[1]["cpu_s"] - points[0]["cpu_s"]) / extra
    roles = marginal_by_role(
        small.get("cpu_sampled_s") or {},
        points[0]["completions"],
        large.get("cpu_sampled_s") or {},
        points[1]["completions"],
    )
    steady = large.get("cpu_steady")
    return {
        "points": points,
        "marginal_cpu_ms_per_completion": marginal,
        "by_role": roles,
        # The same budget read inside the saturation run alone (`SteadyCpu`): no second
        # run's start-up to subtract, so none of its noise.
        "steady_by_role": steady_by_role(steady) if steady else None,
        "small_run": small,
    }


def _done(result: dict[str, Any]) -> int:
    sim = result.get("sim")
    return int(sim["completions"]) if sim else 0


def measure_inflight_sweep(bench: Bench, saturation: dict[str, Any]) -> dict[str, Any]:
    """Fixed --max-inflight levels past the simulator's C slots, then `auto`.

    Beyond C in flight the simulator queues, so latency climbs while
    throughput flattens: the knee an adaptive controller has to find.

    `auto` is then compared with the best fixed level in runs alternated
    auto, best, best, auto. On a shared machine the rate drifts by tens of
    percent over minutes, and the sweep's best level is the best of several
    noisy runs: a ratio of the alternated runs' means cancels the drift and
    the pick of the luckiest run alike.
    """
    p = bench.params
    corpus = bench.corpus(p.segments)
    levels: list[dict[str, Any]] = []
    for level in p.sweep_levels:
        if level == p.slots:
            result = dict(saturation["taguru_ray"], reused="saturation")
        else:
            result = measure_extract(
                bench, corpus, f"inflight-{level}", *throughput_flags(bench, str(level))
            )
        levels.append({"max_inflight": level, **result})
        bench.log(f"  in-flight {level}: {_rate(result)}")
    measured = [entry for entry in levels if entry.get("completions_per_s")]
    best = max(measured, key=lambda e: e["completions_per_s"], default=None)
    runs: dict[str, list[dict[str, Any]]] = {"auto": [], "best": []}
    for turn, kind in enumerate(PAIRED_ORDER):
        level = "auto" if kind == "auto" or best is None else str(best["max_inflight"])
        if kind == "best" and (best is None or runs["auto"][0].get("skipped")):
            continue
        result = measure_extract(
            bench, corpus, f"inflight-{kind}-{turn}", *throughput_flags(bench, level)
        )
        runs[kind].append(result)
        bench.log(f"  in-flight {level} (paired run {turn + 1}): {_rate(result)}")
        if result.get("skipped"):
            break
    return {
        "segments": p.segments,
        "levels": levels,
        "best_fixed_max_inflight": best["max_inflight"] if best else None,
        "best_fixed_completions_per_s": best["completions_per_s"] if best else None,
        "auto": runs["auto"][0],
        "paired": _paired(runs, PAIRED_ORDER),
    }


PAIRED_ORDER = ("auto", "best", "best", "auto")


def _paired(runs: dict[str, list[dict[str, Any]]], order: tuple[str, ...]) -> dict[str, Any]:
    rates = {
        kind: [r["completions_per_s"] for r in found if r.get("completions_per_s")]
        for kind, found in runs.items()
    }
    means = {kind: statistics.mean(values) if values else None for kind, values in rates.items()}
    return {
        "order": list(order),
        "auto_completions_per_s": rates["auto"],
        "best_fixed_completions_per_s": rates["best"],
        "auto_mean_completions_per_s": means["auto"],
        "best_fixed_mean_completions_per_s": means["best"],
        "runs": [*runs["auto"][1:], *runs["best"]],
    }


def _rate(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return result["skipped"]
    rate = result.get("completions_per_s")
    return f"{rate:.1f} completions/s" if rate else "no completions measured"


# --------------------------------------------------------------------- skip and memory


def hash_seconds(corpus: Path) -> float:
    """The floor a skip is compared with: read and sha256 every segment's bytes."""
    started = time.perf_counter()
    for path in sorted(corpus.iterdir()):
        hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def measure_skip_and_memory(bench: Bench) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest skip of already-extracted corpora, and the driver's peak memory.

    Each size is a real run (no --dry-run) that skips every segment. Its net
    cost is its wall time less that of a 1-segment run of the same kind,
    which pays the same interpreter, Ray start and stop; the floor is hashing
    the same files, once before the runs and once after, the quicker counting (a
    page cache that dropped part of a million files between them slows one pass,
    as it slows the first skip run). Each size runs twice and the quicker counts,
    the first reported as cold.
    Driver memory is the same runs' driver peak RSS. A corpus the run changed
    (it called the model) is written again next time, never reused.
    """

    p = bench.params
    sizes = sorted({1, *p.memory_segments, p.skip_segments})
    runs: dict[int, dict[str, Any]] = {}
    for size in sizes:
        corpus, out, nbytes = prepare_extracted(bench, size)
        before = hash_seconds(corpus)  # the page cache holds the corpus for the run
        # Twice, the quicker kept (the second, as a rule): the first run reads what the
        # floor does not — the --out listing and the manifest index, 200 MB at a million —
        # from disk as far as the cache lacks them, so the kept run and the floor both find
        # their bytes cached; the first is reported as `cold_wall_s`. The 1-segment
        # baseline is the quicker of two as well, which takes out one slow Ray start.
        first = _skip_run(bench, corpus, out, size)
        again = _skip_run(bench, corpus, out, size)
        run = again if again.wall_s < first.wall_s else first
        summary = _run_summary(run, completions=0)
        after = hash_seconds(corpus)
        summary.update(segments=size, corpus_bytes=nbytes, hash_s=min(before, after))
        summary["hash_passes_s"] = [before, after]
        summary["cold_wall_s"] = first.wall_s
        peaks = [r.driver_peak_rss_mb for r in (first, again) if r.driver_peak_rss_mb]
        summary["driver_peak_rss_mb"] = max(peaks) if peaks else None
        # Skip lines are printed in segment order as the driver decides them.
        if run.first_marked_s is not None and run.last_marked_s is not None:
            summary["skip_lines_s"] = run.last_marked_s - run.first_marked_s
        runs[size] = summary
        bench.log(
            f"  {size} unchanged segments: {run.wall_s:.1f} s, the first run {first.wall_s:.1f} s "
            f"(hashing {summary['hash_s']:.1f} s), driver peak "
            f"{summary['driver_peak_rss_mb'] or 0:.0f} MB"
        )
    base = runs[1]["wall_s"]
    by_size = []
    for size in sizes[1:]:
        run = runs[size]
        # Below Ray's start-up jitter a tiny corpus can come out negative: no number then.
        net = run["wall_s"] - base if run["wall_s"] > base else None
        run["net_skip_s"] = net
        cold = run["cold_wall_s"] - base if run["cold_wall_s"] > base else None
        by_size.append(
            {
                "segments": size,
                "net_skip_s": net,
                "skip_lines_s": run.get("skip_lines_s"),
                "hash_s": run["hash_s"],
                "hash_passes_s": run["hash_passes_s"],
                "skip_vs_hash": _ratio(net, run["hash_s"]),
                "cold_net_skip_s": cold,
                "cold_skip_vs_hash": _ratio(cold, run["hash_s"]),
                "driver_peak_rss_mb": run["driver_peak_rss_mb"],
            }
        )
    big = runs[p.skip_segments]
    net = big.get("net_skip_s")
    skip = {
        "segments": p.skip_segments,
        "wall_s": big["wall_s"],
        "cold_wall_s": big["cold_wall_s"],
        "baseline_1_segment_wall_s": base,
        "net_skip_s": net,
        "skip_lines_s": big.get("skip_lines_s"),
        "hash_s": big["hash_s"],
        "hash_passes_s": big["hash_passes_s"],
        "corpus_bytes": big["corpus_bytes"],
        "per_segment_us": 1e6 * net / p.skip_segments if net is not None else None,
        "by_size": by_size,
        "runs": [runs[size] for size in sizes],
    }
    peaks = [runs[size]["driver_peak_rss_mb"] for size in p.memory_segments]
    memory = {
        "segments": list(p.memory_segments),
        "driver_peak_rss_mb": peaks,
        # Each size's peak over the one before it (10x the segments in the full run).
        "growth": [_ratio(peaks[at + 1], peaks[at]) for at in range(len(peaks) - 1)],
        "baseline_1_segment_driver_peak_rss_mb": runs[1]["driver_peak_rss_mb"],
        "what": "driver peak RSS (VmHWM) of real runs that skip every segment",
    }
    return skip, memory


# --------------------------------------------------------------------- ratios and output


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    """The numbers the targets are stated in, each with its target and whether it held."""
    sat = results["saturation"]
    rate = sat["taguru_ray"].get("completions_per_s")
    sweep = results["inflight_sweep"]
    paired = sweep.get("paired", {})
    auto_rate = paired.get("auto_mean_completions_per_s") or sweep["auto"].get("completions_per_s")
    best_rate = (
        paired.get("best_fixed_mean_completions_per_s") or sweep["best_fixed_completions_per_s"]
    )
    skip, memory = results["manifest_skip"], results["driver_memory"]
    peaks = memory["driver_peak_rss_mb"]
    at_100k = next((row for row in skip.get("by_size", []) if row["segments"] == 100_000), {})
    table = {
        "throughput_vs_ideal": (_ratio(rate, sat["ideal_completions_per_s"]), 0.9, ">="),
        # Issue 51: opened up (--max-inflight C --segment-window 256), within 5 %.
        "throughput_vs_loadgen": (_ratio(rate, sat["loadgen_best_completions_per_s"]), 0.95, ">="),
        # Issue 36: what a user's first run gives, no window or in-flight flag.
        "defaults_vs_loadgen": (
            _ratio(sat["defaults"].get("completions_per_s"), sat["loadgen_best_completions_per_s"]),
            0.9,
            ">=",
        ),
        "defaults_vs_ideal": (
            _ratio(sat["defaults"].get("completions_per_s"), sat["ideal_completions_per_s"]),
            None,
            None,
        ),
        # CPU per completion of everything the default run starts, steady, against the bare
        # client's per request (SPEC 7: the goal is 1.5).
        "cpu_per_completion_vs_loadgen": (
            _ratio(
                sat.get("defaults_cpu_ms_per_completion_steady"),
                sat.get("loadgen_cpu_ms_per_completion"),
            ),
            1.5,
            "<=",
        ),
        "loadgen_vs_ideal": (
            _ratio(sat["loadgen_best_completions_per_s"], sat["ideal_completions_per_s"]),
            None,
            None,
        ),
        "throughput_vs_window_1": (
            _ratio(rate, results["window_1"].get("completions_per_s")),
            None,
            None,
        ),
        "auto_vs_best_fixed": (
            _ratio(auto_rate, best_rate),
            0.9,
            ">=",
        ),
        # No target: `auto`, what a user points at an endpoint of unknown capacity,
        # measured against the same yardsticks as C in flight.
        "auto_throughput_vs_ideal": (_ratio(auto_rate, sat["ideal_completions_per_s"]), None, None),
        "auto_throughput_vs_loadgen": (
            _ratio(auto_rate, sat["loadgen_best_completions_per_s"]),
            None,
            None,
        ),
        # No target of its own: the SPEC's saturation target above is what must hold with
        # the ordered commit; this says what the order costs against judging on arrival.
        "commit_in_name_order_vs_arrival": (
            _ratio(
                results["commit_order"]["name_mean_completions_per_s"],
                results["commit_order"]["arrival_mean_completions_per_s"],
            ),
            None,
            None,
        ),
        "commit_in_name_order_vs_ideal": (
            _ratio(
                results["commit_order"]["name_mean_completions_per_s"],
                sat["ideal_completions_per_s"],
            ),
            None,
            None,
        ),
        # At the biggest size (a million segments in the full run: issue 23).
        "skip_vs_hash": (_ratio(skip["net_skip_s"], skip["hash_s"]), 2.0, "<="),
        # SPEC 7's own size, when the run measured it.
        "skip_vs_hash_100k": (at_100k.get("skip_vs_hash"), 2.0, "<="),
        # No target: the skip's own span, first skip line to last. Most of it runs
        # while Ray starts, which the net cost above does not count twice.
        "skip_lines_vs_hash": (_ratio(skip.get("skip_lines_s"), skip["hash_s"]), None, None),
        # "Flat": 10x the segments (10 000 to 100 000 in the full run) may cost at most a
        # fifth more driver memory.
        "driver_memory_large_vs_small": (_ratio(peaks[1], peaks[0]), 1.2, "<="),
        # Issue 23: a million segments at most half again 100 000's (the third size).
        "driver_memory_1m_vs_100k": (
            _ratio(peaks[2], peaks[1]) if len(peaks) > 2 else None,
            1.5,
            "<=",
        ),
        "cpu_ms_per_completion_large_vs_small": (
            _ratio(
                results["overhead"]["points"][1]["cpu_ms_per_completion"],
                results["overhead"]["points"][0]["cpu_ms_per_completion"],
            ),
            1.0,
            "<=",
        ),
        # Issue 49: memory of `sessions import` per byte of one long session line (the
        # secret scan kept about 120 before).
        "sessions_import_bytes_per_input_byte": (
            results.get("sessions_import_memory", {}).get("bytes_per_input_byte"),
            sessions_memory.TARGET_BYTES_PER_BYTE,
            "<=",
        ),
        # No target: segments/s over the whole multi-node run with a worker node removed
        # mid-run, against the same run with every node up (benchmarks/multinode.py).
        "multinode_removed_vs_clean": (
            results.get("multinode", {}).get("removed_vs_clean"),
            None,
            None,
        ),
    }
    # Issue 47: text-layer PDFs at or above docling's published pages/s per core (its
    # upper figure; `documents.leaves_out` says what the comparison leaves out).
    converted = results.get("documents", {}).get("generated", {})
    table["pdf_pages_per_core_vs_docling"] = (
        _ratio(converted.get("pages_per_cpu_s"), DOCLING_PAGES_PER_CORE[1]),
        1.0,
        ">=",
    )
    # Issue 36: each default-flag benchmark cell within 10 % of its server's capacity.
    for cell in results.get("benchmark_cells", {}).get("cells", []):
        table[f"cell_{cell['slots']}_slots_vs_capacity"] = (cell["vs_capacity"], 0.9, ">=")
    out: dict[str, Any] = {}
    for key, (value, target, sense) in table.items():
        met = None
        if value is not None and target is not None:
            met = value >= target if sense == ">=" else value <= target
        out[key] = {
            "value": value,
            "target": f"{sense} {target}" if target is not None else None,
            "met": met,
        }
    if sweep["auto"].get("skipped"):
        out["auto_vs_best_fixed"]["skipped"] = sweep["auto"]["skipped"]
    return out


def plot(results: dict[str, Any], path: Path) -> str | None:
    """latest.png: throughput against the ideal, and the in-flight sweep. None if drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display here, and none wanted
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]')"
    sat, sweep = results["saturation"], results["inflight_sweep"]
    ideal = sat["ideal_completions_per_s"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    bars = {
        "ideal C/L": ideal,
        "bare loadgen": sat["loadgen_best_completions_per_s"],
        "taguru-ray": sat["taguru_ray"].get("completions_per_s") or 0.0,
        "taguru-ray W=1": results["window_1"].get("completions_per_s") or 0.0,
    }
    left.bar(list(bars), list(bars.values()), color=["#999", "#4a7", "#37c", "#c73"])
    for x, value in enumerate(bars.values()):
        left.annotate(f"{value:.0f}", (x, value), ha="center", va="bottom")
    params = results["parameters"]
    left.set_title(
        f"{params['segments']} segments, C={params['slots']}, L={params['latency_ms']:g} ms"
    )
    left.set_ylabel("completions / s")
    points = [
        (e["max_inflight"], e["completions_per_s"])
        for e in sweep["levels"]
        if e.get("completions_per_s")
    ]
    if points:
        right.plot(*zip(*points, strict=True), marker="o", label="fixed --max-inflight")
    latency = [
        (e["max_inflight"], 1000.0 * e["sim"]["mean_latency_s"])
        for e in sweep["levels"]
        if e.get("sim") and e["sim"].get("mean_latency_s")
    ]
    if latency:
        # Past the knee the simulator queues: latency is what rises there, not throughput.
        twin = right.twinx()
        twin.plot(*zip(*latency, strict=True), color="#c73", linestyle="--", marker=".")
        twin.set_ylabel("mean latency, ms (Little's law)", color="#c73")
        twin.set_ylim(bottom=0)
    right.axhline(ideal, color="#999", linestyle="--", label="ideal C/L")
    right.axvline(params["slots"], color="#ccc", linestyle=":", label="C (the knee)")
    auto = sweep["auto"].get("completions_per_s")
    if auto:
        right.axhline(auto, color="#c37", label="--max-inflight auto")
    right.set_xscale("log", base=2)
    right.minorticks_off()
    if points:
        right.set_xticks([x for x, _ in points], [str(x) for x, _ in points])
    right.set_xlabel("--max-inflight")
    right.set_ylabel("completions / s")
    right.set_title("in-flight sweep")
    right.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def run_bench(
    params: Params,
    results_dir: Path,
    work: Path,
    name: str,
    address: str | None = None,
    multinode: bool = True,
    pdf_corpus: Path | None = None,
) -> Path:
    """Every measurement, in one run; returns the JSON written."""
    subreaper = _become_subreaper()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results: dict[str, Any] = {
        "name": name,
        "timestamp": stamp,
        "machine": machine(),
        "parameters": asdict(params),
        "cpu_accounting": _cpu_accounting(subreaper, address),
        "load_1min_at_start": history.load_1min(),
    }
    started = time.perf_counter()
    sim_args = ("--slots", str(params.slots), "--latency-ms", f"{params.latency_ms:g}")
    with SimulatorProcess(*sim_args) as sim:
        bench = Bench(params, work, sim, address)
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("saturation", lambda: measure_saturation(bench)),
            ("window_1", lambda: measure_window1(bench)),
            ("overhead", lambda: measure_overhead(bench, results["saturation"])),
            ("inflight_sweep", lambda: measure_inflight_sweep(bench, results["saturation"])),
            ("commit_order", lambda: measure_commit_order(bench)),
            ("benchmark_cells", lambda: measure_benchmark_cells(bench)),
            (
                "documents",
                lambda: measure_documents(work, params.pdf_documents, params.pdf_pages, pdf_corpus),
            ),
        ]
        for key, step in steps:
            bench.log(f"bench: {key} ...")
            results[key] = step()
        bench.log("bench: manifest skip and driver memory ...")
        results["manifest_skip"], results["driver_memory"] = measure_skip_and_memory(bench)
        bench.log("bench: dataset skip (rows/s, driver memory) ...")
        from benchmarks.datasets import measure_dataset_skip

        files = {k: results[k] for k in ("manifest_skip", "driver_memory")}
        results["dataset_skip"] = measure_dataset_skip(bench, files)
    bench.log("bench: sessions import memory per input byte ...")
    results["sessions_import_memory"] = sessions_memory.measure(
        work / "sessions-memory", params.import_line_mib
    )
    # Issue 23: a head and two worker nodes, two endpoints, one node removed mid-run. Last,
    # with simulators of its own (benchmarks/multinode.py).
    if multinode:
        bench.log("bench: multinode ...")
        results["multinode"] = measure_for_bench(params.segments, work, bench.log)
    else:
        results["multinode"] = {"skipped": "--no-multinode"}
    results["ratios"] = ratios(results)
    # Issue 23's budget per process role, from the same two runs as the marginal above.
    results["cpu_ms_per_completion"] = results["overhead"]["by_role"]
    results["cpu_ms_per_completion_steady"] = results["overhead"]["steady_by_role"]
    results["elapsed_s"] = time.perf_counter() - started
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / f"{name}-{stamp}.json"
    results["plot"] = plot(results, results_dir / "latest.png") or str(results_dir / "latest.png")
    body = json.dumps(results, indent=2, sort_keys=True) + "\n"
    target.write_text(body, encoding="utf-8")
    # The one the repository keeps (a run's own timestamped file is not committed).
    (results_dir / f"{name}-latest.json").write_text(body, encoding="utf-8")
    # Issue 51: the steady CPU by role and the saturation ratios, a line per bench.
    line = history.entry(results["saturation"], PROJECT_ROOT, name, results["load_1min_at_start"])
    history.append(results_dir, line)
    return target


def _cpu_accounting(subreaper: bool, address: str | None) -> str:
    if address:
        return f"the driver only: the runs joined the Ray at {address}, whose CPU is not theirs"
    if subreaper:
        return "every process of each run: reaped (RUSAGE_CHILDREN) + sampled where unreapable"
    return "a lower bound: no subreaper on this platform, orphaned Ray workers are missed"


def print_ratios(path: Path) -> None:
    results = json.loads(path.read_text(encoding="utf-8"))
    for key, entry in results["ratios"].items():
        value = entry["value"]
        shown = f"{value:.3f}" if value is not None else entry.get("skipped", "n/a")
        target = (
            f"  (target {entry['target']}: {'met' if entry['met'] else 'NOT met'})"
            if (entry["target"] and entry["met"] is not None)
            else ""
        )
        print(f"{key:40s} {shown}{target}")
    roles = [("", results.get("cpu_ms_per_completion") or {})]
    roles.append((" (steady)", results.get("cpu_ms_per_completion_steady") or {}))
    for how, role, entry in ((how, r, e) for how, table in roles for r, e in table.items()):
        ms = entry["cpu_ms_per_completion"]
        shown = f"{ms:.3f} ms" if ms is not None else "n/a"
        per_core = entry["completions_per_s_per_core"]
        rate = f", {per_core:.0f}/s a core" if per_core else ""
        kernel = entry.get("system_ms_per_completion")
        rate += f", {kernel:.3f} ms of it system" if kernel is not None else ""
        target = (
            f"  (target {entry['target']}: {'met' if entry['met'] else 'NOT met'})"
            if entry["target"] and entry["met"] is not None
            else ""
        )
        print(f"{'cpu per completion: ' + role + how:40s} {shown}{rate}{target}")
    print(f"results: {path}")


def parse_args(argv: list[str] | None) -> tuple[Params, argparse.Namespace]:
    parser = argparse.ArgumentParser(description="taguru-ray benchmarks (make bench)")
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument("--quick", action="store_true", help="smaller sizes, every measurement")
    preset.add_argument("--smoke", action="store_true", help="the smallest configuration")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work-dir", type=Path, help="keep corpora and outputs here")
    parser.add_argument("--name", help="the JSON's name prefix (default: bench[-preset])")
    parser.add_argument(
        "--no-multinode",
        action="store_true",
        help="leave the multi-node cluster out (its own test runs it: make test need not twice)",
    )
    parser.add_argument(
        "--address",
        help="join this Ray cluster instead of a local Ray per run (quicker; CPU is then "
        "the driver's alone)",
    )
    ints = (
        "segments",
        "segment_bytes",
        "slots",
        "segment_window",
        "workers",
        "window1_segments",
        "overhead_segments",
        "skip_segments",
        "pdf_documents",
        "pdf_pages",
    )
    for key in ints:
        parser.add_argument("--" + key.replace("_", "-"), type=int, dest=key)
    parser.add_argument("--latency-ms", type=float, dest="latency_ms")
    parser.add_argument(
        "--pdf-corpus",
        type=Path,
        help="a folder of real text-layer PDFs to convert as well (issue 47: for example "
        "/usr/share/R/doc/manual from Debian's r-doc-pdf)",
    )
    parser.add_argument("--sweep-levels", type=_int_list, dest="sweep_levels")
    parser.add_argument("--memory-segments", type=_int_list, dest="memory_segments")
    args = parser.parse_args(argv)
    preset_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    values = {**asdict(Params()), **PRESETS[preset_name]}
    for key in (*ints, "latency_ms", "sweep_levels", "memory_segments"):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    args.preset = preset_name
    return Params(**values), args


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def main(argv: list[str] | None = None) -> int:
    params, args = parse_args(argv)
    name = args.name or ("bench" if args.preset == "full" else f"bench-{args.preset}")
    with work_dir(args.work_dir) as work:
        try:
            path = run_bench(
                params,
                args.results_dir,
                work,
                name,
                args.address,
                not args.no_multinode,
                args.pdf_corpus,
            )
        except BenchFailed as failure:
            print(f"bench: {failure}", file=sys.stderr)
            return 1
    print_ratios(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
