"""``taguru-ray sessions import | list | search | show | extract``: coding-agent sessions.

Parsing and printing only; the store is `taguru_ray.sessions.index.SessionStore`, the
converters `taguru_ray.sessions.convert`. Every verb takes ``--store DIR`` (a local
folder: one SQLite file). Output lines about a turn start with its handle
(``cc:<session_id>#<seq>``), so any line can be fed back to ``sessions show``.

- ``import PATH… [--format F] [--mask] [--redact-rules FILE] [--id ID] [--started-at
  TIME]``: files, or folders
  walked for ``*.jsonl`` and ``*.json`` (recursively, in name order, hidden names
  skipped), on any fsspec URL. stdout: one line per file stored (added, replaced or
  unchanged — a file imported before with the same flags and rules is not even
  converted again); stderr: one line per file refused or unreadable, and per folder
  that could not be listed (its files unknown: the walk is `store/walk.py`'s). A file a
  folder walk finds that holds no session — a subagent's ``*.meta.json``, a settings
  file, a file of snapshots only — is skipped with one note on stderr and is no
  failure; named on its own, it is refused. ``--id ID --started-at TIME`` name one
  OpenAI chat log, which records neither. Exit 0 all stored or skipped, 1 any refused
  or unreadable, 2 usage.
- ``list [--json]``, ``search QUERY [--limit N] [--agent A] [--json]``, ``show HANDLE
  [--context N] [--json]``: exit 0 (a search with no hit too), 1 no store or no such
  handle, 2 usage. ``show`` of a session with a memory card prints the card first.
- ``recall``, ``replay``, ``expand``, ``brief``: `cli/sessions_use.py`.

The exit codes come from the errors' types (`taguru_ray.errors`), decided nowhere else.
It runs over 400 lines because each verb's parser sits beside the verb it parses, and
the import verb's walk, refusals and notes are one piece; `sessions_use.py` and
`sessions_extract.py` hold the verbs that stand apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import posixpath
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import fsspec

from taguru_ray import __version__
from taguru_ray.cli import sessions_use
from taguru_ray.cli.args import OneLineParser, location, whole_number
from taguru_ray.contract.settings.values import passphrase
from taguru_ray.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TaguruRayError, UsageError, prefix
from taguru_ray.sessions import ledger
from taguru_ray.sessions.events import AGENTS
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.index_query import query_words, split_words
from taguru_ray.sessions.index_records import turn_handle
from taguru_ray.sessions.memory import MemoryStore
from taguru_ray.store.redact_key import redaction_key
from taguru_ray.store.walk import Unlisted, reach, walk
from taguru_ray.text.masking import masked, secrets_in
from taguru_ray.text.redact import Rule, RulesError, parse_rules_file
from taguru_ray.text.terminal import printable

PREFIX = prefix("sessions")  # a line before the sub-verb is known
IMPORT, LIST = prefix("sessions import"), prefix("sessions list")
SEARCH, SHOW = prefix("sessions search"), prefix("sessions show")
SESSION_SUFFIXES = (".jsonl", ".json")
# Files of an agent's folder that are known not to be sessions: skipped by name, with a note
# (Claude Code writes subagents/agent-<id>.meta.json beside each subagent's JSONL).
SKIPPED_SUFFIXES = (".meta.json",)
ONE_LOG = "--id and --started-at name one OpenAI chat log: give one file, not a folder or several"


def shown_path(path: str, rules: Sequence[Rule] | None = None) -> str:
    """A path as every line of these verbs prints it: each secret in it masked (the one
    masker, `text/masking.py`; the import's own rules when given) and control characters
    escaped. A folder named after a working directory can hold a token."""
    try:
        return printable(masked(path, rules))
    except UnicodeEncodeError:  # a secret next to a byte that is not UTF-8: that byte as ?
        return printable(masked(path.encode("utf-8", "replace").decode("utf-8"), rules))

USAGE = """\
usage: taguru-ray sessions <import|list|search|show|recall|replay|expand|brief|extract> \
         --store DIR [options]

  import   convert session files (Claude Code, Codex, OpenAI chat) into the store's index
  list     the stored sessions: handle, started, turns, facts, file
  search   the turns holding every word of a query (substring, any script), best first
  show     a turn and the turns around it, verbatim, by its handle (and the session's card)
  recall   the turns holding a query, each with a one-sentence brief (pending before extract)
  replay   the turns FROM..TO of a session, verbatim
  expand   a turn and K turns either side, verbatim
  brief    each project's always-on brief (written by extract)
  extract  with a model: facts with their turn and a verbatim quote, one source file each

taguru-ray sessions <verb> --help shows its options.
"""


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return EXIT_OK if argv else EXIT_USAGE
    verb, rest = argv[0], list(argv[1:])
    if verb == "extract":  # extract's flags: it parses its own argv (cli/sessions_extract.py)
        from taguru_ray.cli.sessions_extract import main as extract_main

        return extract_main(rest)
    run = VERBS.get(verb)
    if run is None:
        print(f"{PREFIX}unknown verb {verb!r} — try 'taguru-ray sessions --help'",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    parser = PARSERS[verb]()
    try:
        args = parser.parse_once(rest)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if "://" in args.store:
        print(f"{prefix(f'sessions {verb}')}--store {args.store}: the store is one SQLite "
              "file, so a local folder — the session files themselves may be URLs",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    try:
        return run(args)
    except TaguruRayError as error:
        print(f"{prefix(f'sessions {verb}')}{error}", file=sys.stderr)
        return error.exit_code


# ---------------------------------------------------------------- parsers


def _parser(verb: str, description: str) -> OneLineParser:
    parser = OneLineParser(
        prog=f"taguru-ray sessions {verb}", description=description, allow_abbrev=False,
        label=f"sessions {verb}",
    )  # fmt: skip
    parser.add_argument("--store", metavar="DIR", required=True, help="the store's folder")
    return parser


def _import_parser() -> OneLineParser:
    parser = _parser("import", "Convert session files into the store; every turn is indexed.")
    parser.add_argument("paths", nargs="+", metavar="PATH", type=location,
                        help="files or folders (fsspec URLs)")  # fmt: skip
    parser.add_argument("--format", choices=AGENTS, help="skip detection: read every file so")
    mask = "mask a secret found and keep the session (default: refuse the session)"
    parser.add_argument("--mask", action="store_true", help=mask)
    rules = "more secret rules, one name<TAB>regex a line (extract's --redact-rules)"
    parser.add_argument("--redact-rules", metavar="FILE", type=location, help=rules)
    # An OpenAI chat log records neither: one file at a time, the caller says them.
    parser.add_argument(
        "--id",
        metavar="ID",
        type=_session_id,
        help="an OpenAI chat log's session id (one file; default: its sha256)",
    )
    parser.add_argument(
        "--started-at",
        metavar="TIME",
        type=_started_at,
        help="when an OpenAI chat log began, ISO 8601 (one file; its turns' "
        "time, marked not exact, and its source file's date)",
    )
    return parser


def _session_id(text: str) -> str:
    if not text or len(text.encode()) > 256 or not text.isprintable() or text.strip() != text:
        raise argparse.ArgumentTypeError(
            "give a session id of 1 to 256 bytes, no spaces at its ends, no control character"
        )
    return text


def _started_at(text: str) -> int:
    from taguru_ray.sessions.convert.draft import epoch_ms

    moment = epoch_ms(text)
    if moment is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time — e.g. 2026-05-05T10:32:00Z"
        )
    return moment


def _list_parser() -> OneLineParser:
    parser = _parser("list", "The stored sessions, the earliest started first.")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def _search_parser() -> OneLineParser:
    parser = _parser("search", "Turns holding every word of QUERY (substring, case-blind).")
    parser.add_argument("query", metavar="QUERY", help='words; a "quoted phrase" stays whole')
    parser.add_argument(
        "--limit", metavar="N", type=whole_number, default=20, help="hits (default 20)"
    )
    parser.add_argument("--agent", choices=AGENTS, help="only this agent's sessions")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def _show_parser() -> OneLineParser:
    parser = _parser("show", "A turn and the turns around it, verbatim.")
    parser.add_argument("handle", metavar="HANDLE", help="cc:<id>#<seq> (no #<seq>: all)")
    parser.add_argument("--context", metavar="N", type=whole_number, default=2,
                        help="turns either side (default 2)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


# ---------------------------------------------------------------- verbs


def _import(args: argparse.Namespace) -> int:
    rules, rules_sha256 = None, None
    if args.redact_rules:
        try:
            with fsspec.open(args.redact_rules, "rb") as handle:
                rules, rules_sha256 = parse_rules_file(handle.read(), path=args.redact_rules)
        except (OSError, RulesError) as error:
            print(f"{IMPORT}{error}", file=sys.stderr)
            return EXIT_USAGE
    one_log = args.id is not None or args.started_at is not None
    if one_log and len(args.paths) != 1:
        print(f"{IMPORT}{ONE_LOG}", file=sys.stderr)
        return EXIT_USAGE
    files: list[tuple[str, fsspec.AbstractFileSystem, str]] = []
    walked: set[str] = set()  # files a folder walk found, not named: not-a-session skips
    unlisted = 0
    from taguru_ray.sessions.convert.secrets import secret_rules

    scan = secret_rules(rules)
    for path in args.paths:
        try:
            found, skipped = _session_files(path)
            walked.update(name for name, _, _ in found if name != path)
        except FileNotFoundError:
            print(f"{IMPORT}{shown_path(path, scan)}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
        except OSError as error:  # hidden by a folder on its way: said; the rest imported
            found, skipped = [], [Unlisted(path, error.strerror or str(error))]
        for folder in skipped:  # its files are unknown: said, and the exit is 1
            print(f"{IMPORT}{shown_path(folder.folder, scan)}: cannot read it ({folder.why}) — its "
                  "session files were not imported; make it readable and import again",
                  file=sys.stderr)  # fmt: skip
        unlisted += len(skipped)
        if not found and not skipped:
            print(f"{IMPORT}{shown_path(path, scan)}: no session file (*.jsonl, *.json) in it",
                  file=sys.stderr)  # fmt: skip
        for name, _, _ in found:
            if name != path and name.endswith(SKIPPED_SUFFIXES):
                print(f"{IMPORT}{shown_path(name, scan)}: skipped — a subagent's metadata "
                      "(*.meta.json), not a session", file=sys.stderr)  # fmt: skip
        files.extend(f for f in found if f[0] == path or not f[0].endswith(SKIPPED_SUFFIXES))
    if one_log and [name for name, _, _ in files] != args.paths:  # a folder
        print(f"{IMPORT}{ONE_LOG}", file=sys.stderr)
        return EXIT_USAGE
    key = _mask_key() if args.mask else b""
    importer = _Importer(args.format, args.mask, rules, rules_sha256, key)
    importer.session_id, importer.started_ms, importer.walked = args.id, args.started_at, walked
    with SessionStore(args.store, create=True) as store:
        stored = [importer.one(store, name, fs, path) for name, fs, path in files]
    return EXIT_OK if files and all(stored) and not unlisted else EXIT_FAILED


class _Importer:
    """One file at a time: read, convert, put — or, when the store holds what converting
    the same bytes the same way made before, say "unchanged" without converting."""

    def __init__(
        self,
        format: str | None,
        mask: bool,
        rules: list[Rule] | None,
        rules_sha256: str | None,
        key: bytes = b"",
    ) -> None:
        self.format, self.mask, self.rules, self.key = format, mask, rules, key
        self.rules_sha256 = rules_sha256
        self.session_id: str | None = None  # --id, --started-at: one OpenAI chat log's
        self.started_ms: int | None = None
        self.walked: set[str] = set()  # names a folder walk found (see `one`)

    @property
    def settings(self) -> str:
        """Everything besides the bytes that decides what a conversion makes."""
        from taguru_ray.sessions.convert import ALLOWLISTS

        return json.dumps([self.format, self.mask, self.rules_sha256, __version__,
                           sorted(a.tag for a in ALLOWLISTS.values()),
                           self.session_id, self.started_ms])  # fmt: skip

    def one(self, store: SessionStore, name: str, fs: fsspec.AbstractFileSystem, path: str) -> bool:
        """Import one file; False when it was unreadable or refused (said on stderr).

        Its path is scanned as its lines are (the same rules): the index keeps it, `list`
        prints it and `extract` writes it into its trace, so a secret in it (a folder
        named after a working directory that held a token) refuses the file as extract's
        ``--redact`` refuses such a segment path — or, with ``--mask``, is stored as the
        lines' secrets are, behind the placeholder keyed as theirs."""
        from taguru_ray.sessions.convert import NotASession, SessionRefused, convert
        from taguru_ray.sessions.convert.secrets import secret_rules

        rules = secret_rules(self.rules)
        shown = shown_path(name, rules)
        if not _utf8(name):  # the index keeps the name as text; undecodable bytes cannot be
            print(f"{shown}: the name is not UTF-8 — rename it", file=sys.stderr)
            return False
        tripped = secrets_in(name, rules)
        if tripped and not self.mask:
            print(f"{IMPORT}{shown}: its path holds a secret ({', '.join(tripped)}) — refused: "
                  "the store keeps a session's path, list prints it and extract writes it; "
                  "rename the folder, or --mask replaces the secret", file=sys.stderr)  # fmt: skip
            return False
        try:
            data = bytes(fs.cat_file(path))
        except OSError as error:
            print(f"{shown}: cannot read it ({error.strerror or error})",
                  file=sys.stderr)  # fmt: skip
            return False
        # A masked path converts to another stored name: keyed apart, so a file imported
        # before paths were masked is converted again rather than left "unchanged".
        path_mark = b"masked-path\n" if tripped else b""
        inputs = hashlib.sha256(f"{self.settings}\n".encode() + path_mark + data).hexdigest()
        seen = store.imported(inputs)
        if seen is not None:
            print(f"{shown}: unchanged {seen.handle} ({_turns(seen.turns)})")
            return True
        named: dict[str, Any] = {}  # only when given: one OpenAI chat log's own
        if self.session_id is not None:
            named["session_id"] = self.session_id
        if self.started_ms is not None:
            named["started_ms"] = self.started_ms
        stored = name
        if tripped:  # --mask: the lines' placeholder, salted with the file's digest
            stored = masked(name, rules, hashlib.sha256(data).hexdigest(), self.key)
        try:
            session = convert(data, file=stored, format=self.format, mask=self.mask,
                              rules=self.rules, key=self.key, **named)  # fmt: skip
        except NotASession as refusal:
            if name not in self.walked:  # named on the command line: the user meant it
                print(printable(str(refusal)), file=sys.stderr)
                return False
            # An agent's folder holds files that are no session by design: said, skipped.
            why = str(refusal).removeprefix(f"{stored}: ")
            print(f"{IMPORT}{shown}: skipped — {printable(why)}", file=sys.stderr)
            return True
        except SessionRefused as refusal:
            print(printable(str(refusal)), file=sys.stderr)  # names places, never content
            return False
        outcome = store.put(session, inputs=inputs)
        count = len(session.masked) + bool(tripped)
        masked_note = f", {count} secret{'s' if count > 1 else ''} masked" if count else ""
        print(f"{shown_path(stored)}: {outcome} {session.handle} "
              f"({_turns(len(session.events))}{masked_note})")  # fmt: skip
        return True


def _mask_key() -> bytes:
    """--mask's placeholder key: extract's --redact key, TAGURU_EXTRACT_REDACT_KEY or its
    key file, kept outside the store, so the file digest the store holds checks no guess."""
    phrase = os.environ.get("TAGURU_EXTRACT_REDACT_KEY")
    try:
        configured = None if phrase is None else passphrase(phrase)
    except ValueError as error:
        raise UsageError(f"TAGURU_EXTRACT_REDACT_KEY {error}") from None
    return redaction_key(configured)


def _session_files(path: str) -> tuple[list[tuple[str, fsspec.AbstractFileSystem, str]],
                                        list[Unlisted]]:  # fmt: skip
    """(name as shown, its filesystem, its path there) of each session file under PATH, and
    each folder under it that could not be listed (named as shown)."""
    fs, root = fsspec.core.url_to_fs(path)
    reach(fs, root)
    if not fs.isdir(root):
        return [(path, fs, root)], []
    root = root.rstrip("/") or root
    shown = path.rstrip("/") or path
    found = walk(fs, root)
    files = [
        (f"{shown}/{relative}", fs, posixpath.join(root, relative))
        for relative in found.files
        if relative.endswith(SESSION_SUFFIXES)
    ]
    unlisted = [
        Unlisted(f"{shown}/{u.folder}" if u.folder else shown, u.why) for u in found.unlisted
    ]
    return files, unlisted


def _list(args: argparse.Namespace) -> int:
    with SessionStore(args.store) as store:
        rows = store.sessions()
    # The ledger beside the store (P16): what extraction did to each session, if anything.
    ledgers = [ledger.read(args.store, row.agent, row.session_id) for row in rows]
    summaries = [ledger.summary(records) if records else None for records in ledgers]
    if args.json:
        # A store imported before paths were scanned may hold one with a secret: masked
        # here as everywhere it is shown.
        listed = [asdict(row) | {"file": masked(row.file), "ledger": summary and asdict(summary)}
                  for row, summary in zip(rows, summaries, strict=True)]  # fmt: skip
        print(json.dumps({"sessions": listed}, ensure_ascii=False))
        return EXIT_OK
    if not rows:
        print(f"{LIST}the store holds no session yet", file=sys.stderr)
    for row, summary in zip(rows, summaries, strict=True):
        facts = "-" if row.facts is None else str(row.facts)
        done = "" if summary is None else f"  {printable(str(summary))}"
        print(f"{row.handle}  {_when(row.started_ms)}  {_turns(row.turns)}  facts {facts}"
              f"{done}  {shown_path(row.file)}")  # fmt: skip
    return EXIT_OK


def _search(args: argparse.Namespace) -> int:
    with SessionStore(args.store) as store:
        hits = store.search(args.query, limit=args.limit, agent=args.agent)
    indexed, short = split_words(query_words(args.query))
    if args.json:
        body = {"query": args.query, "ranked": bool(indexed), "hits": [asdict(h) for h in hits]}
        print(json.dumps(body, ensure_ascii=False))
        return EXIT_OK
    if short and not indexed:
        print(f"{SEARCH}every word is under 3 characters: every turn was scanned, and the "
              "hits are in session order, not ranked", file=sys.stderr)  # fmt: skip
    if not hits:
        print(f"{SEARCH}no turn holds {args.query!r}", file=sys.stderr)
    for hit in hits:
        print(f"{hit.handle}  {_when(hit.ts_ms)}  {hit.speaker_id}  {hit.snippet}")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    with SessionStore(args.store) as store, MemoryStore(args.store) as memory:
        target = store.resolve(args.handle)
        events = store.show(target, context=args.context)
        card = memory.card(target.agent, target.session_id)
    written = card if card is not None and not card.pending else None
    if args.json:
        turns = [{"handle": turn_handle(target.agent, target.session_id, e.seq), **asdict(e)}
                 for e in events]  # fmt: skip
        body: dict[str, object] = {"handle": str(target), "turns": turns}
        if written is not None:
            body["card"] = sessions_use.card_json(written)
        print(json.dumps(body, ensure_ascii=False))
        return EXIT_OK
    if written is not None:  # the card first: what the session decided, changed, learned
        sessions_use.print_card(written)
        print()
    for index, event in enumerate(events):
        tool = f" {event.tool.name}" if event.tool else ""
        mark = "  ◀" if event.seq == target.seq else ""
        handle = turn_handle(target.agent, target.session_id, event.seq)
        if index:
            print()
        print(f"{handle}  {_when(event.ts_ms)}  {event.speaker_id}  {event.kind}{tool}{mark}")
        print(event.text)
    return EXIT_OK


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: how Python holds a name's raw bytes
        return False
    return True


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _when(ts_ms: int | None) -> str:
    """UTC ISO 8601 to the second; ``-`` when the agent recorded no time."""
    if ts_ms is None:
        return "-"
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


VERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    "import": _import,
    "list": _list,
    "search": _search,
    "show": _show,
    "recall": sessions_use.recall_verb,
    "replay": sessions_use.replay_verb,
    "expand": sessions_use.expand_verb,
    "brief": sessions_use.brief_verb,
}
PARSERS: dict[str, Callable[[], OneLineParser]] = {
    "import": _import_parser,
    "list": _list_parser,
    "search": _search_parser,
    "show": _show_parser,
    "recall": sessions_use.recall_parser,
    "replay": sessions_use.replay_parser,
    "expand": sessions_use.expand_parser,
    "brief": sessions_use.brief_parser,
}
