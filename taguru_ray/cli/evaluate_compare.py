"""``taguru-ray evaluate compare BASE HEAD [--out changes.jsonl]``.

Reads the two reports, calls `taguru_ray.evaluate.compare.compare`, writes its
lines atomically. Exit codes: 0 the comparison was written (whatever regressed:
the gate is ``evaluate --thresholds``, not this); 1 changes.jsonl could not be
written, and nothing of it was left behind; 2 a usage error, or BASE/HEAD
unreadable, not JSON, or not an evaluation.json this build reads. Every error
is one stderr line naming the file.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import fsspec

from taguru_ray.cli.args import OneLineParser, location
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from taguru_ray.evaluate.compare import EvaluationInputError, compare, load_json, render
from taguru_ray.store.publish import publish

LABEL = "evaluate compare"
PREFIX = f"taguru-ray: {LABEL}: "
DEFAULT_OUT = "changes.jsonl"
# Regressed cases named in the terminal summary before "… and N more".
SUMMARY_CASES = 10


def parser() -> OneLineParser:
    p = OneLineParser(
        prog=f"taguru-ray {LABEL}",
        label=LABEL,
        description="Classify every case whose outcome moved between two evaluation.json "
        "runs (improved, regressed, added, removed) into changes.jsonl. Latency never "
        "decides; a mismatched context, corpus revision, thresholds file or budget is a "
        "warning, never a refusal.",
    )
    p.add_argument("base", metavar="BASE", type=location,
                   help="the earlier evaluation.json (path or fsspec URL)")  # fmt: skip
    p.add_argument("head", metavar="HEAD", type=location,
                   help="the later evaluation.json (path or fsspec URL)")  # fmt: skip
    p.add_argument(
        "--out", default=DEFAULT_OUT, metavar="FILE", type=location,
        help=f"where to write (default {DEFAULT_OUT})",
    )  # fmt: skip
    return p


def main(argv: Sequence[str]) -> int:
    try:
        args = parser().parse_once(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        base, head = _load(args.base), _load(args.head)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lines = compare(base, head, args.base, args.head, generated_at=now)
    except EvaluationInputError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    for warning in lines[0].get("warnings", []):
        print(f"{PREFIX}warning: {warning}", file=sys.stderr)
    failure = _write(args.out, render(lines))
    if failure:
        print(f"{PREFIX}writing {failure}", file=sys.stderr)
        return EXIT_FAILED
    _summary(lines, args.out)
    return EXIT_OK


def _load(path: str) -> Any:
    try:
        with fsspec.open(path, "rb") as handle:
            raw = handle.read()
    except (OSError, ValueError) as error:  # fsspec raises ValueError for a bad URL
        why = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise EvaluationInputError(path, f"cannot read: {why}") from None
    return load_json(raw, path)


def _write(out: str, data: bytes) -> str | None:
    """None once `out` holds `data`; else what went wrong, naming the path."""
    try:
        fs, path = fsspec.core.url_to_fs(out)
        # A rename onto a directory would move the file into it: refuse that first.
        if fs.isdir(path):
            return f"{out}: is a directory"
        publish(out, data)
    except (OSError, ValueError) as error:
        return str(error)
    return None


def _summary(lines: list[dict[str, Any]], out: str) -> None:
    counts = lines[0]["counts"]
    print(
        f"evaluate compare: {counts['cases_base']} case(s) in base, {counts['cases_head']} in "
        f"head — {counts['improved']} improved, {counts['regressed']} regressed, "
        f"{counts['added']} added, {counts['removed']} removed, {counts['unchanged']} unchanged"
    )
    regressed = [line for line in lines[1:] if line["kind"] == "regressed"]
    for line in regressed[:SUMMARY_CASES]:
        drops = ", ".join(
            f"{m['metric']} {m['delta']:+.3f}"
            for m in line["metrics"]
            if m["direction"] == "regressed"
        )
        print(f"  regressed: {line['case_id']} ({drops})")
    if len(regressed) > SUMMARY_CASES:
        print(f"  … and {len(regressed) - SUMMARY_CASES} more regressed case(s)")
    print(f"  wrote {out}")
