"""``taguru-ray metrics OUT [OUT ...] [--ledger FILE] [--compare OTHER_OUT] [--prices FILE]
[--parquet DIR]``.

Parsing and file access only; the fold is `taguru_ray.tools.metrics`, the
tables `taguru_ray.tools.metric_tables`. --parquet also writes
``requests.parquet`` (`taguru_ray.tools.request_table`): one row per completion
of the OUTs' attempts logs, numbers and names only. Exit codes: 0 the tables were
printed (a failed segment is a row, not an error); 1 an OUT holds no records,
or the Parquet files could not be written; 2 a usage error, a missing OUT or
a bad --prices or --ledger file.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from taguru_ray.cli.args import OneLineParser, location, parse
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, TaguruRayError, UsageError
from taguru_ray.pricing.table import Prices, load_prices
from taguru_ray.store.inputs import read_regular
from taguru_ray.tools.metric_tables import compare, tables
from taguru_ray.tools.metrics import Assignment, MetricsReport, load_ledger
from taguru_ray.tools.metrics_read import collect_urls, report_notes
from taguru_ray.tools.request_table import request_table
from taguru_ray.tools.tables import render_all, write_parquet

PROG = "taguru-ray metrics"
PREFIX = "taguru-ray: metrics: "
LEDGER_HELP = (
    'a JSON file assigning sources to a context and groups, {"sources": {"<source>": '
    '{"context": "<id>", "groups": ["nightly", "statutes"]}}}; without it each OUT is a group '
    "and each source's context is its header's"
)
PRICES_HELP = (
    'a JSON file of dollars per one million tokens per model, {"<model>": {"input": 0.15, '
    '"output": 0.6}}; the model is the one each run\'s settings record names'
)

PARQUET_HELP = (
    "also write one <table>.parquet per table, and requests.parquet: one row per completion "
    "of the OUTs' attempts logs (run_id, source, piece_id, stage, state, rung, tokens, "
    "elapsed_seconds, replayed, ...; never the messages or the answer)"
)


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        label="metrics",
        prog=PROG,
        description="Fold extract --out folders' trace and attempts logs into metric tables per "
        "segment, context, group and run (each extract invocation, and all of them): loss "
        "rates by reason, "
        "paragraph coverage, correction success, attempt states, ladder moves, label "
        "concentration, graph shape, time, tokens and money. Replayed completions are left out "
        "of every sum; failed segments are counted apart, their cost included.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "outs",
        nargs="+",
        metavar="OUT",
        type=location,
        help="an extract --out (a path or URL); several fold together, one group each",
    )
    parser.add_argument("--ledger", metavar="FILE", type=location, help=LEDGER_HELP)
    parser.add_argument("--compare", metavar="OTHER_OUT", type=location,
                        help="print this OUT minus OTHER_OUT")  # fmt: skip
    parser.add_argument("--prices", metavar="FILE", type=location, help=PRICES_HELP)
    parser.add_argument("--parquet", metavar="DIR", type=location, help=PARQUET_HELP)
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        prices = _prices(args.prices)
        ledger = _ledger(args.ledger)
        this = _collect(args.outs, prices, ledger)
        other = _collect([args.compare], prices, ledger) if args.compare else None
    except TaguruRayError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    priced = bool(prices.per_model)
    made = tables(this, priced)
    notes: list[str] = []
    if other is not None:
        table, notes = compare(this, other, priced)
        made.append(table)
    sys.stdout.write(render_all(made))
    for note in notes:
        print(note)
    if args.parquet:
        try:
            write_parquet([*made, request_table(this)], args.parquet)
        except OSError as error:
            print(f"{PREFIX}writing Parquet to {args.parquet}: {error}", file=sys.stderr)
            return EXIT_FAILED
    return EXIT_OK


def _prices(path: str | None) -> Prices:
    return load_prices(_flag_file("--prices", path), f"--prices {path}") if path else Prices()


def _ledger(path: str | None) -> dict[str, Assignment]:
    return load_ledger(_flag_file("--ledger", path), f"--ledger {path}") if path else {}


def _flag_file(flag: str, path: str) -> str:
    """A flag's file as text (a regular file only: a FIFO would hang the read)."""
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{flag} {path}: {error}") from None


def _collect(urls: list[str], prices: Prices, ledger: dict[str, Assignment]) -> MetricsReport:
    report = collect_urls(urls, prices, ledger)
    for note in report_notes(report):
        print(f"{PREFIX}{note}", file=sys.stderr)
    return report
