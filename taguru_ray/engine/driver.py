"""The driver: the `taguru-ray extract` process.

`extract` locks --out, starts or joins Ray and hands the run to `ExtractRun`;
`dry_run` plans every segment without Ray, a model, a write or a lock.
"""

from __future__ import annotations

import asyncio
import logging

import ray

from taguru_ray.contract.names import join, output_name
from taguru_ray.engine.run import ExtractRun
from taguru_ray.engine.scan import Console, Tally, scan, skip_line
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, StartupError
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.read import read_segment
from taguru_ray.settings import Settings, checkpoint_fingerprint
from taguru_ray.store.checkpoints import count_reusable
from taguru_ray.store.inputs import expand
from taguru_ray.store.lock import lock_for
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir

__all__ = ["Console", "dry_run", "extract", "start_ray"]


def dry_run(settings: Settings, console: Console) -> int:
    """Plan every segment: calls nothing, writes nothing, takes no lock."""
    out = OutDir(settings.out)
    sources = expand(settings.paths)
    manifest, note = Manifest.load(out)
    if note:
        console.err(f"{FAILURE_PREFIX}{note}")
    existing = out.names()
    tally = Tally(total=len(sources))
    seen: set[str] = set()
    for index, source in enumerate(sources):
        scanned = scan(settings, index, source, len(sources) > 1, seen)
        if scanned.refusal or scanned.inputs is None or scanned.data is None:
            console.err(f"{FAILURE_PREFIX}{source}: {scanned.refusal}")
            tally.failed += 1
            continue
        skippable = not settings.force and not settings.bypasses_store
        if skippable and manifest.unchanged(source, scanned.inputs, existing):
            console.out(skip_line(source))
            tally.unchanged += 1
            continue
        segment = read_segment(source, scanned.data)
        chunks = plan_chunks(segment.paragraphs, settings.chunk_bytes)
        fingerprint = checkpoint_fingerprint(settings, segment.sha256)
        reusable = (
            0
            if settings.force
            else count_reusable(out, source, fingerprint, [chunk.sha256 for chunk in chunks])
        )
        extra = f", {reusable} reusable from checkpoint" if reusable else ""
        console.out(
            f"{source}: would extract ({segment.bytes} bytes, {len(chunks)} chunk(s){extra}) "
            f"→ {join(settings.out, output_name(source))}"
        )
        tally.planned += 1
    console.err(
        f"extract: {tally.planned} planned, {tally.unchanged} unchanged, {tally.failed} failed "
        f"of {tally.total} segment(s)"
    )
    return EXIT_FAILED if tally.failed else EXIT_OK


def start_ray(address: str | None) -> bool:
    """Connect to `address`, or start a local Ray; True when this process started it."""
    if ray.is_initialized():
        return False
    ray.init(
        address=address,
        logging_level=logging.ERROR,
        log_to_driver=False,
        include_dashboard=False if address is None else None,
    )
    return address is None


def extract(settings: Settings, console: Console) -> int:
    """A real run: lock --out, start or join Ray, extract, summarise."""
    if settings.dry_run:
        return dry_run(settings, console)
    out = OutDir(settings.out)
    sources = expand(settings.paths)
    try:
        out.ensure()
    except OSError as error:
        raise StartupError(f"--out {settings.out}: cannot create it ({error})") from None
    with lock_for(out, console.err):
        started = start_ray(settings.address)
        try:
            return asyncio.run(ExtractRun(settings, console, out, sources).run())
        finally:
            if started:
                ray.shutdown()
