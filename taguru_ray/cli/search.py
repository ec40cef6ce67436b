"""``taguru-ray search --store DIR [--context NAME] [--limit N] [--json] QUERY``.

Ranks the store's paragraphs against QUERY with the reference's BM25 and
prints each hit: rank, source, paragraph, section and score, then the
paragraph's first line. ``--json`` prints the wire result of ``POST
/contexts/{name}/sources/search`` instead. With one context in the store
``--context`` may be omitted. Exit 0 (even with no hit), 1 an unknown context or
an empty store, 2 usage.

With an embedding provider (``TAGURU_EMBED_URL``, ``TAGURU_EMBED_MODEL``,
``TAGURU_EMBED_PASSAGES``, as ``import`` and ``serve`` read them) the vector lane runs
too and the scores are the two lanes' reciprocal-rank fusion; the vector lane's
state is printed when it did not run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from taguru_ray.cli.args import OneLineParser, parse
from taguru_ray.context.embeddings import embedder_from_env
from taguru_ray.context.errors import ContextError
from taguru_ray.context.schema import store_file
from taguru_ray.context.store import SqliteStore
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TaguruRayError

PREFIX = "taguru-ray: search: "
SHOWN_CHARS = 160


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="taguru-ray search",
        label="search",
        description="Search an embedded context store's paragraphs (BM25, as Taguru ranks them).",
        allow_abbrev=False,
    )
    parser.add_argument("query", metavar="QUERY", help="the words to rank paragraphs against")
    parser.add_argument("--store", metavar="DIR", required=True, help="the store's folder")
    parser.add_argument("--context", metavar="NAME", help="needed when the store holds several")
    parser.add_argument("--limit", metavar="N", type=int, default=10, help="hits (default 10)")
    parser.add_argument("--json", action="store_true", help="print the wire result as JSON")
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if not 0 <= args.limit <= 1000:
        print(f"{PREFIX}--limit must be from 0 to 1000", file=sys.stderr)
        return EXIT_USAGE
    if not store_file(args.store).exists():
        print(f"{PREFIX}{args.store}: no store here (taguru-ray import … --store {args.store})",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    try:
        embedder = embedder_from_env(os.environ)
    except ValueError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = SqliteStore(args.store, embedder=embedder)
    except TaguruRayError as error:  # no database, another schema, read-only: one line
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    name = args.context
    if name is None:
        names = store.context_names()
        if len(names) != 1:
            which = "has no context yet" if not names else f"holds {', '.join(names)}"
            print(f"{PREFIX}the store {which}: give --context NAME", file=sys.stderr)
            return EXIT_FAILED if not names else EXIT_USAGE
        name = names[0]
    try:
        result = store.search(name, args.query, limit=args.limit)
    except ContextError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_FAILED if error.status == 404 else EXIT_USAGE
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return EXIT_OK
    lanes = result["plan"]["contexts"][0]["lanes"]
    if not result["hits"]:
        reason = lanes["bm25"].get("reason", "no paragraph matches")
        print(f"no hits in context '{name}' ({reason})")
    elif embedder is not None and not lanes["vector"]["ran"]:
        print(f"(vector lane: {lanes['vector']['reason']})")
    for rank, hit in enumerate(result["hits"], start=1):
        cited = store.citation(name, hit["source"], hit["paragraph"])
        section = f"  section: {cited['section']}" if cited["section"] else ""
        print(f"{rank}. {hit['source']}  paragraph {hit['paragraph']}{section}"
              f"  score {hit['score']}")  # fmt: skip
        text = " ".join(hit["text"].split())
        print(f"   {text[:SHOWN_CHARS]}{'…' if len(text) > SHOWN_CHARS else ''}")
    return EXIT_OK
