"""``taguru-ray sessions extract --store DIR --out OUT --context ID [extract's flags]``.

Every session of the store (or those named by ``--agent`` / ``--session``) becomes
one segment of an extract run on Ray: the engine, the gateway, the attempts log,
checkpoints, the lock and Ctrl+C are extract's; the program per session is
`sessions/program.py` (batches of turns, the v4 contract, code checks, review).
Extract's model, transport, scale and records flags apply; the flags that shape
extract's own prompt or passage (``--questions``, ``--chunk-context``, ``--tag``,
``--source-id``, …) do not, and are refused rather than ignored. After the run,
each written session's fact count goes back to the store (``sessions list``).
Exit codes are extract's: 0, 1 a session failed (a rerun resumes at its break),
2 usage, 130 stopped.

Its own flags: ``--store DIR`` the session store (give it once); ``--agent A`` only
that agent's sessions (claude-code, codex, openai-chat; repeatable); ``--session H``
only that session, by handle or id (repeatable). Every other flag is extract's:
``taguru-ray extract --help`` lists them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from taguru_ray.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MESSAGE_PREFIX,
    TaguruRayError,
    UsageError,
)

PREFIX = "taguru-ray: sessions extract: "
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


def split(argv: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """The sessions flags (--store, --agent, --session) apart from extract's."""
    own: dict[str, list[str]] = {"--store": [], "--agent": [], "--session": []}
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
        return _run(own["--store"][0], own["--agent"], own["--session"], rest)
    except TaguruRayError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            f"{MESSAGE_PREFIX}interrupted — checkpointed batches are kept; rerun to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


def _run(store_dir: str, agents: list[str], handles: list[str], rest: list[str]) -> int:
    from taguru_ray.cli.extract import parse_flags
    from taguru_ray.sessions.index import SessionStore
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
    sessions = [store.session(row.agent, row.session_id) for row in chosen]
    staged = {session.source: stage(session) for session in sorted(sessions, key=_name)}
    if settings.run.dry_run:
        return _plan(sessions)
    from taguru_ray.engine.driver import Console, extract

    code = extract(settings, Console(), staged)
    _count_facts(store, settings.source.out, sessions)
    _remember(store_dir, settings, sessions)
    return code


def _remember(store_dir: str, settings: Any, sessions: Sequence[Any]) -> None:
    """The facts into the store, then the pending memory cards and briefs (memory_run)."""
    from taguru_ray.sessions.memory_run import remember

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


def _plan(sessions: Sequence[Any]) -> int:
    from taguru_ray.sessions.batches import candidates, cut

    for session in sessions:
        turns = candidates(session.events)
        batches = cut(turns)
        print(
            f"{session.source}: {len(turns)} turn(s) to read in {len(batches)} batch(es), "
            f"{len(batches)} ask(s) + one review per fact — dry run, nothing asked"
        )
    return 0


def _count_facts(store: Any, out: str, sessions: Sequence[Any]) -> None:
    """Each written session's association count into the store (what `list` shows)."""
    import fsspec

    from taguru_ray.contract.names import output_name
    from taguru_ray.contract.source_file import parse_source_file

    for session in sessions:
        path = out.rstrip("/") + "/" + output_name(session.source)
        try:
            with fsspec.open(path, "rb") as handle:
                parsed = parse_source_file(handle.read(), name=path, strict=False)
        except (OSError, ValueError):
            continue
        store.set_facts(session.agent, session.session_id, len(parsed.associations))
