"""The `SegmentRecorder` a worker uses: the segment's records on the --out store.

One recorder per segment and one segment per worker call, so no two
processes ever write the same file. Checkpoint rewrites are serialised per
segment: each one serialises every unit landed so far, and two racing
rewrites could otherwise leave the older set on disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from taguru_ray.contract.names import attempts_name, output_name
from taguru_ray.contract.records import Record
from taguru_ray.engine.segment import Resume
from taguru_ray.store.checkpoints import Checkpoint
from taguru_ray.store.logs import AttemptsLog
from taguru_ray.store.outdir import TRACE, OutDir

SidecarEmit = Callable[[list[Record]], None]


class StoreRecorder:
    def __init__(
        self,
        out: OutDir,
        source: str,
        *,
        trace_attempts: bool,
        sidecar: SidecarEmit | None,
        sidecar_path: str | None,
    ) -> None:
        self._out = out
        self._source = source
        self._sidecar = sidecar
        self.sidecar_path = sidecar_path
        self._checkpoint: Checkpoint | None = None
        self._log = AttemptsLog(out, f"{TRACE}/{attempts_name(source)}") if trace_attempts else None
        self._lock = asyncio.Lock()

    def load(self, fingerprint: dict[str, Any], *, discard: bool) -> tuple[Resume, str | None]:
        """The checkpoint's usable units and splits; `discard` (--force) starts from none."""
        self._checkpoint = Checkpoint(self._out, self._source, fingerprint)
        if discard:
            return Resume(), None
        note = self._checkpoint.load()
        return Resume(dict(self._checkpoint.units), dict(self._checkpoint.splits)), note

    def _ensure_checkpoint(self) -> Checkpoint:
        if self._checkpoint is None:
            raise RuntimeError("units saved before the checkpoint was loaded")
        return self._checkpoint

    async def begin(self, records: list[Record], *, fresh: bool) -> None:
        if self._log is None:
            return
        self._log.open(fresh=fresh)
        for record in records:
            self._log.write(record)

    async def log(self, record: Record) -> None:
        if self._log is not None:
            self._log.write(record)

    async def sidecar(self, records: list[Record]) -> None:
        if self._sidecar is not None and records:
            self._sidecar(records)

    async def save_unit(self, piece_id: str, unit: Record) -> None:
        checkpoint = self._ensure_checkpoint()
        async with self._lock:
            await asyncio.to_thread(checkpoint.save, piece_id, unit)

    async def save_split(self, piece_id: str, cap: int) -> None:
        checkpoint = self._ensure_checkpoint()
        async with self._lock:
            await asyncio.to_thread(checkpoint.save_split, piece_id, cap)

    async def finish(self, source_file: bytes, trace: bytes) -> list[str]:
        name = output_name(self._source)
        await asyncio.to_thread(self._out.write, name, source_file)
        try:
            await asyncio.to_thread(self._out.write, f"{TRACE}/{name}", trace)
        except OSError as error:
            # The source file and the manifest are the truth; the trace is advisory.
            return [f"could not write the trace {TRACE}/{name}: {error}"]
        return []

    def attempts_log_exists(self) -> bool:
        return self._log is not None and self._out.exists(self._log.name)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
