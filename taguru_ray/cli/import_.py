"""``taguru-ray import PATH… (--store DIR | --url URL) [--context NAME] [--dry-run]``.

PATH: source files or folders of them (an extract ``--out``; any fsspec URL).
A folder's ``*.jsonl`` files are read in name order, hidden names (the trace
folder, a benchmark cell's ``.diagnostics.jsonl``) skipped. With ``--store``
each file is applied to the embedded store all or nothing (a group of files per
transaction, a savepoint per file; files are read and tokenised on every core),
its source replacing whatever an earlier import stored for it; a
missing context is created (named ``--context``, else the header's
``create.name``, else its ``context_id``). With ``--url`` each file is POSTed to
a Taguru server's ``/import`` (bearer ``TAGURU_API_TOKEN``, else the first
``name:token`` of ``TAGURU_API_TOKENS``).

With an embedding provider (``TAGURU_EMBED_URL`` and ``TAGURU_EMBED_MODEL``, as the
reference server reads them; ``TAGURU_EMBED_PASSAGES`` for paragraphs) ``--store``
also embeds each imported file's glosses and paragraphs. A provider failure refuses
nothing: the file stays imported, the failure is said on stderr, the exit is 1, and
the next import embeds what is missing.

A folder that is an extract ``--out`` may hold the segments ``extract --prune``
retired (``.extract-retired/``): each is retracted from its context first,
once — unless a file of this import writes it again (`cli/import_retract.py`,
ADR 0083).

stdout: one line per file imported (and per source retracted); stderr: one line per
file refused, ``<file>: line <n>: <path>: <why>`` (a control character in a name or an id is
shown escaped, ``\\u{1b}``). Exit 0 all imported, 1 any refused or unreadable, 2
usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from taguru_ray.cli.args import OneLineParser, location, parse
from taguru_ray.cli.import_retract import pending_of, retired_in, retract_embedded, retract_remote
from taguru_ray.context.embeddings import embedder_from_env
from taguru_ray.context.importer import ImportRefusal, Stream, read_stream, stream_sources
from taguru_ray.context.prepare import prepared_streams
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.records.retired import RetiredRecord
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TaguruRayError
from taguru_ray.remote.address import AddressError, base_url
from taguru_ray.remote.client import RemoteError, TaguruClient
from taguru_ray.store.retire import to_retract
from taguru_ray.text.terminal import printable
from taguru_ray.tools.records import read_source_files

PREFIX = "taguru-ray: import: "
NOT_SOURCE_FILES = frozenset({"diagnostics.jsonl"})
# A transaction's paragraphs: each group rewrites a row (a page) of nearly every term it
# carries, so a group must be large to spread that over many paragraphs (ADR 0067); a kill
# loses at most the group in flight. The file cap bounds memory when files are tiny.
GROUP_PARAGRAPHS = 8192
GROUP_FILES = 1024


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="taguru-ray import",
        label="import",
        description="Import source files into an embedded Taguru context store (--store) or "
        "a Taguru server (--url). A refused file applies nothing.",
        allow_abbrev=False,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", type=location,
                        help="source files or folders")  # fmt: skip
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--store", metavar="DIR", help="the embedded store's folder")
    target.add_argument("--url", metavar="URL", help="a Taguru server to POST /import to")
    parser.add_argument("--context", metavar="NAME", help="the local context's name")
    parser.add_argument("--dry-run", action="store_true", help="check and count, write nothing")
    parser.add_argument(
        "--group-paragraphs",
        metavar="N",
        type=_positive,
        default=GROUP_PARAGRAPHS,
        help="--store: paragraphs written per transaction (each file stays all or nothing; "
        f"a kill loses at most one group; default {GROUP_PARAGRAPHS})",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.url and args.context:
        print(f"{PREFIX}--context names a local context; with --url the header's context "
              "is the server's", file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    try:
        url = base_url(args.url, os.environ) if args.url else None
    except AddressError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE
    files: list[tuple[str, bytes]] = []
    retired: list[tuple[str, RetiredRecord]] = []  # (the --out folder, a retired segment)
    unreadable = 0
    for path in args.paths:
        try:
            listed = read_source_files(path)
        except FileNotFoundError:
            print(f"{PREFIX}{printable(path)}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
        except OSError as error:  # said, and the other paths are still imported
            why = error.strerror or str(error)
            print(f"{PREFIX}{printable(path)}: cannot read it ({why})", file=sys.stderr)
            unreadable += 1
            continue
        found = listed.files
        named = [(n, d) for n, d in found.items() if os.path.basename(n) not in NOT_SOURCE_FILES]
        records: list[RetiredRecord] = []
        if len(found) > 1 or found.keys() != {path}:  # a folder
            named = [(f"{path.rstrip('/')}/{n}", d) for n, d in named]
            records, bad = retired_in(path, PREFIX)  # what extract --prune retired there
            retired.extend((path, record) for record in records)
            unreadable += bad
        for name, why in listed.unreadable.items():  # listed, not read: said, exit 1
            shown = printable(f"{path.rstrip('/')}/{name}")
            print(f"{PREFIX}{shown}: cannot read it ({why})", file=sys.stderr)
            unreadable += 1
        if not named and not listed.unreadable and not records:
            print(f"{PREFIX}{printable(path)}: no source file (*.jsonl) in it", file=sys.stderr)
        files.extend(named)
    # Retired segments are retracted first, but never one a file of this import writes again.
    written = {key for _, data in files for key in stream_sources(data, args.context)}
    pending = pending_of(retired, to_retract((r for _, r in retired), written, args.context))
    if not files and not pending:
        return EXIT_FAILED if unreadable or not retired else EXIT_OK
    if url:
        refused = retract_remote(url, pending, args.dry_run)
        refused += sum(not _post(url, name, data, args.dry_run) for name, data in files)
    else:
        try:
            embedder = embedder_from_env(os.environ)
        except ValueError as error:
            print(f"{PREFIX}{error}", file=sys.stderr)
            return EXIT_USAGE
        try:
            store = SqliteStore(args.store, embedder=embedder)
            refused = retract_embedded(store, pending, args.dry_run)
            if args.dry_run or embedder is not None:  # a file at a time, said as it goes
                refused += sum(not _apply(store, name, data, args) for name, data in files)
            elif files:
                refused += _apply_grouped(store, files, args)
        except TaguruRayError as error:  # a file, no database, read-only: one line, and
            print(f"{PREFIX}{error}", file=sys.stderr)  # no file after it would fare better
            return error.exit_code
    return EXIT_FAILED if refused or unreadable else EXIT_OK


def _apply(store: SqliteStore, name: str, data: bytes, args: argparse.Namespace) -> bool:
    try:
        stream = read_stream(data, name=name, context=args.context)
        if not stream.batches and not stream.schemas:  # as `verify` refuses it: never unsaid
            raise ImportRefusal(name, 1, "file", "no header line: the file is empty or blank")
        results = store.import_batches(stream.batches, dry_run=args.dry_run, create_missing=True)
    except ImportRefusal as refusal:
        print(printable(f"{refusal} — nothing of this file was applied"), file=sys.stderr)
        return False
    for result in results:
        print(printable(_summary(name, result, args.dry_run)))
    if args.dry_run:
        return True
    embedded = True
    for report in store.refresh_embeddings([b.context for b in stream.batches]):
        if report.failure:
            print(printable(f"{name}: imported, but embedding context '{report.context}' "
                            f"failed ({report.failure}); the next import embeds what is "
                            "missing"), file=sys.stderr)  # fmt: skip
            embedded = False
        elif report.glosses or report.passages:
            over = report.skipped_over_limit
            print(printable(
                f"{name}: embedded {report.glosses} glosses, {report.passages} paragraph "
                f"rows in context '{report.context}'"
                + (f" ({over} paragraphs over TAGURU_PASSAGE_VECTOR_LIMIT)" if over else "")
            ))  # fmt: skip
    return embedded


def _positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _apply_grouped(
    store: SqliteStore, files: list[tuple[str, bytes]], args: argparse.Namespace
) -> int:
    """Every file, read and tokenised on every core, written a group of files per
    transaction, each file still all or nothing (ADR 0067); a file's line is printed once
    its group is committed. Returns how many files were refused."""
    refused = 0
    group: list[tuple[str, Stream]] = []
    paragraphs = 0
    for name, stream in prepared_streams(files, args.context):
        if isinstance(stream, Stream) and not stream.batches and not stream.schemas:
            stream = ImportRefusal(name, 1, "file", "no header line: the file is empty or blank")
        if isinstance(stream, ImportRefusal):
            print(printable(f"{stream} — nothing of this file was applied"), file=sys.stderr)
            refused += 1
            continue
        group.append((name, stream))
        paragraphs += sum(len(b.prepared or ()) for b in stream.batches)
        if len(group) >= GROUP_FILES or paragraphs >= args.group_paragraphs:
            refused += _commit_group(store, group)
            group, paragraphs = [], 0
    if group:
        refused += _commit_group(store, group)
    return refused


def _commit_group(store: SqliteStore, group: list[tuple[str, Stream]]) -> int:
    answers = store.import_group([s.batches for _, s in group], create_missing=True)
    refused = 0
    for (name, _), answer in zip(group, answers, strict=True):
        if isinstance(answer, ImportRefusal):
            print(printable(f"{answer} — nothing of this file was applied"), file=sys.stderr)
            refused += 1
            continue
        for result in answer:
            print(printable(_summary(name, result, False)))
    return refused


def _summary(name: str, result: dict[str, Any], dry_run: bool) -> str:
    verb = "would import" if dry_run else "imported"
    parts = [f"{result['associations']} associations", f"{result['aliases']} aliases"]
    if result["passage_stored"]:
        parts.append("passage stored")
    for kind in ("questions", "sections", "locators"):
        if result[f"{kind}_stored"]:
            parts.append(f"{result[f'{kind}_stored']} {kind}")
    dropped = sum(result[k] for k in result if k.endswith("_dropped") and k != "passage_dropped")
    if dropped:
        parts.append(f"{dropped} dropped (paragraph out of range)")
    created = " (created)" if result["created"] else ""
    return (
        f"{name}: {verb} source '{result['source']}' into context '{result['context']}'"
        f"{created}: {', '.join(parts)}"
    )


def _post(url: str, name: str, data: bytes, dry_run: bool) -> bool:
    client = TaguruClient.from_environment(url, os.environ)
    try:
        reply = client.import_stream(data, dry_run=dry_run)
    except RemoteError as error:
        if error.status is None:
            print(printable(f"{name}: {error.message}"), file=sys.stderr)
            return False
        paths = ", ".join(issue.get("path", "?") for issue in error.body.get("issues", []))
        where = f" [{paths}]" if paths else ""
        detail = error.body.get("error", error.message)
        print(printable(f"{name}: refused by {client.base}/import: {error.status} "
                        f"{error.code or ''}: {detail}{where}"), file=sys.stderr)  # fmt: skip
        return False
    result = reply.result if isinstance(reply.result, dict) else {}
    for batch in result.get("batches", []):
        print(printable(_summary(name, batch, dry_run)))
    return True
