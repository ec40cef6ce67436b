"""``taguru-ray evaluate``: the retrieval and citation quality gate (seed 003).

    taguru-ray evaluate --eval eval.jsonl --context NAME [--url URL] [--config FILE]
        [--out evaluation.json] [--thresholds FILE] [--assembly]
        [--max-items N] [--max-bytes N] [--max-tokens N] [--rerank MODEL]
    taguru-ray evaluate compare BASE HEAD [--out changes.jsonl]

A leading ``--flag`` selects the run mode, a leading bare word a subcommand
(only ``compare``). Everything a user can get wrong — flags, the eval file, the
thresholds file, the address — is checked before the first request. Exit codes:
0 completed (report-only without ``--thresholds``, which stderr says) or every
threshold held; 1 the run itself failed (unreachable server, an unreadable
answer, the artifact not written): retry; 2 a bad flag, eval or thresholds file,
address or context: fix it; 3 completed with a threshold violated: read the report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence

import fsspec

from taguru_ray.cli.args import OneLineParser, location
from taguru_ray.errors import EXIT_FAILED, EXIT_USAGE, UsageError
from taguru_ray.evalset import EvalSet, EvalSetError, Mode, limit_problem, load
from taguru_ray.evaluate.budget import Limits
from taguru_ray.evaluate.lanes import AssemblyUnavailable
from taguru_ray.evaluate.run import EXIT_REGRESSED, Request, RunFailed, evaluate
from taguru_ray.evaluate.thresholds import Thresholds, ThresholdsError, parse_thresholds
from taguru_ray.remote.address import AddressError, base_url, mask_url
from taguru_ray.remote.client import TaguruClient
from taguru_ray.store.config_file import read_config_file
from taguru_ray.store.publish import publish

PREFIX = "taguru-ray: evaluate: "
CONFIG_VARIABLE = "TAGURU_CONFIG"  # what --config defaults to, as for every verb


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="taguru-ray evaluate",
        label="evaluate",
        description="Gate a populated Taguru context on a labeled question set: passage, "
        "structural and citation lanes, metrics, and thresholds (exit 3 on a violation).",
        allow_abbrev=False,
    )
    parser.add_argument("--eval", metavar="FILE", required=True, type=location,
                        help="the eval.jsonl dataset")  # fmt: skip
    parser.add_argument("--context", metavar="NAME", required=True, help="the context to query")
    parser.add_argument(
        "--url", metavar="URL", help="the server (default: TAGURU_ADDR, else 127.0.0.1:8248)"
    )
    parser.add_argument(
        "--config", metavar="FILE", type=location,
        help="KEY=VALUE variables read before resolving the server",
    )
    parser.add_argument(
        "--out", metavar="FILE", default="evaluation.json", type=location,
        help="the artifact (evaluation.json)",
    )
    parser.add_argument("--thresholds", metavar="FILE", type=location,
                        help="regression bounds; exit 3 if broken")  # fmt: skip
    parser.add_argument(
        "--assembly", action="store_true", help="use POST …/evidence for the passage lane"
    )
    for flag, what in (("items", "items"), ("bytes", "bytes"), ("tokens", "estimated tokens")):
        parser.add_argument(
            f"--max-{flag}", metavar="N", type=int, help=f"equal-budget ceiling on {what}"
        )
    parser.add_argument("--rerank", metavar="MODEL", help="a reranker (with --assembly only)")
    return parser


def main(argv: Sequence[str]) -> int:
    if argv and argv[0] == "compare":
        from taguru_ray.cli.evaluate_compare import main as compare_main

        return compare_main(list(argv[1:]))
    if argv and not argv[0].startswith("-"):
        print(
            f"{PREFIX}unknown subcommand {argv[0]!r} (only 'compare'); the run mode starts "
            "with a flag — try 'taguru-ray evaluate --help'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        args = build_parser().parse_once(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        request = _request(args, os.environ)
    except (UsageError, AddressError, EvalSetError, ThresholdsError) as error:
        for line in str(error).splitlines():
            print(f"{PREFIX}{line}", file=sys.stderr)
        return EXIT_USAGE
    client = TaguruClient(request.base, request.token)
    try:
        outcome = evaluate(request, client, _now)
    except RunFailed as failure:
        print(f"{PREFIX}{failure.message}", file=sys.stderr)
        return failure.code
    except AssemblyUnavailable as error:
        print(
            f"{PREFIX}--assembly: the server at {mask_url(request.base)} does not implement "
            f"evidence assembly ({error}) — run without --assembly",
            file=sys.stderr,
        )
        return EXIT_USAGE
    body = json.dumps(outcome.artifact, ensure_ascii=False, indent=2) + "\n"
    try:
        publish(request.out, body.encode("utf-8"))
    except OSError as error:
        print(f"{PREFIX}writing {error} — nothing was written", file=sys.stderr)
        return EXIT_FAILED
    _report(outcome.artifact, request.out)
    return outcome.exit_code


def _request(args: argparse.Namespace, environ: Mapping[str, str]) -> Request:
    problems = []
    if args.rerank is not None and not args.assembly:
        problems.append("--rerank needs --assembly (only evidence assembly reranks)")
    for flag in ("max_items", "max_bytes", "max_tokens"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            problems.append(f"--{flag.replace('_', '-')} must be a positive number, not {value}")
    if problems:
        raise UsageError("\n".join(problems))
    evalset = load(args.eval, Mode.INTERPRET)
    limits = [problem for case in evalset.cases if (problem := limit_problem(case))]
    if limits:
        raise UsageError("\n".join(f"{args.eval}: {problem}" for problem in limits))
    thresholds = _thresholds(args.thresholds, evalset) if args.thresholds else None
    config_path = args.config or environ.get(CONFIG_VARIABLE)
    config = read_config_file(config_path) if config_path else {}
    base = base_url(args.url, environ, config)
    token = TaguruClient.from_environment(base, {**config, **environ}).token
    budget_given = any(v is not None for v in (args.max_items, args.max_bytes, args.max_tokens))
    budget = (
        Limits.resolve(args.max_items, args.max_bytes, args.max_tokens)
        if budget_given or args.assembly
        else None
    )
    return Request(
        args.eval,
        evalset,
        args.context,
        base,
        args.out,
        thresholds,
        args.assembly,
        budget,
        args.rerank,
        token,
    )


def _thresholds(path: str, evalset: EvalSet) -> Thresholds:
    try:
        with fsspec.open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise UsageError(f"--thresholds {path}: cannot read it ({error})") from None
    return parse_thresholds(raw, path, [case.case_id for case in evalset.cases])


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _report(artifact: Mapping, out: str) -> None:
    """One stdout line of what ran and where it went; violations and report-only on stderr."""
    cases = artifact["cases"]
    metrics = artifact["metrics"]

    def mean(name: str) -> str:
        value = (metrics.get(name) or {}).get("mean")
        return "n/a" if value is None else f"{value:.3f}"

    print(
        f"evaluated {len(cases)} cases against context '{artifact['inputs']['context']}' at "
        f"{artifact['inputs']['url']}: recall@k {mean('recall.recall_at_k')}, mrr "
        f"{mean('recall.mrr')}, citation recall {mean('citations.recall')}; "
        f"corpus {'stable' if artifact['corpus']['stable'] else 'CHANGED during the run'}; "
        f"wrote {out}"
    )
    block = artifact["thresholds"]
    if block is None:
        print(
            f"{PREFIX}report-only: no --thresholds given, so this run passes whatever its "
            "metrics say",
            file=sys.stderr,
        )
        return
    for violation in block.get("violations", ()):
        where = violation.get("case_id") or violation["scope"]
        print(
            f"{PREFIX}violated: {where}: {violation['metric']}: {violation['reason']}",
            file=sys.stderr,
        )
    if not block["passed"]:
        print(
            f"{PREFIX}{len(block.get('violations', ()))} threshold(s) violated "
            f"(exit {EXIT_REGRESSED})",
            file=sys.stderr,
        )
