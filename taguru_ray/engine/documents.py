"""A worker's document conversions (ADR 0078): the text kept in --out first, then the
worker's converter child (`engine/converter.py`), its result kept for the next run.

The driver never converts: it hashes a document's bytes and sends them; the
`Convert` effect of the segment's program lands here, on the segment worker.
"""

from __future__ import annotations

import asyncio
import contextlib

from taguru_ray.documents.converted import Converted, DocumentRefused
from taguru_ray.engine.converter import Converter
from taguru_ray.pipeline.effects import Convert
from taguru_ray.pipeline.read import Segment, SegmentRefused, read_document
from taguru_ray.settings import Settings
from taguru_ray.store import converted as kept
from taguru_ray.store.outdir import OutDir


class Documents:
    def __init__(self, out: OutDir | None, converter: Converter) -> None:
        self._out = out
        self._converter = converter
        self.converted = 0  # documents this process converted (not found in --out)
        # One document at a time goes to the child: the others wait here, on the event
        # loop, not each in a thread of the worker's default pool, blocked on its lock.
        self._turn: asyncio.Lock | None = None

    @classmethod
    def of(cls, settings: Settings, out: OutDir | None) -> Documents:
        reading = settings.input
        return cls(out, Converter(reading.convert_timeout, reading.convert_memory << 20))

    async def convert(self, effect: Convert) -> Converted | str:
        """The document's paragraphs, or the one line saying why it has none."""
        out = self._out
        if effect.keep and out is not None:
            found = await out.offload(kept.load, out, effect.converter, effect.digest)
            if found is not None:
                return found
        kind = effect.converter.split(":", 1)[0]
        if self._turn is None:
            self._turn = asyncio.Lock()
        try:
            async with self._turn:
                converted = await asyncio.to_thread(self._converter.convert, kind, effect.data)
        except DocumentRefused as refused:
            return str(refused)
        self.converted += 1
        if effect.keep and out is not None:
            # A cache: the segment goes on without it; the next run converts again.
            with contextlib.suppress(OSError):
                await out.offload(kept.save, out, effect.converter, effect.digest, converted)
        return converted

    def close(self) -> None:
        self._converter.close()


class DryDocuments:
    """--dry-run's conversions, in the driver (a dry run plans; it runs no worker): the text
    kept in --out when there is some, else a converter child made at the first document.
    Nothing is written."""

    def __init__(self, settings: Settings, out: OutDir) -> None:
        self._settings = settings
        self._out = out
        self._converter: Converter | None = None

    def read(self, converter: str, data: bytes, digest: str, source: str) -> Segment:
        """The document as its segment; `SegmentRefused` saying why it has none."""
        found = None
        if not self._settings.input.redact:
            with contextlib.suppress(OSError):
                found = kept.load(self._out, converter, digest)
        if found is None:
            if self._converter is None:
                reading = self._settings.input
                self._converter = Converter(reading.convert_timeout, reading.convert_memory << 20)
            try:
                found = self._converter.convert(converter.split(":", 1)[0], data)
            except DocumentRefused as refused:
                raise SegmentRefused(str(refused)) from None
        return read_document(source, found, digest)

    def close(self) -> None:
        if self._converter is not None:
            self._converter.close()
