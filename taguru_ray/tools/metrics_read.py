"""The OUTs ``taguru-ray metrics`` and ``taguru_ray.metrics`` fold: paths or URLs checked,
collected, and the notes said about them — one reading for the CLI and the Python API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from taguru_ray.contract.names import TRACE
from taguru_ray.errors import TaguruRayError, UsageError
from taguru_ray.pricing.table import Prices
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.metrics import Assignment, MetricsReport, collect
from taguru_ray.tools.records import unreadable_note


class NoRecords(TaguruRayError):
    """An OUT with no trace or attempts log: nothing to fold."""


def collect_urls(
    urls: Sequence[str], prices: Prices, ledger: Mapping[str, Assignment] | None = None
) -> MetricsReport:
    """`collect` over OUTs given as paths or URLs: `UsageError` for one that is no folder,
    `NoRecords` for one that holds no record."""
    outs = []
    for url in urls:
        out = OutDir(url)
        if not out.fs.isdir(out.root):
            raise UsageError(f"{url}: no such folder")
        outs.append(out)
    report = collect(outs, prices, ledger)
    held = {scope.out for scope in report.segments}
    for out in outs:
        if out.url not in held:
            raise NoRecords(
                f"{out.url}: no records — expected {TRACE}/<stem>.jsonl or .attempts.jsonl"
            )
    return report


def report_notes(report: MetricsReport) -> list[str]:
    """What a reader says of the records it folded: unreadable lines skipped, and each
    model --prices has no price for (its cost is None)."""
    notes = []
    for scope in report.segments:
        files = scope.segment
        if files is None:
            continue
        for suffix, lines in ((".jsonl", files.trace), (".attempts.jsonl", files.attempts)):
            note = unreadable_note(f"{TRACE}/{files.stem}{suffix}", lines) if lines else None
            if note:
                notes.append(f"{scope.out}: {note}")
    for model in sorted(report.run.fold.unpriced_models):
        notes.append(f"{report.out}: no price for model {model!r} — its cost shows as -")
    return notes
