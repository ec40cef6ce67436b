"""The orphan check's cost at a million: a dataset's rows against a folder's files (issue 52).

Every run judges the manifest against what its arguments cover (`store/orphans.py`,
ADR 0083): a pass over the manifest's sources, and one over the run's own sources
(their hashes, sorted). For a folder of files those are front-coded names; for a
dataset they are the ids its shards' listing read (`ShardRows.sources`) — no row's
text is read for it. Measured here, in one process, as CPU seconds of
`Coverage.orphans` on N manifest entries of which one in a thousand is gone:

- **files**: a folder argument of N ``.md`` names (no file need exist: the check
  reads the listing, never the disk);
- **rows**: a folder of 8 Parquet shards of N rows with an ``id`` column, listed
  by `store.inputs.expand` as a run lists it (the listing itself is timed apart:
  the run pays it anyway, before the check).

Files and rows alternate, the quicker of `--rounds` each (ADR 0045: CPU time,
interleaved, on a machine others share).

    python -m benchmarks.orphans --rows 1000000     # writes results/orphans-*.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result

SHARDS = 8
GONE_EVERY = 1000  # one manifest entry in this many is no longer among the inputs
RESULTS = Path(__file__).parent / "results"


def _cpu(action: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.process_time()
    result = action()
    return time.process_time() - start, result


def _dataset(folder: Path, rows: int) -> list[str]:
    """8 shards of `rows` rows in all (a short text each: the check never reads it); the
    manifest's row sources, a row in GONE_EVERY among them no longer in any shard."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taguru_ray.store.shard_formats import string_array

    manifest = []
    per = rows // SHARDS
    for shard in range(SHARDS):
        ids = [f"doc-{shard * per + row:07d}" for row in range(per)]
        held = [row_id for index, row_id in enumerate(ids, shard * per) if index % GONE_EVERY]
        texts = ["a row's text"] * len(held)
        path = folder / f"part-{shard:05d}.parquet"
        pq.write_table(pa.table({"id": string_array(held), "text": string_array(texts)}), path)
        manifest += [f"{path}#{row_id}" for row_id in ids]
    return manifest


def measure(rows: int, rounds: int) -> dict[str, Any]:
    from taguru_ray.store.corpus import Corpus
    from taguru_ray.store.cover import Cover
    from taguru_ray.store.inputs import expand
    from taguru_ray.store.orphans import Coverage
    from taguru_ray.store.shard_formats import Columns

    with tempfile.TemporaryDirectory(prefix="orphans-bench-") as tmp:
        folder = Path(tmp) / "ds"
        folder.mkdir()
        row_manifest = _dataset(folder, rows)
        listing_s, dataset = _cpu(lambda: expand([str(folder)], columns=Columns("text", "id")))
        names = [f"doc-{index:07d}.md" for index in range(len(row_manifest))]
        files = Corpus()
        files.add_folder("docs", [name for index, name in enumerate(names) if index % GONE_EVERY])
        files.covering.append(Cover.listed("docs", rows=False))
        file_manifest = [f"docs/{name}" for name in names]
        del names

        def check(corpus: Corpus, manifest: list[str]) -> Callable[[], list[str]]:
            return lambda: Coverage.of(corpus).orphans(lambda: iter(manifest))

        timings: dict[str, list[float]] = {"files": [], "rows": []}
        found: dict[str, int] = {}
        for _ in range(rounds):
            for kind, corpus, manifest in (
                ("files", files, file_manifest),
                ("rows", dataset, row_manifest),
            ):
                seconds, orphans = _cpu(check(corpus, manifest))
                timings[kind].append(round(seconds, 3))
                found[kind] = len(orphans)
    files_s, rows_s = min(timings["files"]), min(timings["rows"])
    return {
        "benchmark": "orphans",
        "entries": len(row_manifest),
        "orphans": found,
        "cpu_s": {"files": files_s, "rows": rows_s},
        "ratio_rows_to_files": round(rows_s / files_s, 2) if files_s else None,
        "rounds": timings,
        "dataset_listing_cpu_s": round(listing_s, 3),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print, write no results file")
    args = parser.parse_args()
    result = measure(args.rows, args.rounds)
    if args.no_write:
        print(json.dumps(result, indent=2))
    else:
        print(write_result(RESULTS, "orphans", result))


if __name__ == "__main__":
    main()
