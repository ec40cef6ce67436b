"""Which segments a run skips, and how a skip or a refusal is settled.

A segment is skipped when the manifest holds an entry for it with the same
compute inputs and its source file is in --out (`Manifest.unchanged`); never
with --force, nor under replay or --resume-from, which read no manifest. A skip
writes nothing: a line, a bit in the summary, the window told. With --coverage a
skipped segment's gaps are judged from the file it already has. A segment the
scan refused (unreadable, not UTF-8, a source id an earlier segment writes, a
path --redact would mask) fails here, named, before any worker sees it.

Both the early settling (`engine/reading.py`, on a thread, while Ray starts) and
the dispatch loop settle segments through this part, one after the other, never
at once.
"""

from __future__ import annotations

from collections.abc import Container

from taguru_ray.engine.scan import Scanned, Tally, existing_gaps, skip_line
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.summary import SegmentRow, Summary
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.settings import Settings
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir


class Skipping:
    def __init__(
        self,
        settings: Settings,
        out: OutDir,
        inputs: RunInputs,
        window: SegmentWindow,
        summary: Summary,
        tally: Tally,
    ) -> None:
        self.skippable = not settings.run.force and not settings.records.bypasses_store
        self.coverage = settings.records.coverage
        self.manifest = Manifest(out, {})  # replaced by the loaded one before any skip
        self._existing: Container[str] = ()  # the --out listing, once loaded
        self._out = out
        self._inputs = inputs
        self._window = window
        self._summary = summary
        self._tally = tally

    def take(self, manifest: Manifest, existing: Container[str]) -> None:
        """The loaded manifest and --out listing, which every later judgement uses."""
        self.manifest = manifest
        self._existing = existing

    def unchanged(self, scanned: Scanned) -> bool:
        # An unread segment was judged unchanged on its batch's thread (`Reading.start`).
        return scanned.unread or self.unchanged_by(scanned, (self.manifest, self._existing))

    def unchanged_by(self, scanned: Scanned, held: tuple[Manifest, Container[str]]) -> bool:
        """Unchanged by the manifest and listing `held` (a batch thread's, before `take`)."""
        manifest, existing = held
        return (
            self.skippable
            and scanned.inputs is not None
            and manifest.unchanged(scanned.source, scanned.inputs, existing)
        )

    def gaps(self, scanned: Scanned) -> list[str]:
        """--coverage over a skipped segment, judged from the file it already has."""
        if not self.coverage or scanned.inputs is None or scanned.data is None:
            return []
        return existing_gaps(
            self._out,
            scanned.inputs["output"],
            scanned.source,
            scanned.data,
            self._inputs.redaction,
            self._inputs.redact_key,
            document=scanned.inputs.get("converter") is not None,
        )

    def skip(self, scanned: Scanned, gaps: list[str]) -> None:
        self._tally.reached = scanned.index + 1
        self._tally.unchanged += 1
        lines = [("out", skip_line(scanned.source))]
        lines.extend(("err", line) for line in gaps)
        self._summary.skipped(scanned.index, lines)
        self._window.skipped(scanned.index)

    def refuse(self, scanned: Scanned) -> None:
        why = scanned.refusal or "unreadable"
        self._tally.reached = scanned.index + 1
        self._tally.failed += 1
        self._summary.ended(
            scanned.index,
            SegmentRow(scanned.source, "failed", None, (why,)),
            [("err", f"{FAILURE_PREFIX}{scanned.source}: {why}")],
        )
        self._window.refused(scanned.index)
