"""``taguru-ray report``: one self-contained HTML page for extract runs or a benchmark.

`reading` folds the records with the readers `metrics` and `benchmark compare` use;
`segments` reads each segment's items and losses (`segments_page` draws them, ADR 0076);
`figures` draws inline SVG from numbers; `page` lays the sections out. The page
holds everything it shows — no script, no stylesheet or font from a URL — so it
opens offline and can be mailed as one file.
"""

from __future__ import annotations

from collections.abc import Sequence

from taguru_ray.errors import UsageError
from taguru_ray.pricing.table import Prices
from taguru_ray.report.page import render
from taguru_ray.report.reading import ReportData, is_benchmark, read_benchmark, read_outs

__all__ = ["ReportData", "build_report", "render"]


def build_report(
    outs: Sequence[str], prices: Prices | None = None, diagnostics: Sequence[str] = ()
) -> str:
    """The page for extract --outs, or for one benchmark results directory."""
    benchmarks = [url for url in outs if is_benchmark(url)]
    if benchmarks:
        if len(outs) > 1:
            raise UsageError("a benchmark results directory is reported alone")
        return render(read_benchmark(benchmarks[0]))
    return render(read_outs(outs, prices or Prices(), diagnostics))
