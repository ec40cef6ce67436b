"""The driver: the `taguru-ray extract` process.

It enumerates segments in name order, applies the manifest skip, dispatches
the rest to segment workers through the deterministic window, records each
written segment in the manifest (then drops its checkpoint) and prints the
report lines in name order. It never calls the model itself: workers do,
under the gateway's permits.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import ray

from taguru_ray.contract.names import join, output_name, written_id
from taguru_ray.contract.source_file import SourceFileError, parse_source_file
from taguru_ray.engine.segment import FAILURE_PREFIX, SegmentJob, SegmentOutcome
from taguru_ray.engine.window import OrderedReport, SegmentWindow
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, StartupError
from taguru_ray.llm.client import ChatClient
from taguru_ray.llm.ladder import PINNED, PROMPTED, probe
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.read import SegmentRefused, read_segment, segment_sha256
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.settings import Settings, checkpoint_fingerprint, compute_inputs
from taguru_ray.store.checkpoints import Checkpoint, count_reusable
from taguru_ray.store.inputs import expand, read_source
from taguru_ray.store.lock import lock_for
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir


@dataclass
class Console:
    """Where report lines go; tests capture them."""

    out: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    err: Callable[[str], None] = field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )


@dataclass
class Tally:
    written: int = 0
    unchanged: int = 0
    failed: int = 0
    planned: int = 0
    total: int = 0


@dataclass(frozen=True)
class Scanned:
    """A segment after the driver read and hashed it."""

    index: int
    source: str
    written_id: str
    data: bytes | None = None
    inputs: dict[str, Any] | None = None
    refusal: str | None = None


def new_run_id() -> str:
    return secrets.token_hex(8)


def _scan(
    settings: Settings, index: int, source: str, several: bool, seen_ids: set[str]
) -> Scanned:
    ident = written_id(source, settings.source_id, several)
    if ident in seen_ids:
        return Scanned(
            index,
            source,
            ident,
            refusal=(
                f"writes the same source id {ident!r} as an earlier segment of this run — "
                "give the segments distinct file stems or run them separately"
            ),
        )
    seen_ids.add(ident)
    try:
        data = read_source(source)
        digest = segment_sha256(data)
    except OSError as error:
        return Scanned(index, source, ident, refusal=f"cannot read it ({error})")
    except SegmentRefused as refusal:
        return Scanned(index, source, ident, refusal=str(refusal))
    inputs = compute_inputs(settings, digest, ident, output_name(source))
    return Scanned(index, source, ident, data, inputs)


def _skip_line(source: str) -> str:
    return f"{source}: unchanged, skipped (--force re-extracts)"


def _existing_contribution(out: OutDir, name: str) -> Callable[[], Contribution]:
    """A skipped segment offers its existing file's labels; read only if a later
    segment actually needs the fold."""

    def read() -> Contribution:
        data = out.read(name)
        if data is None:
            return Contribution()
        try:
            parsed = parse_source_file(data, name=name)
        except SourceFileError:
            return Contribution()
        return Contribution.of(parsed.associations, parsed.aliases)

    return read


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
        scanned = _scan(settings, index, source, len(sources) > 1, seen)
        if scanned.refusal or scanned.inputs is None or scanned.data is None:
            console.err(f"{FAILURE_PREFIX}{source}: {scanned.refusal}")
            tally.failed += 1
            continue
        if not settings.force and manifest.unchanged(source, scanned.inputs, existing):
            console.out(_skip_line(source))
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
            return asyncio.run(_Run(settings, console, out, sources).run())
        finally:
            if started:
                ray.shutdown()


class _Run:
    def __init__(
        self, settings: Settings, console: Console, out: OutDir, sources: list[str]
    ) -> None:
        self.settings = settings
        self.console = console
        self.out = out
        self.sources = sources
        self.run_id = new_run_id()
        self.tally = Tally(total=len(sources))
        self.window = SegmentWindow(settings.segment_window)
        self.report = OrderedReport(console.out, console.err)
        self.manifest, note = Manifest.load(out)
        if note:
            console.err(f"{FAILURE_PREFIX}{note}")

    async def run(self) -> int:
        # Imported here: the actor classes register with Ray only when a run needs them.
        from taguru_ray.engine.ledger import Ledger
        from taguru_ray.engine.worker import DiagnosticsWriter, SegmentWorker
        from taguru_ray.llm.gateway import Gateway

        settings = self.settings
        gateway = Gateway.remote(settings.max_inflight, await self._resolve_rung())
        self.ledger = Ledger.remote()
        diagnostics = (
            DiagnosticsWriter.remote(settings.diagnostics_out, self.run_id)
            if settings.diagnostics_out
            else None
        )
        self.workers = [
            SegmentWorker.remote(settings, self.run_id, gateway, self.ledger, diagnostics)
            for _ in range(settings.workers)
        ]
        existing = self.out.names()
        seen: set[str] = set()
        tasks: list[asyncio.Task[None]] = []
        for index, source in enumerate(self.sources):
            scanned = await asyncio.to_thread(
                _scan, settings, index, source, len(self.sources) > 1, seen
            )
            if scanned.refusal or scanned.inputs is None or scanned.data is None:
                await self._failed_before_start(index, source, scanned.refusal or "unreadable")
                continue
            if not settings.force and self.manifest.unchanged(source, scanned.inputs, existing):
                self.tally.unchanged += 1
                self.report.add(index, [("out", _skip_line(source))])
                await self.window.finish(
                    index, _existing_contribution(self.out, scanned.inputs["output"])
                )
                continue
            await self.window.wait_eligible(index)
            vocabulary = self.window.vocabulary_for(index)
            folded = self.window.drain_folded()
            if folded:  # the ledger must hold them before the segment can look them up
                await self.ledger.absorb.remote(folded)
            job = SegmentJob(
                index,
                source,
                scanned.data,
                scanned.written_id,
                vocabulary,
                self.window.claims_upto(index),
            )
            tasks.append(asyncio.create_task(self._extract(job)))
        await asyncio.gather(*tasks)
        await asyncio.to_thread(self.manifest.compact)
        if diagnostics is not None:
            await diagnostics.close.remote()
        tally = self.tally
        self.console.err(
            f"extract: {tally.written} written, {tally.unchanged} unchanged, {tally.failed} failed "
            f"of {tally.total} segment(s)"
        )
        return EXIT_FAILED if tally.failed else EXIT_OK

    async def _resolve_rung(self) -> str | None:
        """The run's starting rung: none off the ladder, the pinned one, or `auto`'s probe."""
        settings = self.settings
        if settings.structured_output == "auto":
            async with httpx.AsyncClient() as http:
                assert settings.url is not None
                client = ChatClient(
                    http,
                    settings.url,
                    settings.model,
                    api_key=settings.api_key,
                    timeout_secs=settings.timeout_secs,
                )
                rung, why = await probe(client.complete)
            self.console.err(f"{FAILURE_PREFIX}structured output: auto resolved to {rung} ({why})")
            return rung
        if settings.structured_output in PINNED:
            return PINNED[settings.structured_output]
        return PROMPTED if settings.max_output_tokens else None

    async def _failed_before_start(self, index: int, source: str, why: str) -> None:
        self.tally.failed += 1
        self.report.add(index, [("err", f"{FAILURE_PREFIX}{source}: {why}")])
        await self.window.finish(index, Contribution())

    async def _extract(self, job: SegmentJob) -> None:
        worker = self.workers[job.index % len(self.workers)]
        try:
            outcome: SegmentOutcome = await worker.run.remote(job)
        except ray.exceptions.RayError as error:
            outcome = SegmentOutcome(
                job.index,
                job.source,
                "failed",
                notes=[
                    f"{FAILURE_PREFIX}{job.source}: the worker running it failed ({error}) — "
                    "rerun to resume from its checkpoint"
                ],
            )
        lines = [("err", note) for note in outcome.notes]
        if outcome.status == "written" and outcome.inputs is not None:
            await asyncio.to_thread(self._record, job.source, outcome.inputs)
            self.tally.written += 1
            lines.append(("out", outcome.report or ""))
        else:
            self.tally.failed += 1
        self.report.add(job.index, lines)
        await self.window.finish(job.index, outcome.contribution)

    def _record(self, source: str, inputs: dict[str, Any]) -> None:
        """Manifest first, then drop the checkpoint: a kill in between costs nothing."""
        previous = self.manifest.previous_output(source)
        self.manifest.record(source, inputs)
        if previous and previous != inputs["output"]:
            self.out.delete(previous)
        Checkpoint(self.out, source, {}).delete()
