"""``taguru-ray sessions extract --store DIR --out OUT --context ID [extract's flags]``.

Every session of the store (or those named by ``--agent`` / ``--session``) becomes
one segment of an extract run on Ray: the engine, the gateway, the attempts log,
checkpoints, the lock and Ctrl+C are extract's; the program per session is
`sessions/program.py` (batches of turns, the model stages, the v4 contract, code
checks, review).
Extract's model, transport, scale and records flags apply; the flags that shape
extract's own prompt or passage (``--questions``, ``--chunk-context``, ``--tag``,
``--source-id``, …) do not, and are refused rather than ignored. After the run,
each written session's fact count goes back to the store (``sessions list``).
Exit codes are extract's: 0, 1 a session failed (a rerun resumes at its break),
2 usage, 130 stopped.

Its own flags: ``--store DIR`` the session store (give it once); ``--agent A`` only
that agent's sessions (claude-code, codex, openai-chat; repeatable); ``--session H``
only that session, by handle or id (repeatable); ``--stages LIST`` the model stages
to run, by name or L-number, comma-separated (``naming,fact,review``, ``L1,L6,L11``,
``all``); ``--passage dialogue|full`` what the source file's passage holds (default
dialogue: user and assistant text; full: every turn; a passage over import's 8 MiB
cap is written in parts, ``…/part-001``); ``--candidates KINDS`` kinds the model is
also asked about, comma-separated (tool_call, tool_result, thinking). Every other
flag is extract's: ``taguru-ray extract --help`` lists them.

The stages, one judgement each (L11 review runs last, over every row stage's drafts):
L1 naming · L2 alias · L3 reference · L4 disambiguation · L5 tone_role · L6 fact ·
L7 event · L8 relation · L9 state · L10 time · L11 review · L12 causality. The default
is the main line: naming, alias, fact, event, relation, state, time, causality, review.
Writing zero rows is an error: a session whose stated facts the checks all removed
writes nothing and fails (a session whose turns hold no fact writes its passage).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from taguru_ray.cli.args import OneLineParser
from taguru_ray.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MESSAGE_PREFIX,
    TaguruRayError,
    UsageError,
    prefix,
)

PREFIX = prefix("sessions extract")  # extract's: taguru: extract: (ADR 0058)
# The flags sessions extract reads itself, declared once; every other one is extract's.
OWN = ("--store", "--agent", "--session", "--stages", "--passage", "--candidates")
# Extract's flags a session run uses; every other one would shape what sessions do not have.
APPLIES = frozenset(
    {
        "paths",
        "out",
        "context",
        "name",
        "description",
        "config",
        "dry_run",
        "force",
        "max_output_tokens",
        "endpoints",
        "max_inflight",
        "rpm",
        "tpm",
        "address",
        "workers",
        "worker_resource",
        "segment_window",
        "diagnostics_out",
        "replay",
        "replay_from",
        "progress",
        "steps",
    }
)


def parser() -> OneLineParser:
    """The flags sessions extract takes, as argparse holds them, for shell completion (it
    never parses: `split` reads the own flags, extract's parser the rest): `OWN` as this
    module's docstring describes them, then extract's that apply (`APPLIES`)."""
    from taguru_ray.cli.extract import build_parser

    built = OneLineParser(prog="taguru-ray sessions extract", label="sessions extract")
    for flag in OWN:
        found = re.search(rf"``{flag} ([^`]+)``\s+([^;(]+)", __doc__ or "")
        metavar, text = found.groups() if found else ("VALUE", "")
        words = metavar.split("|") if "|" in metavar else None
        built.add_argument(
            flag,
            metavar=None if words else metavar,
            choices=words,
            help=" ".join(text.split()),
        )
    for action in build_parser()._actions:
        if action.dest in APPLIES and action.option_strings:
            built._add_action(action)
    return built


def split(argv: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The sessions flags (`OWN`) apart from extract's."""
    own: dict[str, list[str]] = {flag: [] for flag in OWN}
    rest: list[str] = []
    items = list(argv)
    while items:
        token = items.pop(0)
        flag, eq, value = token.partition("=")
        if flag in own:
            if not eq:
                if not items:
                    raise UsageError(f"{flag} needs a value")
                value = items.pop(0)
            own[flag].append(value)
        else:
            rest.append(token)
    return own, rest


def main(argv: Sequence[str]) -> int:
    if any(token in ("-h", "--help") for token in argv):
        print(__doc__)
        return 0
    try:
        own, rest = split(argv)
        if len(own["--store"]) != 1:
            raise UsageError("give the session store once: --store DIR")
        stages = _stages(own["--stages"])
        from taguru_ray.sessions.parts import writing_flags

        writing = writing_flags(own["--passage"], own["--candidates"])
        return _run(own["--store"][0], own["--agent"], own["--session"], stages, rest, writing)
    except TaguruRayError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            f"{MESSAGE_PREFIX}interrupted — checkpointed batches are kept; rerun to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


def _stages(given: list[str]) -> tuple[str, ...]:
    """--stages, given at most once (default: the main line)."""
    from taguru_ray.sessions.stages import MAIN_LINE, parse_stages

    if len(given) > 1:
        raise UsageError("give --stages once, comma-separated: --stages naming,fact,review")
    return parse_stages(given[0]) if given else MAIN_LINE


def _run(
    store_dir: str,
    agents: list[str],
    handles: list[str],
    stages: tuple[str, ...],
    rest: list[str],
    writing: tuple[str, tuple[str, ...]] = ("dialogue", ()),
) -> int:
    from taguru_ray.cli.extract import parse_flags
    from taguru_ray.sessions import ledger
    from taguru_ray.sessions.index import SessionStore
    from taguru_ray.sessions.parts import plan
    from taguru_ray.sessions.program import stage
    from taguru_ray.settings import resolve_settings
    from taguru_ray.store.config_file import read_config_file

    try:
        flags: dict[str, Any] = parse_flags([*rest, store_dir])
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    stray = sorted(k for k, v in flags.items() if k not in APPLIES and v not in (None, False, []))
    if stray:
        shown = ", ".join("--" + key.replace("_", "-") for key in stray)
        raise UsageError(
            f"{shown} does not apply to sessions (their prompt, passage and "
            "source ids are the session's own)"
        )
    settings = resolve_settings(flags, os.environ, read_config_file)
    store = SessionStore(store_dir)
    chosen = _chosen(store, agents, handles)
    if not chosen:
        raise UsageError(
            f"--store {store_dir}: no session to extract (sessions import "
            "… first, or check --agent/--session)"
        )
    # Each as its passage profile writes it: whole, or in parts under the import cap.
    stored = [store.session(row.agent, row.session_id) for row in chosen]
    sessions = [part for session in stored for part in plan(session, *writing)]
    staged = {session.source: stage(session, stages) for session in sorted(sessions, key=_name)}
    if settings.run.dry_run:
        return _plan(staged)
    from taguru_ray.engine.driver import Console, extract

    model = settings.transport.model
    ledger.open_run(store_dir, settings.source.out, sessions, model)  # P16: closes a killed one
    try:
        code = extract(settings, Console(), staged)
    finally:  # every ask the run finished, however it ended (a kill: the next run's open)
        ledger.close_run(store_dir, settings.source.out, sessions, model)
    _count_facts(store, settings.source.out, sessions)
    _remember(store_dir, settings, sessions)
    return code


def _remember(store_dir: str, settings: Any, sessions: Sequence[Any]) -> None:
    """The facts into the store, then the pending memory cards and briefs (memory_run)."""
    from taguru_ray.cli.sessions_memory import remember

    tally = remember(
        store_dir, settings, sessions, lambda line: print(PREFIX + line, file=sys.stderr)
    )
    print(f"{PREFIX}{tally.line()}", file=sys.stderr)


def _name(session: Any) -> str:
    return str(session.source)


def _chosen(store: Any, agents: list[str], handles: list[str]) -> list[Any]:
    rows = store.sessions()
    if agents:
        rows = [row for row in rows if row.agent in agents]
    if handles:
        wanted = set(handles)
        rows = [row for row in rows if row.handle in wanted or row.session_id in wanted]
    return rows


def _plan(staged: dict[str, bytes]) -> int:
    """What each session's run would ask, read from the bytes the run is given, with the
    run's own functions: its candidates (``--candidates``), batches and stages."""
    from taguru_ray.sessions.program import batches_of, settled_by_code, staged_stages, unstage
    from taguru_ray.sessions.stages import REVIEW, specs
    from taguru_ray.text.terminal import printable

    for source, data in staged.items():
        session, stages = unstage(data), specs(staged_stages(data))
        turns, batches = batches_of(session)
        asks = {
            spec.name: sum(not settled_by_code(spec, batch) for batch in batches)
            for spec in stages
            if spec is not REVIEW
        }
        asked = [name for name, count in asks.items() if count]
        review = " + one review per fact" if REVIEW in stages else ""
        print(
            f"{printable(source)}: {len(turns)} turn(s) to read in {len(batches)} batch(es), "
            f"at most {sum(asks.values())} ask(s) over {len(asked)} stage(s) "
            f"({', '.join(asked)}){review} — dry run, nothing asked"
        )
    return 0


def _count_facts(store: Any, out: str, sessions: Sequence[Any]) -> None:
    """Each written session's association count into the store (what `list` shows): a
    session written in parts (`…/part-001`, …) counts every part written, one sum."""
    import fsspec

    from taguru_ray.contract.names import output_name
    from taguru_ray.contract.source_file import parse_source_file

    totals: dict[tuple[str, str], int] = {}
    for session in sessions:
        path = out.rstrip("/") + "/" + output_name(session.source)
        try:
            with fsspec.open(path, "rb") as handle:
                parsed = parse_source_file(handle.read(), name=path, strict=False)
        except (OSError, ValueError):
            continue
        key = (session.agent, session.session_id)
        totals[key] = totals.get(key, 0) + len(parsed.associations)
    for (agent, session_id), facts in totals.items():
        store.set_facts(agent, session_id, facts)
