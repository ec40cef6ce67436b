"""``taguru-ray report OUT [OUT ...] [--html FILE] [--diagnostics FILE] [--prices FILE]``.

Parsing and file access only; the page is `taguru_ray.report`. Exit codes: 0 the
page was written; 1 an OUT holds no records, or the page could not be written;
2 a usage error, a missing OUT or a bad --prices file.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import fsspec

from taguru_ray.cli.args import OneLineParser, location, parse
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, TaguruRayError, UsageError
from taguru_ray.pricing.table import Prices, bundled, load_prices
from taguru_ray.report import build_report
from taguru_ray.store.inputs import read_regular

PROG = "taguru-ray report"
PREFIX = "taguru-ray: report: "
DEFAULT_HTML = "report.html"


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        label="report",
        prog=PROG,
        description="Write one self-contained HTML page (inline SVG figures, no script, no "
        "URL: it opens offline) for extract --out folders or a benchmark extract results "
        "directory: throughput and in flight, latency, tokens and cost, what bounded the "
        "run, failures and removals by kind, ladder moves, the slowest and costliest "
        "segments; and the segments themselves — each paragraph beside what was extracted "
        "from it and what was removed and why (a document's paragraph with its page, slide "
        "or heading), label and concept counts, names under two spellings (a sample past "
        "300 segments), and a document run's facts by page, slide or heading.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "outs",
        nargs="+",
        metavar="OUT",
        type=location,
        help="an extract --out (a path or URL), several for a section each, or one "
        "benchmark extract results directory (manifest.json, runs/)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        type=location,
        default=DEFAULT_HTML,
        help=f"where to write the page (a path or URL; default {DEFAULT_HTML})",
    )
    parser.add_argument(
        "--diagnostics",
        metavar="FILE",
        type=location,
        action="append",
        default=[],
        help="a run's --diagnostics-out sidecar, for what bounded it (its gateway record); "
        "repeat for several runs",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        type=location,
        help='a JSON file of dollars per one million tokens per model, {"<model>": '
        '{"input": 0.15, "output": 0.6}}; default the bundled price table',
    )
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        page = build_report(args.outs, _prices(args.prices), args.diagnostics)
    except TaguruRayError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_FAILED
    try:
        with fsspec.open(args.html, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as error:
        print(f"{PREFIX}writing {args.html}: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{PREFIX}wrote {args.html}", file=sys.stderr)
    return EXIT_OK


def _prices(path: str | None) -> Prices:
    if not path:
        return bundled()
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--prices {path}: {error}") from None
    return load_prices(text, f"--prices {path}")
