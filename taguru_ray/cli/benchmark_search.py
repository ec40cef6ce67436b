"""``taguru-ray benchmark search --eval FILE [--url URL | --store DIR] … RESULTS_DIR``.

Parsing only, then `taguru_ray.benchmark.search.run_search`. The flags are the
reference's (BENCHMARK.md §3): ``--eval``, ``--url``, ``--config`` and
``--context-prefix`` may be given once; ``--run`` is last-wins, as the reference
reads it; exactly one RESULTS_DIR; any other ``--flag`` is a usage error.
``--store DIR`` is this build's own: the corpora live in an embedded store folder
served in-process for the run, instead of a server at ``--url``.

Exit codes: 0 retrieval.json written; 1 the server unreachable, no corpus
searchable, or the artifact not written; 2 a usage error (flags, the eval file, a
case limit, the results directory, ``--run``, a corpus name, ``--config``, the
address). ``--help``/``-h`` prints the usage on stdout and exits 0.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from taguru_ray.benchmark.search import Request, run_search
from taguru_ray.cli.args import OneLineParser, usage_flags, usage_parser
from taguru_ray.contract.settings.values import location
from taguru_ray.errors import EXIT_OK, EXIT_USAGE, TaguruRayError

PREFIX = "taguru-ray: benchmark search: "

USAGE = """\
usage: taguru-ray benchmark search --eval FILE [--url URL | --store DIR] [--config FILE]
                                   [--run N] [--context-prefix NAME] [--skip-import]
                                   RESULTS_DIR

Builds one corpus context per model, PREFIX::MODEL_ID, from the batch files of one
run of a `taguru-ray benchmark extract` results directory, searches every corpus
with the same eval.jsonl questions (POST /contexts/{name}/sources/search), and
writes RESULTS_DIR/retrieval.json: per case and model the hits, their lanes and,
when the case expects sources or concepts, recall@k and MRR; per model pair how
much their hits overlap. Differences only: nothing is ranked.

  RESULTS_DIR            a directory benchmark extract wrote (a path or fsspec URL)
  --eval FILE            the eval.jsonl questions (fields only evaluate reads ride
                         through unread, with one warning)
  --url URL              the Taguru server to import into and search (default:
                         TAGURU_ADDR, else 127.0.0.1:8248); bearer from
                         TAGURU_API_TOKEN, else the first of TAGURU_API_TOKENS
  --store DIR            instead of --url: build and search the corpora in an
                         embedded store folder (created if missing), served
                         in-process for the run
  --config FILE          KEY=VALUE variables read before resolving the server
                         (default: $TAGURU_CONFIG)
  --run N                which run's cells to import, 1-based (default 1)
  --context-prefix NAME  corpus names are NAME::MODEL_ID (default: the extraction
                         context the manifest recorded)
  --skip-import          search existing corpora as they are; import nothing
  -h, --help             show this help

A corpus is marked as this verb's, for this run and run index: a context of that
name made otherwise is left alone (rejected). Rerunning the same --run re-imports
the same batches, which replaces them.
"""


# The flags taking a value, as USAGE describes them: the text declares the flags once.
VALUE_FLAGS = tuple(flag for flag, (metavar, _) in usage_flags(USAGE).items() if metavar)


def parser() -> OneLineParser:
    """USAGE's flags as argparse holds them, for shell completion (never parses)."""
    return usage_parser("benchmark search", USAGE)


class _Usage(Exception):
    """A usage error: printed with the --help hint, exit 2."""


def parse_args(argv: Sequence[str]) -> Request | None:
    """The `Request`, or None when --help was asked for. Raises _Usage."""
    values: dict[str, str] = {}
    run = 1
    skip_import = False
    positional: list[str] = []
    tokens = list(argv)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token in ("-h", "--help"):
            return None
        flag, equals, inline = token.partition("=")
        if flag == "--skip-import" and not equals:
            skip_import = True
        elif flag in VALUE_FLAGS:
            if equals:
                value = inline
            elif index < len(tokens):
                value, index = tokens[index], index + 1
            else:
                raise _Usage(f"{flag} needs a value")
            if flag == "--run":
                run = _run(value)
            elif flag in values:
                raise _Usage(f"{flag} given twice — give it once")
            else:
                values[flag] = value
        elif token.startswith("--"):
            raise _Usage(f"unknown flag '{token}'")
        else:
            positional.append(token)
    if "--eval" not in values:
        raise _Usage("--eval FILE is required")
    if not positional:
        raise _Usage("requires a RESULTS_DIR argument")
    if len(positional) > 1:
        raise _Usage("takes exactly one RESULTS_DIR argument")
    if "--url" in values and "--store" in values:
        raise _Usage("--url and --store name two places to search — give one")
    for where in (values["--eval"], values.get("--config"), positional[0]):
        try:
            location(where or "")  # a protocol nobody knows, a driver not installed: usage
        except ValueError as error:
            raise _Usage(str(error)) from None
    url = values.get("--url")
    return Request(
        eval_path=values["--eval"],
        results_dir=positional[0],
        url=None if url is None else url.rstrip("/"),
        config=values.get("--config"),
        run=run,
        context_prefix=values.get("--context-prefix"),
        skip_import=skip_import,
        store=values.get("--store"),
    )


def _run(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise _Usage(f"--run needs a positive integer, got {value!r}")
    return int(value)


def main(argv: Sequence[str]) -> int:
    try:
        request = parse_args(argv)
    except _Usage as error:
        print(
            f"{PREFIX}{error} — try 'taguru-ray benchmark search --help'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if request is None:
        sys.stdout.write(USAGE)
        return EXIT_OK

    def warn(message: str) -> None:
        print(f"{PREFIX}{message}", file=sys.stderr)

    try:
        outcome = run_search(request, os.environ, warn=warn)
    except TaguruRayError as error:
        for line in str(error).splitlines():
            warn(line)
        return error.exit_code
    _summary(outcome.artifact, outcome.path)
    return EXIT_OK


def _summary(artifact: Mapping[str, Any], path: str) -> None:
    """One stdout line: what was searched, and where the report went."""
    corpus, cases = artifact["corpus"], artifact["cases"]
    outcomes = ", ".join(f"{model} {block['outcome']}" for model, block in corpus.items())
    print(f"searched {len(cases)} cases against {len(corpus)} corpora ({outcomes}); wrote {path}")
