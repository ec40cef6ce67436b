"""The `SegmentRecorder` a worker uses: the segment's records on the --out store.

One recorder per segment and one segment per worker call, so no two
processes ever write the same file. Checkpoint rewrites are serialised per
segment: each one serialises every unit landed so far, and two racing
rewrites could otherwise leave the older set on disk.

Attempts-log records are group-committed: a record is durable before `log`
returns (it precedes the unit the caller checkpoints next), and the records
concurrent pieces hand in while a write is under way share the next write —
one local write, synced with its group-commit batch (ADR 0018), or one PUT of
the whole log on an object store (ADR 0009).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from taguru_ray.contract.names import TRACE, attempts_name, output_name
from taguru_ray.contract.records import Record
from taguru_ray.pipeline.parts import part_name
from taguru_ray.pipeline.segment_job import Resume
from taguru_ray.store.checkpoints import Checkpoint
from taguru_ray.store.journal import Journal
from taguru_ray.store.logs import AttemptsLog
from taguru_ray.store.outdir import OutDir

SidecarEmit = Callable[[list[Record]], None]


class StoreRecorder:
    def __init__(
        self,
        out: OutDir,
        source: str,
        *,
        journal: Journal,
        trace_attempts: bool,
        sidecar: SidecarEmit | None,
        sidecar_path: str | None,
    ) -> None:
        self._out = out
        self._source = source
        self._journal = journal  # the worker's: one per process (ADR 0044)
        self._sidecar = sidecar
        self.sidecar_path = sidecar_path
        self._checkpoint: Checkpoint | None = None
        self._log = AttemptsLog(out, f"{TRACE}/{attempts_name(source)}") if trace_attempts else None
        self._lock = asyncio.Lock()
        # The attempts log's group commit: records handed in, records durable.
        self._pending: list[Record] = []
        self._queued = 0
        self._durable = 0
        self._log_lock = asyncio.Lock()
        self._log_error: BaseException | None = None

    def load(self, fingerprint: dict[str, Any], *, discard: bool) -> tuple[Resume, str | None]:
        """The checkpoint's usable units and splits; `discard` (--force) starts from none.
        With the attempts log on, the checkpoint is its `checkpoint` records (ADR 0049)."""
        logged = self._log is not None
        self._checkpoint = Checkpoint(self._out, self._source, fingerprint, logged=logged)
        if discard:
            return Resume(), None
        note = self._checkpoint.load()
        checkpoint = self._checkpoint
        resume = Resume(dict(checkpoint.units), dict(checkpoint.splits), dict(checkpoint.overview))
        return resume, note

    def _ensure_checkpoint(self) -> Checkpoint:
        if self._checkpoint is None:
            raise RuntimeError("units saved before the checkpoint was loaded")
        return self._checkpoint

    async def begin(self, records: list[Record], *, fresh: bool) -> None:
        if self._log is None:
            return
        log = self._log

        def open_and_write() -> None:  # one batch entry, not two
            log.open(fresh=fresh)
            log.write_many(records)

        async with self._log_lock:
            try:
                await self._out.offload(open_and_write)
            except Exception as error:
                self._log_error = error  # later records would misstate what is on disk
                raise
            self._queued += len(records)
            self._durable += len(records)

    async def log(self, record: Record) -> None:
        if self._log is not None:
            await self._append(self._log, [record])

    async def _append(self, log: AttemptsLog, records: list[Record]) -> None:
        """Make `records` durable, together with any handed in while waiting for the lock."""
        self._pending.extend(records)
        self._queued += len(records)
        mine = self._queued
        async with self._log_lock:
            if self._log_error is not None:
                raise self._log_error
            if self._durable >= mine:
                return  # an earlier write carried them
            batch, self._pending = self._pending, []
            write = asyncio.ensure_future(self._out.offload(log.write_many, batch))
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                # The write goes on regardless: keep the lock until it is done, so
                # no later write overlaps it (an older whole-object PUT landing last).
                await asyncio.wait({write})
                raise
            except Exception as error:
                self._log_error = error  # later records would misstate what is on disk
                raise
            finally:
                if write.done() and not write.cancelled() and write.exception() is None:
                    self._durable += len(batch)

    async def sidecar(self, records: list[Record]) -> None:
        if self._sidecar is not None and records:
            self._sidecar(records)

    async def save_unit(self, piece_id: str, unit: Record) -> None:
        checkpoint = self._ensure_checkpoint()
        if self._log is not None:  # one record more in the log, not a file (ADR 0049)
            await self._append(self._log, [checkpoint.logged_unit(piece_id, unit)])
            return
        async with self._lock:
            await self._out.offload(checkpoint.save, piece_id, unit)

    async def save_split(self, piece_id: str, cap: int) -> None:
        checkpoint = self._ensure_checkpoint()
        if self._log is not None:
            await self._append(self._log, [checkpoint.logged_split(piece_id, cap)])
            return
        async with self._lock:
            await self._out.offload(checkpoint.save_split, piece_id, cap)

    async def save_overview(self, chunk_sha256: str, answer: str) -> None:
        checkpoint = self._ensure_checkpoint()
        if self._log is not None:
            await self._append(self._log, [checkpoint.logged_overview(chunk_sha256, answer)])
            return
        async with self._lock:
            await self._out.offload(checkpoint.save_overview, chunk_sha256, answer)

    async def bind_overview(self, digest: str, *, keep: bool) -> bool:
        checkpoint = self._ensure_checkpoint()
        if self._log is not None:
            stale, record = checkpoint.logged_binding(digest, keep=keep)
            if record is not None:
                await self._append(self._log, [record])
            return stale
        async with self._lock:
            return await self._out.offload(
                functools.partial(checkpoint.bind_overview, digest, keep=keep)
            )

    async def finish(
        self, source_file: bytes, trace: bytes, parts: tuple[bytes, ...] | None = None
    ) -> list[str]:
        """The source file and its trace; a document's `parts` (its files after the first)
        before the first, whose presence the manifest skip checks, and parts an earlier
        version of the document left removed after it."""
        name = output_name(self._source)
        for number, data in enumerate(parts or (), start=2):
            await self._out.offload(self._out.write, part_name(self._source, number), data)
        await self._out.offload(self._out.write, name, source_file)
        if parts is not None:
            await self._out.offload(self._drop_parts, len(parts) + 2)
        try:  # after the source file, which it describes
            await self._out.offload(self._out.write, f"{TRACE}/{name}", trace)
        except OSError as error:
            # The source file and the manifest are the truth; the trace is advisory.
            return [f"could not write the trace {TRACE}/{name}: {error}"]
        return []

    async def record(self, inputs: dict[str, Any], previous_output: str | None) -> None:
        # Manifest first, then the deletes and the checkpoint spent: a kill in between
        # costs nothing. Done here, not by the driver, so the single driver spends no CPU
        # on a segment's files.
        await self._out.offload(self._journal.write, self._source, inputs)
        moved = previous_output and previous_output != inputs["output"]
        checkpoint = self._checkpoint
        # A checkpoint file: the one this build writes with the attempts log off, or one
        # an earlier build left (read at load).
        file = checkpoint is None or not checkpoint.logged or checkpoint.file_found
        await self._out.offload(self._drop, previous_output if moved else None, file)
        if checkpoint is not None and checkpoint.holds and self.attempts_log_exists():
            assert self._log is not None
            await self._append(self._log, [checkpoint.settled_record()])

    def _drop_parts(self, number: int) -> None:
        """Part files from `number` on: what a longer earlier version of the document left."""
        while self._out.exists(stale := part_name(self._source, number)):
            self._out.delete(stale)
            number += 1

    def _drop(self, replaced: str | None, checkpoint_file: bool) -> None:
        if replaced:
            self._out.delete(replaced)
        if checkpoint_file:
            Checkpoint(self._out, self._source, {}).delete()

    def attempts_log_exists(self) -> bool:
        return self._log is not None and self._log.opened

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
