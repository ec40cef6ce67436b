"""A dataset's skip-only rerun: rows scanned per second and the driver's memory (issue 47).

A Parquet dataset of N rows (8 shards, an ``id`` column, each row's text the file
corpus's segment of the same index and size, `benchmarks/corpus.py`) already
extracted into --out — a source file a row and the manifest a compaction writes —
is run again with ``--id-column id``: every row skipped, nothing asked. Measured
as the file skip is (`benchmarks/run.py`, ADR 0042): the run's wall time less a
1-row dataset's, the span from the first skip line to the last, and the driver's
peak RSS — set beside the million-file skip's figures of the same bench run, or
of the last bench of record when run alone (ADR 0075).

    python -m benchmarks.datasets --rows 1000000     # alone; writes results/datasets-*.json

A big prepared dataset is kept under the bench cache (`benchmarks/prepared.py`):
a million rows are a million source files in --out, minutes to write.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.corpus import segment_text
from benchmarks.prepared import CACHE_FROM, CHUNK, READY, cache_home

SHARDS = 8
FORMAT = 1  # bump when what prepare_dataset writes changes in a way the key does not see
FLAGS = ("--id-column", "id")
RESULTS = Path(__file__).parent / "results"


def _row_id(index: int) -> str:
    return f"doc-{index:07d}"


def _shard_of(index: int, rows: int) -> int:
    return index * SHARDS // rows if rows >= SHARDS else 0


def _shard_path(corpus: Path, shard: int) -> str:
    return f"{corpus}/part-{shard:05d}.parquet"


def _write_outputs(job: tuple[str, str, int, int, int, int, str]) -> list[str]:
    """Source files of rows start..stop-1; their sha256 hex digests."""
    from taguru_ray.contract.names import output_name, row_source
    from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
    from taguru_ray.pipeline.read import decode_segment, segment_sha256

    corpus, out, start, stop, rows, size, context = job
    digests = []
    for index in range(start, stop):
        data = segment_text(index, size).encode("utf-8")
        source = row_source(_shard_path(Path(corpus), _shard_of(index, rows)), _row_id(index))
        header = Header(id=source, context_id=context)
        rendered = render_source_file(SourceFile(header, Passage(decode_segment(data))))
        with open(os.path.join(out, output_name(source)), "wb") as handle:
            handle.write(rendered)
        digests.append(segment_sha256(data))
    return digests


def prepare_dataset(bench: Any, rows: int) -> tuple[Path, Path, int]:
    """(dataset folder, out, text bytes) of `rows` rows already extracted."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taguru_ray.cli.extract import parse_flags
    from taguru_ray.contract.names import output_name, row_source
    from taguru_ray.pipeline.run_inputs import InputDigests
    from taguru_ray.settings import compute_inputs, resolve_settings
    from taguru_ray.store.config_file import read_config_file
    from taguru_ray.store.manifest import Manifest, PackedEntries
    from taguru_ray.store.outdir import OutDir

    size = bench.params.segment_bytes
    home = cache_home() if rows >= CACHE_FROM else bench.work / "prepared"
    # What the prepared bytes depend on: the row generator, the layout, this FORMAT.
    layout = json.dumps([FORMAT, SHARDS, FLAGS, _shard_path(Path("/d"), 1), _row_id(1)])
    corpus_code = (Path(__file__).parent / "corpus.py").read_bytes()
    key = hashlib.sha256(layout.encode() + corpus_code).hexdigest()[:8]
    folder = home / f"d{rows}x{size}-{key}"
    corpus, out = folder / "dataset", folder / "out"
    ready = folder / READY

    def settings_for(dataset: Path, target: Path) -> Any:
        args = bench.extract_args(dataset, target, *FLAGS)
        return resolve_settings(parse_flags(args), bench.env(), read_config_file)

    if ready.exists():
        bench.log(f"  {rows} rows: reusing {folder}")
        return corpus, out, int(json.loads(ready.read_text(encoding="utf-8"))["bytes"])
    for stale in home.glob(f"d{rows}x{size}-*") if home.exists() else ():
        shutil.rmtree(stale, ignore_errors=True)
    corpus.mkdir(parents=True)
    out.mkdir(parents=True)
    bench.log(f"  {rows} rows: writing an extracted dataset under {folder}")
    total = 0
    for shard in range(min(SHARDS, rows)):
        indexes = [i for i in range(rows) if _shard_of(i, rows) == shard]
        texts = [segment_text(i, size) for i in indexes]
        total += sum(len(text.encode("utf-8")) for text in texts)
        table = pa.table({"id": [_row_id(i) for i in indexes], "text": texts})
        pq.write_table(table, _shard_path(corpus, shard), compression="zstd")
    settings = settings_for(corpus, out)
    jobs = [
        (
            str(corpus),
            str(out),
            start,
            min(start + CHUNK, rows),
            rows,
            size,
            settings.source.context,
        )
        for start in range(0, rows, CHUNK)
    ]
    if len(jobs) == 1:
        digests = _write_outputs(jobs[0])
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max(1, min(os.cpu_count() or 1, len(jobs))), mp_context=context
        ) as pool:
            digests = [digest for chunk in pool.map(_write_outputs, jobs) for digest in chunk]
    entries = PackedEntries()
    none = InputDigests()
    sources = [row_source(_shard_path(corpus, _shard_of(i, rows)), _row_id(i)) for i in range(rows)]
    for source, digest in sorted(zip(sources, digests, strict=True)):
        entries[source] = compute_inputs(settings, none, digest, source, output_name(source))
    Manifest(OutDir(str(out)), entries).write_single()
    ready.write_text(json.dumps({"bytes": total, "rows": rows}), encoding="utf-8")
    return corpus, out, total


