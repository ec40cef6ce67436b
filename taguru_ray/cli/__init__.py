"""The ``taguru-ray`` console script: one verb per module, dispatched here."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence

from taguru_ray import __version__
from taguru_ray.cli.boundary import DEBUG_ENV, guarded
from taguru_ray.contract.ray_variables import AUTO_CONNECT
from taguru_ray.text.terminal import guarded_terminal, printable

VERBS = {
    "extract": "extract", "simulate": "simulate", "inspect": "inspect",
    "anchoring": "anchoring", "metrics": "metrics", "verify": "verify",
    "benchmark": "benchmark", "serve": "serve", "import": "import_", "search": "search",
    "evaluate": "evaluate", "sessions": "sessions", "report": "report",
    "completion": "completion",
}

USAGE = """\
usage: taguru-ray <verb> [options]

verbs:
  extract    extract Taguru source files from segments, on Ray
  simulate   run the OpenAI-compatible model simulator on loopback
  inspect    read one segment's attempts log: every completion, the ladder's moves
  anchoring  judge written source files against their own passage text
  metrics    fold an --out's records into metric tables (loss, coverage, cost, …)
  report     write one self-contained HTML page of a run's (or a benchmark's) figures
  verify     check an --out as `taguru import` of the whole folder would read it
  benchmark  extract a model matrix; compare its measurements; search its corpora
  import     load source files into an embedded context store (or a Taguru server)
  search     rank a store's paragraphs against a query, as Taguru does
  evaluate   gate a context's retrieval and citations on eval.jsonl (exit 3 on a regression)
  serve      answer Taguru's HTTP API for an embedded context store (--store DIR)
  sessions   import coding-agent sessions into a full-text index; list, search, show them
  completion print a shell completion script: bash, zsh or fish

taguru-ray <verb> --help shows a verb's options.
taguru-ray --debug <verb> … prints the traceback of an unexpected error (TAGURU_RAY_DEBUG=1).
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if args and args[0] == "--debug":
        debug, args = True, args[1:]
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    if args[0] == "--version":
        print(f"taguru-ray {__version__}")
        return 0
    verb, rest = args[0], args[1:]
    # Every verb that uses Ray starts or joins it on purpose (`start_ray`); a stray call
    # after its shutdown (a lease renewal, a late callback) must fail, never start a
    # second local Ray behind the user's back. Read by Ray when it is first imported.
    os.environ.setdefault(AUTO_CONNECT, "0")
    run = _verb(verb)
    if run is None:
        print(f"taguru-ray: unknown verb {printable(repr(verb))} — try 'taguru-ray --help'",
              file=sys.stderr)
        return 2
    # On a terminal, whatever a verb prints — a file name, a session's text — shows its
    # control characters escaped instead of acting on the screen (text/terminal.py).
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = guarded_terminal(stdout), guarded_terminal(stderr)
    try:
        return guarded(verb, run, rest, debug=debug)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = stdout, stderr


def _verb(verb: str) -> Callable[[Sequence[str]], int] | None:
    """The verb's ``main``, imported only when asked for (Ray is slow to import)."""
    module = VERBS.get(verb)
    if module is None:
        return None
    return importlib.import_module(f"taguru_ray.cli.{module}").main
