"""An already-extracted corpus for the skip measurement, built once and kept.

A million segments is two million small files and most of a gigabyte of
manifest: minutes to write. So a big corpus is written once under a cache
folder (``$TAGURU_RAY_BENCH_CACHE``, else ``~/.cache/taguru-ray/bench``), in a
folder named by its size and a key over everything its bytes depend on — the
corpus generator, the manifest entry the timed run's flags compute, the
rendered source file — and reused by every later run with the same key. A
smaller corpus is written under the run's own work folder as before.

The files are written in parallel (a process a core) with plain writes, no
fsync; the manifest and its index with taguru-ray's own writer, so their bytes
are what a run's compaction writes. Nothing here calls a model.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.corpus import segment_name, segment_text

CACHE_FROM = 50_000  # corpora from this size on are kept between runs
FORMAT = 1  # bump when what is written here changes in a way the key does not see
CHUNK = 5_000  # segments per process task
READY = "ready.json"


def cache_home() -> Path:
    folder = os.environ.get("TAGURU_RAY_BENCH_CACHE")
    if folder:
        return Path(folder)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "taguru-ray" / "bench"


def _join(folder: str, name: str) -> str:
    """A source as `store.inputs.expand` names it: the folder as typed, then the name."""
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


def _write_chunk(job: tuple[str, str, int, int, int, str, str | None, bool]) -> list[str]:
    """Write segments start..stop-1 and their source files; their sha256 hex digests."""
    from taguru_ray.contract.names import output_name, written_id
    from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
    from taguru_ray.pipeline.read import decode_segment, segment_sha256

    corpus, out, start, stop, size, context, source_id, several = job
    digests = []
    for index in range(start, stop):
        name = segment_name(index)
        data = segment_text(index, size).encode("utf-8")
        source = _join(corpus, name)
        with open(os.path.join(corpus, name), "wb") as handle:
            handle.write(data)
        header = Header(id=written_id(source, source_id, several), context_id=context)
        rendered = render_source_file(SourceFile(header, Passage(decode_segment(data))))
        with open(os.path.join(out, output_name(source)), "wb") as handle:
            handle.write(rendered)
        digests.append(segment_sha256(data))
    return digests


def prepare(
    segments: int,
    segment_bytes: int,
    work: Path,
    settings_for: Callable[[Path, Path], Any],
    log: Callable[[str], None],
) -> tuple[Path, Path, int]:
    """(corpus, out, corpus bytes) of `segments` segments already extracted.

    `settings_for(corpus, out)` resolves the timed run's settings for those two
    folders: the manifest entries are computed from them, so every segment
    is unchanged for that run.
    """
    from taguru_ray.contract.names import output_name, written_id
    from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
    from taguru_ray.pipeline.run_inputs import InputDigests
    from taguru_ray.settings import compute_inputs
    from taguru_ray.store.manifest import MANIFEST_INDEX, Manifest, PackedEntries
    from taguru_ray.store.outdir import OutDir

    digests_none = InputDigests()  # the timed run reads no --vocabulary/--schema
    home = cache_home() if segments >= CACHE_FROM else work / "prepared"
    probe = settings_for(Path("/corpus"), Path("/out"))
    source_id = probe.source.source_id
    several = segments > 1
    sample = compute_inputs(probe, digests_none, "0" * 64, "/corpus/x.md", "x.jsonl")
    header = Header(id="/corpus/x.md", context_id=probe.source.context)
    corpus_code = (Path(__file__).parent / "corpus.py").read_bytes()
    key = hashlib.sha256(
        json.dumps(
            {
                "format": FORMAT,
                "segments": segments,
                "bytes": segment_bytes,
                "corpus": hashlib.sha256(corpus_code).hexdigest(),
                "entry": sample,
                "source_id": source_id,
                "file": render_source_file(SourceFile(header, Passage("x\n"))).decode("utf-8"),
            },
            sort_keys=True,
        ).encode("utf-8")
    ).hexdigest()[:8]
    stem = f"s{segments}x{segment_bytes}"  # short: the paths are in every line and entry
    folder = home / f"{stem}-{key}"
    corpus, out = folder / "corpus", folder / "out"
    ready = folder / READY
    if ready.exists():
        log(f"  {segments} segments: reusing {folder}")
        if not (out / MANIFEST_INDEX).exists():  # kept from before the index: written now
            outdir = OutDir(str(out))
            Manifest.load(outdir)[0].write_single()
        return corpus, out, int(json.loads(ready.read_text(encoding="utf-8"))["bytes"])
    if home.exists():  # an older key's corpus of this size: never read again
        for stale in home.glob(f"{stem}-*"):
            shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    corpus.mkdir(parents=True)
    out.mkdir(parents=True)
    settings = settings_for(corpus, out)
    log(f"  {segments} segments: writing an extracted corpus under {folder}")
    jobs = [
        (
            str(corpus),
            str(out),
            start,
            min(start + CHUNK, segments),
            segment_bytes,
            settings.source.context,
            source_id,
            several,
        )
        for start in range(0, segments, CHUNK)
    ]
    if len(jobs) == 1:  # a small corpus: no pool of fresh interpreters to start
        digests = _write_chunk(jobs[0])
    else:
        processes = max(1, min(os.cpu_count() or 1, len(jobs)))
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(processes, mp_context=context) as pool:
            digests = [digest for chunk in pool.map(_write_chunk, jobs) for digest in chunk]
    entries = PackedEntries()
    for index, digest in enumerate(digests):
        source = _join(str(corpus), segment_name(index))
        ident = written_id(source, source_id, several)
        entries[source] = compute_inputs(settings, digests_none, digest, ident, output_name(source))
    total = sum(entry.stat().st_size for entry in os.scandir(corpus))
    # As a run's compaction writes it: the single file, then its index.
    Manifest(OutDir(str(out)), entries).write_single()
    ready.write_text(json.dumps({"bytes": total, "segments": segments}), encoding="utf-8")
    return corpus, out, total


def forget(out: Path) -> None:
    """Drop a prepared corpus a run may have changed (it is written again next time)."""
    (out.parent / READY).unlink(missing_ok=True)
