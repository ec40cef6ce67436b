"""``taguru-ray extract``: parse the command line, then hand one Settings to the engine.

Every flag of seed 000's ``taguru extract`` is here, plus the Ray and scale
flags. A flag given twice is a usage error (never "last one wins"); a flag
whose feature is not built yet parses, then `settings.resolve_settings`
refuses it by name.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from taguru_ray.errors import EXIT_INTERRUPTED, EXIT_USAGE, MESSAGE_PREFIX, TaguruRayError

HELP_HINT = " — try 'taguru-ray extract --help'"


class _Parser(argparse.ArgumentParser):
    """Usage errors as every other stderr line of extract: one ``taguru: extract:`` line
    naming the fix, exit 2 (argparse would print its usage block and its own prefix)."""

    def error(self, message: str) -> NoReturn:
        print(f"{MESSAGE_PREFIX}{message}{HELP_HINT}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


class _Once(argparse.Action):
    """Store a value, refusing a second occurrence of the same flag."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} given twice")
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="taguru-ray extract",
        description="Extract Taguru source files from .md/.txt segments with an "
        "OpenAI-compatible model, as a Ray job. The endpoint comes from "
        "TAGURU_EXTRACT_URL and TAGURU_EXTRACT_MODEL (and TAGURU_EXTRACT_API_KEY).",
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("paths", nargs="*", metavar="PATH", help="segment files or folders of .md/.txt files")
    add("--out", action=_Once, metavar="DIR", help="where source files and records go (required)")
    add("--context", action=_Once, metavar="ID", help="target context, a lowercase UUID (required)")
    add("--name", action=_Once, help="attach a create block naming the context")
    add("--description", action=_Once, metavar="TEXT", help="the create block's description")
    add(
        "--source-id",
        dest="source_id",
        action=_Once,
        metavar="ID",
        help="write ID (or ID/<stem> for several segments) as the header's source",
    )
    add("--date", action=_Once, metavar="WHEN", help="YYYY-MM-DD or epoch seconds, on the passage")
    add("--tag", dest="tags", action="append", metavar="TAG", help="tag the source (repeatable)")
    add("--no-passage", dest="no_passage", action="store_true", help="omit the body text")
    add("--dry-run", dest="dry_run", action="store_true", help="list what would extract or skip")
    add("--force", action="store_true", help="re-extract segments the manifest calls unchanged")
    add("--config", action=_Once, metavar="FILE", help="read KEY=VALUE environment from FILE")
    add("--parallel", action=_Once, metavar="N", help="chunk completions at once per segment")
    add(
        "--chunk-bytes",
        dest="chunk_bytes",
        action=_Once,
        metavar="N",
        help="segment bytes per model call (default 24576, at least 512)",
    )
    add(
        "--diagnostics-out",
        dest="diagnostics_out",
        action=_Once,
        metavar="FILE",
        help="write a JSONL sidecar of run/chunk/attempt/segment records",
    )
    add("--questions", action=_Once, metavar="N")
    add("--fact-budget", dest="fact_budget", action=_Once, metavar="N")
    add("--structured-output", dest="structured_output", action=_Once, metavar="MODE")
    add("--max-output-tokens", dest="max_output_tokens", action=_Once, metavar="N")
    add("--chunk-context", dest="chunk_context", action=_Once, metavar="MODE")
    add("--lossy", action="store_const", const=True, default=None)
    add("--candidates", action="store_const", const=True, default=None)
    add("--coverage", action="store_const", const=True, default=None)
    add("--redact", action=_Once, metavar="GROUP")
    add("--redact-rules", dest="redact_rules", action=_Once, metavar="FILE")
    add("--vocabulary", action=_Once, metavar="PATH")
    add("--schema", action=_Once, metavar="FILE")
    add("--replay", action=_Once, metavar="MODE")
    add("--replay-from", dest="replay_from", action=_Once, metavar="DIR")
    add(
        "--resume-from",
        dest="resume_from",
        action=_Once,
        metavar="STEP",
        help="redo segments, satisfying the steps before STEP from the attempts log",
    )
    add("--steps", action="store_true", help="print the pipeline's step table and exit")
    add(
        "--carryover",
        action=_Once,
        metavar="N",
        help="offer each chunk the last N names earlier chunks settled on (0 = off)",
    )
    add(
        "--gleanings",
        action=_Once,
        metavar="N",
        help="N more passes per chunk asking what the answer missed (0 = off)",
    )
    ray = parser.add_argument_group("Ray and scale")
    ray.add_argument("--address", action=_Once, help="a Ray cluster to join (default: start one)")
    ray.add_argument(
        "--segment-window",
        dest="segment_window",
        action=_Once,
        metavar="W",
        help="segment i sees labels of segments 0..i-W (default 8; 1 = sequential)",
    )
    ray.add_argument(
        "--max-inflight",
        dest="max_inflight",
        action=_Once,
        metavar="N|auto",
        help="completions in flight across the whole run (default 32); auto finds the "
        "endpoint's knee",
    )
    ray.add_argument(
        "--endpoint",
        dest="endpoints",
        action="append",
        metavar="URL",
        help="an OpenAI-compatible endpoint (repeatable: balanced by least in flight); "
        "replaces TAGURU_EXTRACT_URL",
    )
    ray.add_argument("--rpm", action=_Once, metavar="N", help="requests per minute ceiling")
    ray.add_argument("--tpm", action=_Once, metavar="N", help="estimated tokens per minute")
    ray.add_argument(
        "--progress",
        action=_Once,
        metavar="MODE",
        nargs="?",
        const="bar",
        help="auto (default: a bar on a terminal, plain lines otherwise), bar, lines",
    )
    ray.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const="off",
        help="no progress display",
    )
    ray.add_argument(
        "--workers", action=_Once, metavar="N", help="segment worker actors (default 2)"
    )
    ray.add_argument(
        "--worker-resource",
        dest="worker_resource",
        action=_Once,
        metavar="NAME",
        help="place segment workers only on nodes declaring this custom resource",
    )
    return parser


def _normalise_redact(argv: Sequence[str]) -> list[str]:
    """``--redact`` takes an optional group; only ``secrets``/``pii`` are consumed as one."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        token = items[i]
        if token == "--redact":
            nxt = items[i + 1] if i + 1 < len(items) else None
            if nxt in ("secrets", "pii"):
                out.append(f"--redact={nxt}")
                i += 2
                continue
            out.append("--redact=both")
        else:
            out.append(token)
        i += 1
    return out


def parse_flags(argv: Sequence[str]) -> dict[str, Any]:
    parser = build_parser()
    namespace = parser.parse_args(_normalise_redact(argv))
    return vars(namespace)


def main(argv: Sequence[str]) -> int:
    # Imported late so `--help` and usage errors answer without loading Ray.
    from taguru_ray.settings import resolve_settings

    flags = parse_flags(argv)
    if flags.pop("steps", False):
        from taguru_ray.pipeline.steps import render_table

        print(render_table())
        return 0
    try:
        settings = resolve_settings(flags, os.environ)
        from taguru_ray.engine.driver import Console, extract

        return extract(settings, Console())
    except TaguruRayError as error:
        print(f"{MESSAGE_PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            f"{MESSAGE_PREFIX}interrupted — chunk checkpoints saved; rerun to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
