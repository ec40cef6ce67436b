"""The ``taguru-ray`` console script: one verb per module, dispatched here."""

from __future__ import annotations

import sys

from taguru_ray import __version__

USAGE = """\
usage: taguru-ray <verb> [options]

verbs:
  extract    extract Taguru source files from segments, on Ray
  simulate   run the OpenAI-compatible model simulator on loopback
  inspect    read one segment's attempts log: every completion, the ladder's moves
  anchoring  judge written source files against their own passage text
  metrics    fold an --out's records into metric tables (loss, coverage, cost, …)
  verify     check an --out as `taguru import` of the whole folder would read it
  benchmark  extract a model matrix; compare its measurements; search its corpora
  import     load source files into an embedded context store (or a Taguru server)
  search     rank a store's paragraphs against a query, as Taguru does
  evaluate   gate a context's retrieval and citations on eval.jsonl (exit 3 on a regression)
  serve      answer Taguru's HTTP API for an embedded context store (--store DIR)
  sessions   import coding-agent sessions into a full-text index; list, search, show them

taguru-ray <verb> --help shows a verb's options.
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    if args[0] == "--version":
        print(f"taguru-ray {__version__}")
        return 0
    verb, rest = args[0], args[1:]
    if verb == "extract":
        from taguru_ray.cli.extract import main as extract_main

        return extract_main(rest)
    if verb == "simulate":
        from taguru_ray.cli.simulate import main as simulate_main

        return simulate_main(rest)
    if verb == "inspect":
        from taguru_ray.cli.inspect import main as inspect_main

        return inspect_main(rest)
    if verb == "anchoring":
        from taguru_ray.cli.anchoring import main as anchoring_main

        return anchoring_main(rest)
    if verb == "metrics":
        from taguru_ray.cli.metrics import main as metrics_main

        return metrics_main(rest)
    if verb == "verify":
        from taguru_ray.cli.verify import main as verify_main

        return verify_main(rest)
    if verb == "benchmark":
        from taguru_ray.cli.benchmark import main as benchmark_main

        return benchmark_main(rest)
    if verb == "serve":
        from taguru_ray.cli.serve import main as serve_main

        return serve_main(rest)
    if verb == "import":
        from taguru_ray.cli.import_ import main as import_main

        return import_main(rest)
    if verb == "search":
        from taguru_ray.cli.search import main as search_main

        return search_main(rest)
    if verb == "evaluate":
        from taguru_ray.cli.evaluate import main as evaluate_main

        return evaluate_main(rest)
    if verb == "sessions":
        from taguru_ray.cli.sessions import main as sessions_main

        return sessions_main(rest)
    print(f"taguru-ray: unknown verb {verb!r} — try 'taguru-ray --help'", file=sys.stderr)
    return 2
