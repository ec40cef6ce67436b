"""The nightly quality gate after an extract: import, evaluate, compare with the last good run.

    python jobs/gate.py --sources s3://bucket/taguru/sources/ --context sake \\
        --eval eval/eval.jsonl --thresholds eval/thresholds.json \\
        (--url http://taguru:8248 | --store ctx/) \\
        [--last-good last-good/evaluation.json] [--artifacts artifacts/]

1. ``taguru-ray import SOURCES`` into the context: a Taguru server (``--url``), or
   an embedded store (``--store``, served in-process for the two steps after).
2. ``taguru-ray evaluate`` with the thresholds → ``ARTIFACTS/evaluation.json``.
3. With ``--last-good`` (the evaluation.json of the last run that passed — in CI,
   the artifact of the last green workflow run): ``taguru-ray evaluate compare``
   → ``ARTIFACTS/changes.jsonl``, so the report says which cases moved.
4. With ``--assembly``: both runs at one budget (``--max-items``, default the
   server's 40), the baseline truncated to it and a second run through ``POST
   …/evidence`` → ``ARTIFACTS/assembly.json``, compared with the baseline →
   ``ARTIFACTS/baseline-vs-assembly.jsonl``: which cases evidence assembly wins
   or loses at equal cost. The thresholds hold both runs.

Exit code is evaluate's (the baseline's, else the assembly run's): 0 passed, 3 a
threshold was violated (the corpus regressed: read the report), 1 the run itself
failed (import refused, server unreachable: retry), 2 a bad flag or input. The
compare steps never change it. Like `jobs/extract.py` it runs from a checkout or
as a `ray job submit` entrypoint, and says which code ran and how it ended.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

WORKING_DIR = Path(__file__).resolve().parents[1]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jobs/gate.py", description=__doc__.split("\n")[0])
    parser.add_argument("--sources", required=True, metavar="URL", help="the extract's --out")
    parser.add_argument("--context", required=True, metavar="NAME", help="the context to gate")
    parser.add_argument("--eval", required=True, metavar="FILE", help="eval.jsonl")
    parser.add_argument("--thresholds", metavar="FILE", help="the bounds (exit 3 when broken)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", metavar="URL", help="a Taguru server")
    target.add_argument("--store", metavar="DIR", help="an embedded context store")
    parser.add_argument("--last-good", metavar="FILE", help="the last passing evaluation.json")
    parser.add_argument("--artifacts", metavar="DIR", default="artifacts", help="(artifacts/)")
    parser.add_argument(
        "--assembly", action="store_true", help="also gate evidence assembly at the same budget"
    )
    parser.add_argument("--max-items", metavar="N", default="40", help="the budget (40)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(WORKING_DIR))

    import taguru_ray
    from taguru_ray.cli import main as verb
    from taguru_ray.serve.embedded import embedded_server

    print(
        f"taguru-ray {taguru_ray.__version__} from {Path(taguru_ray.__file__).parent}",
        file=sys.stderr,
        flush=True,
    )
    try:
        args = parse(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    artifacts = Path(args.artifacts)
    artifacts.mkdir(parents=True, exist_ok=True)
    evaluation = str(artifacts / "evaluation.json")

    target = ["--url", args.url] if args.url else ["--store", args.store, "--context", args.context]
    code = verb(["import", args.sources, *target])
    if code != 0:
        return _ended(1 if code == 1 else code, "import")

    server: AbstractContextManager[str] = (
        nullcontext(args.url) if args.url else embedded_server(args.store, os.environ)
    )
    assembly = str(artifacts / "assembly.json")
    with server as url:
        gate = ["--thresholds", args.thresholds] if args.thresholds else []
        run = ["evaluate", "--eval", args.eval, "--context", args.context, "--url", url, *gate]
        budget = ["--max-items", args.max_items] if args.assembly else []
        code = verb([*run, "--out", evaluation, *budget])
        if args.assembly and code in (0, 3):
            assembled = verb([*run, "--out", assembly, *budget, "--assembly"])
            if assembled in (0, 3):
                changes = str(artifacts / "baseline-vs-assembly.jsonl")
                verb(["evaluate", "compare", evaluation, assembly, "--out", changes])
            code = code or assembled
    if code in (0, 3) and args.last_good:
        if Path(args.last_good).exists():
            changes = str(artifacts / "changes.jsonl")
            verb(["evaluate", "compare", args.last_good, evaluation, "--out", changes])
        else:
            print(
                f"gate: no last good run at {args.last_good}: nothing to compare with",
                file=sys.stderr,
            )
    return _ended(code, "evaluate")


def _ended(code: int, step: str) -> int:
    print(f"taguru-ray gate exited {code} ({step})", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
