"""``taguru-ray inspect ATTEMPTS_LOG [--piece ID] [--paragraph N] [--json]``.

Parsing and file reading only; the report is `taguru_ray.tools.inspect`.
Exit codes: 0 the log was read (a filter matching nothing is said, not
failed); 1 the file holds no attempts-log record at all; 2 a usage error or
a log that does not exist (named).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence

from taguru_ray.cli.args import OneLineParser, location, parse
from taguru_ray.contract.names import INSPECT_VERB as VERB
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from taguru_ray.tools.inspect import Filter, build_report
from taguru_ray.tools.inspect_text import render_text
from taguru_ray.tools.locators import paragraph_locators, trace_beside
from taguru_ray.tools.records import read_file, read_lines

PREFIX = f"{VERB.replace(' ', ': ')}: "


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=VERB,
        label=VERB.removeprefix("taguru-ray "),
        description="Read one segment's attempts log (<out>/.extract-trace/<stem>.attempts.jsonl)"
        ": one line per completion in issue order, the ladder's moves, a tally, and the piece "
        "to open next. --piece/--paragraph print those attempts with the piece as sent, the "
        "corrective ask and the answer.",
        allow_abbrev=False,
    )
    parser.add_argument("log", metavar="ATTEMPTS_LOG", type=location,
                        help="the attempts log (a path or URL)")  # fmt: skip
    narrow = parser.add_mutually_exclusive_group()
    narrow.add_argument("--piece", metavar="ID", help="the piece id, or any prefix of it")
    narrow.add_argument(
        "--paragraph", metavar="N", type=_paragraph, help="every piece whose paragraphs span [N]"
    )
    parser.add_argument("--json", action="store_true", help="render the report as JSON")
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        data = read_file(args.log)
    except OSError as error:
        print(f"{PREFIX}{args.log}: {error}", file=sys.stderr)
        return EXIT_USAGE
    piece = args.piece.strip().lower() if args.piece is not None else None
    report = build_report(args.log, read_lines(data), Filter(piece, args.paragraph))
    trace = trace_beside(args.log)
    if trace is not None:  # a document's: its pages, slides or headings (ADR 0078)
        # No trace (a failed segment): the attempts are shown without them.
        with contextlib.suppress(OSError):
            report.locators = paragraph_locators(read_lines(read_file(trace)).records)
    if not report.is_attempts_log:
        print(
            f"{PREFIX}{args.log}: not an attempts log — no settings, attempt or move record in it",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.json:
        rendered = json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n"
    else:
        rendered = render_text(report)
    return _write(rendered)


def _write(text: str) -> int:
    """Print; a reader closing the pipe early (``| head``) is its choice, not a failure."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
    return EXIT_OK


def _paragraph(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"needs a paragraph index (0 or more), got {text!r}")
    return int(text)