def _skip(bench: Any, corpus: Path, out: Path, rows: int) -> Any:
    from benchmarks.prepared import forget
    from benchmarks.process_runs import BenchFailed, _check

    run = bench.extract(corpus, out, *FLAGS, timed=False)
    asked = bench.sim.stats()["requests"]
    if asked or run.exit_code != 0 or run.marked_lines != rows:
        forget(out)
    _check(run, f"dataset skip of {rows}")
    if asked or run.marked_lines != rows:
        raise BenchFailed(
            f"the dataset skip of {rows} rows skipped {run.marked_lines}, asked {asked}"
        )
    return run


def measure_dataset_skip(bench: Any, files: dict[str, Any] | None = None) -> dict[str, Any]:
    """The skip-only rerun of `bench.params.dataset_rows` rows beside a 1-row baseline,
    each the quicker of two runs; `files`: the file skip of the same bench run, if any."""
    rows = bench.params.dataset_rows
    runs: dict[int, Any] = {}
    peaks: dict[int, float | None] = {}
    for size in (1, rows):
        corpus, out, nbytes = prepare_dataset(bench, size)
        first = _skip(bench, corpus, out, size)
        again = _skip(bench, corpus, out, size)
        runs[size] = again if again.wall_s < first.wall_s else first
        found = [r.driver_peak_rss_mb for r in (first, again) if r.driver_peak_rss_mb]
        peaks[size] = max(found) if found else None
        bench.log(
            f"  {size} unchanged rows: {runs[size].wall_s:.1f} s (first {first.wall_s:.1f} s), "
            f"driver peak {peaks[size] or 0:.0f} MB"
        )
    big, base = runs[rows], runs[1]
    net = big.wall_s - base.wall_s if big.wall_s > base.wall_s else None
    span = (
        big.last_marked_s - big.first_marked_s
        if big.first_marked_s is not None and big.last_marked_s is not None
        else None
    )
    result: dict[str, Any] = {
        "rows": rows,
        "shards": min(SHARDS, rows),
        "row_bytes": bench.params.segment_bytes,
        "text_bytes": nbytes,
        "wall_s": big.wall_s,
        "baseline_1_row_wall_s": base.wall_s,
        "net_skip_s": net,
        "skip_lines_s": span,
        "rows_per_s": rows / net if net else None,
        "rows_per_s_skip_lines": rows / span if span else None,
        "driver_peak_rss_mb": peaks[rows],
        "baseline_1_row_driver_peak_rss_mb": peaks[1],
        "cpu_s": big.cpu_s,
        "what": "a real rerun of an extracted Parquet dataset (--id-column id) that skips "
        "every row; net = its wall time less a 1-row dataset's",
    }
    result["versus_files"] = _versus_files(result, files)
    return result


