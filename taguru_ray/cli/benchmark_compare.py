"""``taguru-ray benchmark compare [--with-text] RESULTS_DIR``.

Parsing only, then `taguru_ray.benchmark.compare.compare`. Exactly one
positional; ``--with-text`` may appear anywhere; any other ``--flag`` is a
usage error. Exit codes: 0 the artifacts were written; 1 a runtime failure
(missing or unsupported manifest, an unreadable runs file, a --with-text
refusal, a write failure) — one stderr line naming the file or cell; 2 a
usage error. ``--help``/``-h`` prints the usage on stdout and exits 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from taguru_ray.benchmark.compare import compute, publish
from taguru_ray.benchmark.compare.wide import render_wide_text
from taguru_ray.cli.args import OneLineParser, usage_parser
from taguru_ray.contract.settings.values import location
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TaguruRayError, prefix

PREFIX = prefix("benchmark compare")

USAGE = """\
usage: taguru-ray benchmark compare [--with-text] RESULTS_DIR

Reads a results directory `taguru-ray benchmark extract` wrote (manifest.json,
runs/*.jsonl, the batches under cells/) and writes, from that one read:

  differences.jsonl     every association each pair of models shares or
                        extracts differently, segment by segment
  measurements.json     distributions, rates and counts per cell, model, GPU
                        and segment, each metric defined inside the file
  measurements.csv      the same values as one flat table
  measurements-wide.csv one row per cell: model, GPU, completions/s, output
                        tokens/s, p50/p99 latency, cost per 1M output tokens,
                        bound — the table compare also prints on stdout
  measurements.parquet  that table as Parquet
  measurements.png      throughput against latency per cell (a marker per GPU
                        label), volume and run-to-run stability per model

A pure function of RESULTS_DIR: no model, no network. Nothing is ranked and no
single score is computed. Re-running overwrites the artifacts with a fresh
computation; on a failure none is left half-written. The same directory gives
the same bytes (generated_at is the results' own time, not the clock).

  RESULTS_DIR   a local path or an fsspec URL (s3://bucket/results)
  --with-text   put each differences locator's paragraph text in the record,
                read from the pinned corpus files; a file that is unreadable
                or no longer matches its manifest sha256 is an error
  -h, --help    show this help
"""


def parser() -> OneLineParser:
    """USAGE's flags as argparse holds them, for shell completion (never parses)."""
    return usage_parser("benchmark compare", USAGE)


class _Usage(Exception):
    """A usage error: the message, printed with the --help hint, exit 2."""


def parse_args(argv: Sequence[str]) -> tuple[str, bool] | None:
    """(RESULTS_DIR, with_text), or None when --help was asked for."""
    results_dir: str | None = None
    with_text = False
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if arg == "--with-text":
            with_text = True
        elif arg.startswith("--"):
            raise _Usage(f"unknown flag '{arg}'")
        elif results_dir is not None:
            raise _Usage("takes exactly one RESULTS_DIR argument")
        else:
            results_dir = arg
    if results_dir is None:
        raise _Usage("requires a RESULTS_DIR argument")
    try:
        location(results_dir)  # a protocol nobody knows, a driver not installed: usage
    except ValueError as error:
        raise _Usage(str(error)) from None
    return results_dir, with_text


def main(argv: Sequence[str]) -> int:
    try:
        parsed = parse_args(argv)
    except _Usage as error:
        print(
            f"taguru-ray: benchmark compare: {error} — try 'taguru-ray benchmark compare --help'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if parsed is None:
        sys.stdout.write(USAGE)
        return EXIT_OK
    results_dir, with_text = parsed

    def warn(message: str) -> None:
        print(f"{PREFIX}{message}", file=sys.stderr)

    try:
        computed = compute(results_dir, with_text=with_text, warn=warn)
        publish(results_dir, computed)
    except TaguruRayError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:  # the directory itself unreachable: still one clear line
        print(f"{PREFIX}{results_dir}: {error}", file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.write(render_wide_text(computed.wide()))
    return EXIT_OK
