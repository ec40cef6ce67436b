"""``taguru-ray anchoring OUT [OUT ...] [--json report.json] [--list N]``.

Parsing and file access only; the judgment is `taguru_ray.tools.anchoring`.
An OUT is an extract --out (any fsspec URL; its ``*.jsonl`` source files,
non-recursive, so ``.extract-trace/`` is never read) or one source file.
Exit codes: 0 every source file judged or skipped; 1 some file refused (named,
counted under failed, the report still written whole), no source file at
all, or the report could not be written; 2 a usage error or a missing OUT.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from taguru_ray.cli.args import OneLineParser, location, parse, write_report
from taguru_ray.contract.names import join
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from taguru_ray.tools.anchoring import judge_files, render_text
from taguru_ray.tools.records import source_files

PROG = "taguru-ray anchoring"
PREFIX = "taguru-ray: anchoring: "
DEFAULT_LIST = 3


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        label="anchoring",
        description="Judge written source files against their own passage text: the strict "
        "and alias-group anchoring rates (subject and object in the cited paragraph, else the "
        "whole passage) and locator validity, per source file and overall. Read the strict rate "
        "within one segment type: a table whose rows never repeat the title's name scores low "
        "however faithful it is.",
        allow_abbrev=False,
    )
    parser.add_argument("outs", nargs="+", metavar="OUT", type=location,
                        help="an extract --out, or a source file")  # fmt: skip
    parser.add_argument(
        "--json", metavar="FILE", type=location,
        help="write the report, every listed association included",
    )  # fmt: skip
    parser.add_argument(
        "--list",
        metavar="N",
        type=_count,
        default=DEFAULT_LIST,
        help="associations not strictly anchored to print per source file "
        f"(default {DEFAULT_LIST}, 0 none)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    files: dict[str, bytes] = {}
    for out in args.outs:
        try:
            files.update(_source_files(out))
        except FileNotFoundError as error:
            print(f"{PREFIX}{out}: {error}", file=sys.stderr)
            return EXIT_USAGE
    if not files:
        print(f"{PREFIX}no source file (*.jsonl) in {', '.join(args.outs)}", file=sys.stderr)
        return EXIT_FAILED
    report = judge_files(files)
    for error in report.failed.values():
        print(f"{PREFIX}{error} — counted under failed, skipped", file=sys.stderr)
    for name in report.skipped:
        print(f"{PREFIX}{name}: no passage (--no-passage) — skipped", file=sys.stderr)
    sys.stdout.write(render_text(report, args.list))
    if args.json and (problem := write_report(args.json, report.to_json())):
        print(f"{PREFIX}{problem}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if report.failed else EXIT_OK


def _source_files(out: str) -> dict[str, bytes]:
    """Path -> bytes, paths spelled from OUT as given, so two OUTs holding the same file
    name stay apart."""
    found = source_files(out)
    return {name if name == out else join(out, name): data for name, data in found.items()}


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"needs a count (0 or more), got {text!r}")
    return int(text)