def _versus_files(result: dict[str, Any], files: dict[str, Any] | None) -> dict[str, Any]:
    """The file skip of the same size: this bench run's, else the bench of record's."""
    where = "this run"
    if files is not None and "driver_memory" in files and "segments" not in files["driver_memory"]:
        where = "this run, the same Ray"
    if files is None:
        latest = RESULTS / "bench-latest.json"
        if not latest.exists():
            return {"skipped": "no file skip measured"}
        record = json.loads(latest.read_text(encoding="utf-8"))
        files = {"manifest_skip": record["manifest_skip"], "driver_memory": record["driver_memory"]}
        where = f"bench of record {record.get('timestamp')}"
    skip, memory = files["manifest_skip"], files["driver_memory"]
    same = next((r for r in skip.get("by_size", []) if r["segments"] == result["rows"]), None)
    if same is None:
        return {"skipped": f"no file skip of {result['rows']} segments in {where}"}
    net = same.get("net_skip_s")
    peak = same.get("driver_peak_rss_mb")
    return {
        "from": where,
        "segments": same["segments"],
        "net_skip_s": net,
        "segments_per_s": same["segments"] / net if net else None,
        "driver_peak_rss_mb": peak,
        "baseline_1_segment_driver_peak_rss_mb": memory.get(
            "baseline_1_segment_driver_peak_rss_mb"
        ),
        "rows_per_s_vs_files": _ratio(
            result["rows_per_s"], same["segments"] / net if net else None
        ),
        "driver_memory_vs_files": _ratio(result["driver_peak_rss_mb"], peak),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def measure_file_skip(bench: Any, size: int) -> dict[str, Any]:
    """The file skip of `size` segments beside a 1-segment run, as `measure_dataset_skip`
    measures rows (each the quicker of two runs), in the shape `_versus_files` reads."""
    from benchmarks.process_runs import _skip_run, prepare_extracted

    walls: dict[int, float] = {}
    peaks: dict[int, float | None] = {}
    for segments in (1, size):
        corpus, out, _ = prepare_extracted(bench, segments)
        runs = [_skip_run(bench, corpus, out, segments) for _ in range(2)]
        walls[segments] = min(run.wall_s for run in runs)
        found = [run.driver_peak_rss_mb for run in runs if run.driver_peak_rss_mb]
        peaks[segments] = max(found) if found else None
        bench.log(f"  {segments} unchanged files: {walls[segments]:.1f} s, driver peak "
                  f"{peaks[segments] or 0:.0f} MB")  # fmt: skip
    net = walls[size] - walls[1] if walls[size] > walls[1] else None
    row = {"segments": size, "net_skip_s": net, "driver_peak_rss_mb": peaks[size]}
    return {
        "manifest_skip": {"by_size": [row]},
        "driver_memory": {"baseline_1_segment_driver_peak_rss_mb": peaks[1]},
    }


_SETTLE = """
import json, os, sys, time
from taguru_ray import heap
heap.steady_malloc()
heap.steady_arrow()
from taguru_ray.cli.extract import parse_flags
from taguru_ray.engine.run import ExtractRun
from taguru_ray.engine.run_inputs import load_run_inputs
from taguru_ray.engine.scan import Console
from taguru_ray.settings import resolve_settings
from taguru_ray.store.config_file import read_config_file
from taguru_ray.store.inputs import corpus_of
from taguru_ray.store.outdir import OutDir
settings = resolve_settings(parse_flags(sys.argv[1:]), os.environ, read_config_file)
lines = [0]
def out(line):
    lines[0] += 1
wall, cpu = time.perf_counter(), time.process_time()
sources = corpus_of(settings.source)
listed = time.perf_counter() - wall
run = ExtractRun(settings, Console(out, lambda line: None), OutDir(settings.source.out), sources,
                 load_run_inputs(settings))
run.start_reading()
needs = run.reading.early.result()
run.stop_reading()
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "list_s": listed, "skipped": lines[0], "needs_a_worker": needs,
                  "unchanged": run.tally.unchanged, "segments": len(sources),
                  "peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024}))
"""


def settle(bench: Any, corpus: Path, out: Path, *flags: str) -> dict[str, Any]:
    """A rerun's whole skip as the driver decides it before Ray starts (the early settling
    of `engine/reading.py`), in a process of its own: wall and CPU seconds, peak RSS.
    The measurement a loaded machine still gives when Ray cannot start in time."""
    import subprocess

    args = ["--context", bench_context(), "--out", str(out), *flags, str(corpus)]
    done = subprocess.run(
        [sys.executable, "-c", _SETTLE, *args],
        env=bench.env(),
        capture_output=True,
        text=True,
        timeout=bench.params.run_timeout_s,
        cwd=bench.tree,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the settling run failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["unchanged"] != result["segments"] or result["needs_a_worker"]:
        raise RuntimeError(f"the settling run did not skip everything: {result}")
    return result


def bench_context() -> str:
    from benchmarks.process_runs import CONTEXT

    return CONTEXT


def measure_settling(bench: Any, rows: int, rounds: int = 2, files: bool = True) -> dict[str, Any]:
    """Files and dataset rows of one size, their skips alternated `rounds` times (ADR 0045):
    the quicker of each kind, CPU seconds beside wall, rows (segments) per CPU second.
    Without `files`, the dataset alone."""
    from benchmarks.process_runs import prepare_extracted

    dataset, dataset_out, _ = prepare_dataset(bench, rows)
    kinds = {"dataset": lambda: settle(bench, dataset, dataset_out, *FLAGS)}
    if files:
        corpus, files_out, _ = prepare_extracted(bench, rows)
        kinds["files"] = lambda: settle(bench, corpus, files_out)
    seen: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for _ in range(rounds):
        for kind, measure in kinds.items():
            seen[kind].append(measure())
            bench.log(f"  settle {kind} x{rows}: {seen[kind][-1]}")
    best = {kind: min(runs, key=lambda r: r["cpu_s"]) for kind, runs in seen.items()}
    if not files:
        return {
            "segments": rows,
            "runs": seen,
            "dataset_rows_per_cpu_s": rows / best["dataset"]["cpu_s"],
            "dataset_peak_rss_mb": max(r["peak_rss_mb"] for r in seen["dataset"]),
        }
    return {
        "segments": rows,
        "runs": seen,
        "dataset_rows_per_cpu_s": rows / best["dataset"]["cpu_s"],
        "files_per_cpu_s": rows / best["files"]["cpu_s"],
        "dataset_cpu_vs_files": _ratio(best["dataset"]["cpu_s"], best["files"]["cpu_s"]),
        "dataset_peak_rss_mb": best["dataset"]["peak_rss_mb"],
        "files_peak_rss_mb": best["files"]["peak_rss_mb"],
        "dataset_memory_vs_files": _ratio(
            max(r["peak_rss_mb"] for r in seen["dataset"]),
            max(r["peak_rss_mb"] for r in seen["files"]),
        ),
        "what": "the skip as the driver settles it before Ray, in a process of its own; "
        "the quicker (by CPU) of alternated runs of each kind",
    }


def main(argv: list[str] | None = None) -> int:
    import psutil
    import ray

    from benchmarks.process_runs import PRESETS, Bench, Params
    from taguru_ray.simulate.harness import SimulatorProcess

    parser = argparse.ArgumentParser(description="the dataset skip-only rerun, alone")
    parser.add_argument("--rows", type=int, default=Params.dataset_rows)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--with-files", action="store_true", help="measure the file skip of the same size too"
    )
    parser.add_argument(
        "--settle-only",
        action="store_true",
        help="no Ray: the skip as the driver settles it (rows, and files with --with-files)",
    )
    args = parser.parse_args(argv)
    params = Params(**{**PRESETS["full"], "dataset_rows": args.rows})
    work = args.work or Path(tempfile.mkdtemp(prefix="taguru-bench-datasets-"))
    if args.settle_only:
        with SimulatorProcess("--slots", "4") as sim:
            result = measure_settling(Bench(params, work, sim), args.rows, files=args.with_files)
        return _write({"settling": result})
    # One Ray of this process's own for every run to join: a Ray start per run is what a
    # loaded machine times out (the skip itself is the driver's, measured as it is).
    ray.init(
        address="local", include_dashboard=False, log_to_driver=False, num_cpus=2,
        _node_ip_address="127.0.0.1",
    )  # fmt: skip
    try:
        address = ray.get_runtime_context().gcs_address
        ours = frozenset(child.pid for child in psutil.Process().children())  # Ray's daemons
        with SimulatorProcess("--slots", "4") as sim:
            bench = Bench(params, work, sim, address, keep=ours)
            files = measure_file_skip(bench, args.rows) if args.with_files else None
            result = measure_dataset_skip(bench, files)
    finally:
        ray.shutdown()
    return _write({"dataset_skip": result})


def _write(found: dict[str, Any]) -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    body = json.dumps({"timestamp": stamp, **found}, indent=2, sort_keys=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"datasets-{stamp}.json").write_text(body + "\n", encoding="utf-8")
    (RESULTS / "datasets-latest.json").write_text(body + "\n", encoding="utf-8")
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
