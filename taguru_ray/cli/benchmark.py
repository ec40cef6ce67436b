"""``taguru-ray benchmark extract | compare | search``: the verbs of seed 003's benchmark."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from taguru_ray.errors import EXIT_OK, EXIT_USAGE

USAGE = """\
usage: taguru-ray benchmark <extract|compare|search> [options]

  extract   run one extract per (model, run) cell of a models.json matrix
  compare   measure a results directory: throughput, volume, stability (never a ranking)
  search    search one corpus per model with eval.jsonl; how their hits differ (never a ranking)

taguru-ray benchmark <verb> --help shows its options.
"""


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return EXIT_OK if argv else EXIT_USAGE
    verb, rest = argv[0], list(argv[1:])
    if verb == "extract":
        from taguru_ray.cli.benchmark_extract import main as extract_main

        return extract_main(rest)
    if verb == "compare":
        from taguru_ray.cli.benchmark_compare import main as compare_main

        return compare_main(rest)
    if verb == "search":
        from taguru_ray.cli.benchmark_search import main as search_main

        return search_main(rest)
    print(
        f"taguru-ray: benchmark: unknown verb {verb!r} — try 'taguru-ray benchmark --help'",
        file=sys.stderr,
    )
    return EXIT_USAGE
