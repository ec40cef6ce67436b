"""``taguru-ray sessions recall | replay | expand | brief``: using the store (seed 004, "04 / Use").

Parsing and printing only; the library is `sessions/recall.py`, `sessions/memory.py` and
the index. None asks a model: recall's briefs, the cards and the always-on brief were
written by `sessions extract`; until then they print ``pending`` and the handles and
turns are there all the same.

- ``recall QUERY [--limit N] [--agent A] [--json]``: one line per turn found,
  ``<handle>  <time>  <brief | pending | ->``.
- ``replay HANDLE --from N --to M [--json]``: the turns N..M verbatim, each headed by
  its handle, time, speaker and kind.
- ``expand HANDLE#SEQ [-C K] [--json]``: the turn and K turns either side (default 2).
- ``brief [--project P] [--json]``: each project's always-on brief, one line per
  standing item, starting with the handle of the turn it stands on.

Every header line escapes control characters (`printable`); a turn's text is printed
line by line with them escaped too (tabs kept), so a session cannot drive the terminal.
Exit 0 (no hit too), 1 no store or no such handle, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime

from taguru_ray.cli.args import OneLineParser, whole_number
from taguru_ray.errors import EXIT_OK, prefix
from taguru_ray.sessions.events import AGENTS, Event
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.index_records import BadHandle, Handle, parse_handle, turn_handle
from taguru_ray.sessions.memory import Card, MemoryStore
from taguru_ray.sessions.recall import recall
from taguru_ray.text.terminal import printable

RECALL, BRIEF = prefix("sessions recall"), prefix("sessions brief")


def _parser(verb: str, description: str) -> OneLineParser:
    parser = OneLineParser(
        prog=f"taguru-ray sessions {verb}", description=description, allow_abbrev=False,
        label=f"sessions {verb}",
    )  # fmt: skip
    parser.add_argument("--store", metavar="DIR", required=True, help="the store's folder")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    return parser


def recall_parser() -> OneLineParser:
    parser = _parser("recall", "Turns holding QUERY, each with a one-sentence brief.")
    parser.add_argument("query", metavar="QUERY", help='words; a "quoted phrase" stays whole')
    parser.add_argument(
        "--limit", metavar="N", type=whole_number, default=10, help="lines (default 10)"
    )
    parser.add_argument("--agent", choices=AGENTS, help="only this agent's sessions")
    return parser


def replay_parser() -> OneLineParser:
    parser = _parser("replay", "The turns FROM..TO of a session, verbatim.")
    parser.add_argument("handle", metavar="HANDLE", help="cc:<id> (a #<seq> is ignored)")
    parser.add_argument("--from", dest="first", metavar="N", type=whole_number, required=True,
                        help="the first turn")  # fmt: skip
    parser.add_argument("--to", dest="last", metavar="M", type=whole_number, required=True,
                        help="the last turn (clipped to the session)")  # fmt: skip
    return parser


def expand_parser() -> OneLineParser:
    parser = _parser("expand", "A turn and K turns either side, verbatim.")
    parser.add_argument("handle", metavar="HANDLE#SEQ", help="cc:<id>#<seq>")
    parser.add_argument("-C", "--context", dest="context", metavar="K", type=whole_number,
                        default=2, help="turns either side (default 2)")  # fmt: skip
    return parser


def brief_parser() -> OneLineParser:
    parser = _parser("brief", "Each project's always-on brief, written by sessions extract.")
    parser.add_argument("--project", metavar="P", help="only this project (project:<name>)")
    return parser


# ---------------------------------------------------------------- verbs


def recall_verb(args: argparse.Namespace) -> int:
    with SessionStore(args.store) as store, MemoryStore(args.store) as memory:
        found = recall(store, memory, args.query, limit=args.limit, agent=args.agent)
    if args.json:
        body = {"query": args.query, "hits": [asdict(r) for r in found]}
        print(json.dumps(body, ensure_ascii=False))
        return EXIT_OK
    if not found:
        print(f"{RECALL}no turn holds {printable(args.query)!r}", file=sys.stderr)
    for item in found:
        brief = {"brief": item.brief, "pending": "pending", "no_fact": "-"}[item.state]
        print(f"{item.handle}  {when(item.ts_ms)}  {printable(brief or '')}")
    if any(item.state == "pending" for item in found):
        print(f"{RECALL}pending: no extraction of those sessions yet — 'taguru-ray sessions "
              "extract' with a model writes their briefs; the handles expand now",
              file=sys.stderr)  # fmt: skip
    return EXIT_OK


def replay_verb(args: argparse.Namespace) -> int:
    with SessionStore(args.store) as store:
        target, events = store.between(args.handle, args.first, args.last)
    return _turns(args, target, events, mark=None)


def expand_verb(args: argparse.Namespace) -> int:
    target = parse_handle(args.handle)
    if target.seq is None:
        raise BadHandle(f"{args.handle!r}: expand needs a turn — give HANDLE#SEQ, e.g. cc:3f2a#12")
    with SessionStore(args.store) as store:
        target = store.resolve(target)
        events = store.show(target, context=args.context)
    return _turns(args, target, events, mark=target.seq)


def brief_verb(args: argparse.Namespace) -> int:
    with SessionStore(args.store), MemoryStore(args.store) as memory:
        projects = [args.project] if args.project else memory.projects()
        briefs = [memory.brief(project) for project in projects]
    if args.json:
        print(json.dumps({"briefs": [asdict(b) for b in briefs]}, ensure_ascii=False))
        return EXIT_OK
    if not briefs:
        print(f"{BRIEF}no brief yet: 'taguru-ray sessions extract' with a model writes one per "
              "project", file=sys.stderr)  # fmt: skip
    for index, brief in enumerate(briefs):
        if index:
            print()
        if brief.lines is None:
            print(f"brief {printable(brief.project)}  pending")
            continue
        print(f"brief {printable(brief.project)}  {brief.cards} card(s)  "
              f"{printable(brief.model or '-')}")  # fmt: skip
        for line in brief.lines:
            print(f"{line.handle}  {printable(line.text)}")
    return EXIT_OK


# ---------------------------------------------------------------- printing


def print_card(card: Card) -> None:
    """A written card, one line per item, each starting with the handle of its turn."""
    print(f"card {card.handle}  {len(card.lines or ())} line(s)  {printable(card.model or '-')}")
    for line in card.lines or ():
        print(f"{card.handle}#{line.seq}  {line.kind}  "
              f"{printable(line.subject)}: {printable(line.text)}")  # fmt: skip


def card_json(card: Card) -> dict[str, object]:
    return {"pending": card.pending, **asdict(card)}


def print_turns(target: Handle, events: Sequence[Event], mark: int | None) -> None:
    for index, event in enumerate(events):
        tool = f" {printable(event.tool.name)}" if event.tool else ""
        arrow = "  ◀" if event.seq == mark else ""
        handle = printable(turn_handle(target.agent, target.session_id, event.seq))
        if index:
            print()
        print(f"{handle}  {when(event.ts_ms)}  {printable(event.speaker_id)}  {event.kind}"
              f"{tool}{arrow}")  # fmt: skip
        for line in event.text.split("\n"):
            print("\t".join(printable(part) for part in line.split("\t")))


def _turns(
    args: argparse.Namespace, target: Handle, events: Sequence[Event], mark: int | None
) -> int:
    if args.json:
        turns = [
            {"handle": turn_handle(target.agent, target.session_id, e.seq), **asdict(e)}
            for e in events
        ]
        print(json.dumps({"handle": str(target), "turns": turns}, ensure_ascii=False))
        return EXIT_OK
    print_turns(target, events, mark)
    return EXIT_OK


def when(ts_ms: int | None) -> str:
    """UTC ISO 8601 to the second; ``-`` when the agent recorded no time."""
    if ts_ms is None:
        return "-"
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
