"""``taguru-ray verify OUT [--json FILE]``: would ``taguru import OUT`` take the folder whole?

Parsing and file access only; the judgment is `taguru_ray.tools.verify`. OUT is
an extract --out (any fsspec URL; its ``*.jsonl`` source files, in name order).
stdout: one line per problem, ``<file>: line <n>: <item>: <what>``, then a
summary line, and what ``.extract-retired/`` holds (the segments ``extract
--prune`` retired, which import retracts). Exit codes: 0 the folder imports
whole; 1 a problem was found, OUT holds no source file, or the report could not
be written; 2 a usage error or a missing OUT.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from taguru_ray.cli.args import OneLineParser, location, parse, write_report
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.retire import Retired, read_retired
from taguru_ray.tools.records import source_files
from taguru_ray.tools.verify import judge_retired, render_text, verify_files

PROG = "taguru-ray verify"
PREFIX = "taguru-ray: verify: "


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        label="verify",
        description="Check an out folder as `taguru import` of the whole folder would read it: "
        "every source file in name order parses, no alias rewires a name an earlier file "
        "settled on, every alias's canonical resolves, source ids are unique and every file "
        "targets the same context with the same create block.",
        allow_abbrev=False,
    )
    parser.add_argument("out", metavar="OUT", type=location,
                        help="an extract --out (a path or URL)")  # fmt: skip
    parser.add_argument(
        "--json", metavar="FILE", type=location,
        help="also write the report as JSON to FILE (- for stdout)",
    )  # fmt: skip
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    try:
        files = source_files(args.out)
        out = OutDir(args.out)
        retired = read_retired(out) if out.fs.isdir(out.root) else Retired()
    except FileNotFoundError as error:
        print(f"{PREFIX}{args.out}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"{PREFIX}{args.out}: cannot read it ({error})", file=sys.stderr)
        return EXIT_FAILED
    if not files and not retired.records and not retired.unfinished:
        print(f"{PREFIX}{args.out}: no source file (*.jsonl) to verify", file=sys.stderr)
        return EXIT_FAILED
    result = verify_files(files)
    judge_retired(result, files, retired)
    report = {"out": args.out, **result.to_json()}
    if args.json == "-":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result))
    if args.json and args.json != "-" and (problem := write_report(args.json, report)):
        print(f"{PREFIX}{problem}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if result.ok else EXIT_FAILED
