"""`SessionStore`: the sessions of one store folder, every turn in a full-text index.

Import writes here and nothing else needs a model (seed 004, "No LLM"): `put` stores a
converted `Session` in one transaction — its row, its turns and their index rows —
so a killed import leaves each session whole or absent. It is keyed by (agent,
session_id): the same file converted the same way again changes nothing; a changed
one replaces the session's turns and index rows and clears its fact count.
"The same" is a fingerprint of the whole conversion (`fingerprint`), not the
file's digest alone: the same bytes re-imported under a new ``--redact-rules``
rule mask differently, and must replace the turns that still hold the secret. `sessions`,
`search`, `show` and `events` read; `set_facts` is extraction's one write.

Search ranks by FTS5's bm25 over the trigram index, ties by session (agent,
session_id) then seq, so the same store answers the same order; words shorter than
a trigram are matched by LIKE (`index_query`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from taguru_ray.sessions import index_rows, index_schema
from taguru_ray.sessions.events import Event, Session, annotated
from taguru_ray.sessions.index_query import (
    fts_match,
    like_pattern,
    query_words,
    split_words,
)
from taguru_ray.sessions.index_records import (
    BadQuery,
    Handle,
    HandleNotFound,
    Hit,
    SessionRow,
    StoreNotFound,
    parse_handle,
    turn_handle,
)
from taguru_ray.sqlite_wal import connect, opening

Put = Literal["added", "replaced", "unchanged"]


class SessionStore:
    """Every session of one store folder (``<folder>/taguru-sessions.sqlite3``)."""

    def __init__(self, folder: str | Path, *, create: bool = False) -> None:
        """Open the folder's store; without `create`, a folder holding none raises
        StoreNotFound (naming the import that makes one) instead of making it."""
        self.path = index_schema.store_file(folder)
        if not create and not self.path.is_file():
            raise StoreNotFound(
                f"{folder}: no session store here — make one with "
                f"'taguru-ray sessions import PATH… --store {folder}'"
            )
        with opening(folder, self.path, "session store"):  # one line, not a traceback
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = connect(self.path)
            try:
                index_schema.create(conn, self.path)
            except BaseException:
                conn.close()
                raise
        self._conn = conn

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _transaction(self, begin: str = "BEGIN") -> Iterator[sqlite3.Connection]:
        self._conn.execute(begin)
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # ------------------------------------------------------------ writes

    def put(self, session: Session, inputs: str | None = None) -> Put:
        """Store a converted session: "added", "replaced" (its turns and index rows
        rewritten, its fact count cleared) or "unchanged" (the same conversion of the
        same bytes: nothing written). `inputs`: the key of what the conversion read
        (`imported` finds the session by it), None for none."""
        mark = index_rows.fingerprint(session)
        with self._transaction("BEGIN IMMEDIATE") as conn:
            row = conn.execute(
                "SELECT id, fingerprint FROM sessions WHERE agent = ? AND session_id = ?",
                (session.agent, session.session_id),
            ).fetchone()
            if row is not None and row[1] == mark:
                conn.execute("UPDATE sessions SET inputs = ? WHERE id = ?", (inputs, row[0]))
                return "unchanged"
            values = (
                session.file,
                session.digest,
                mark,
                session.started_ms,
                session.cwd,
                session.branch,
                session.model,
                json.dumps(list(session.masked), ensure_ascii=False),
                session.allowlist,
                inputs,
                len(session.events),
            )
            if row is None:
                key = conn.execute(
                    "INSERT INTO sessions (agent, session_id, file, digest, fingerprint,"
                    " started_ms, cwd, branch, model, masked, allowlist, inputs, turns)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (session.agent, session.session_id, *values),
                ).lastrowid
            else:
                key = row[0]
                conn.execute(
                    "INSERT INTO events_fts (events_fts, rowid, text)"
                    " SELECT 'delete', id, text FROM events WHERE session = ?",
                    (key,),
                )
                conn.execute("DELETE FROM events WHERE session = ?", (key,))
                conn.execute(
                    "UPDATE sessions SET file = ?, digest = ?, fingerprint = ?,"
                    " started_ms = ?, cwd = ?, branch = ?, model = ?, masked = ?,"
                    " allowlist = ?, inputs = ?, turns = ?, facts = NULL WHERE id = ?",
                    (*values, key),
                )
            conn.executemany(
                f"INSERT INTO events (session, {index_rows.EVENT_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((key, *index_rows.event_values(event)) for event in session.events),
            )
            conn.execute(
                "INSERT INTO events_fts (rowid, text) SELECT id, text FROM events"
                " WHERE session = ?",
                (key,),
            )
            return "added" if row is None else "replaced"

    def set_facts(self, agent: str, session_id: str, facts: int) -> None:
        """Record how many facts extraction wrote for the session (HandleNotFound if absent)."""
        with self._transaction("BEGIN IMMEDIATE") as conn:
            changed = conn.execute(
                "UPDATE sessions SET facts = ? WHERE agent = ? AND session_id = ?",
                (facts, agent, session_id),
            ).rowcount
        if not changed:
            raise self._no_session(Handle(agent, session_id))

    # ------------------------------------------------------------ reads

    def imported(self, inputs: str) -> SessionRow | None:
        """The session a conversion of these inputs stored, if one did (so importing the
        same file the same way again need not convert it)."""
        row = self._conn.execute(
            f"SELECT {index_rows.SESSION_COLUMNS} FROM sessions WHERE inputs = ? LIMIT 1", (inputs,)
        ).fetchone()
        return None if row is None else index_rows.session_row(row)

    def sessions(self) -> list[SessionRow]:
        """Every session, the earliest started first (unknown start last), then by handle."""
        rows = self._conn.execute(
            f"SELECT {index_rows.SESSION_COLUMNS} FROM sessions"
            " ORDER BY started_ms IS NULL, started_ms, agent, session_id"
        ).fetchall()
        return [index_rows.session_row(row) for row in rows]

    def session(self, agent: str, session_id: str) -> Session:
        """The stored session as it was put (HandleNotFound if absent)."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT id, file, digest, started_ms, cwd, branch, model, masked, allowlist"
                " FROM sessions WHERE agent = ? AND session_id = ?",
                (agent, session_id),
            ).fetchone()
            if row is None:
                raise self._no_session(Handle(agent, session_id))
            events = self._events(conn, row[0])
        _, file, digest, started_ms, cwd, branch, model, masked, allowlist = row
        return Session(
            agent,
            session_id,
            file,
            digest,
            events,
            started_ms=started_ms,
            cwd=cwd,
            branch=branch,
            model=model,
            masked=tuple(json.loads(masked)),
            allowlist=allowlist,
        )

    def events(self, agent: str, session_id: str) -> tuple[Event, ...]:
        """The session's turns in seq order (HandleNotFound if absent)."""
        return self.session(agent, session_id).events

    def search(self, query: str, limit: int = 20, agent: str | None = None) -> list[Hit]:
        """The turns holding every word of `query` (`index_query`), best first: bm25,
        then session, then seq. A query whose words are all shorter than a trigram
        scans every turn with LIKE, unranked (session, then seq)."""
        words = query_words(query)
        if not words:
            raise BadQuery("the search query is empty — give a word or phrase to look for")
        if limit < 1:
            raise BadQuery(f"--limit {limit}: give at least 1")
        indexed, short = split_words(words)
        where = [
            "s.agent = ?" if agent else None,
            *("e.text LIKE ? ESCAPE '\\'" for _ in short),
        ]
        params: list[Any] = [agent] if agent else []
        params += [like_pattern(word) for word in short]
        filters = " AND ".join(f for f in where if f)
        columns = "s.agent, s.session_id, e.seq, e.ts_ms, e.speaker_id, e.kind, e.text"
        if indexed:
            sql = (
                f"SELECT {columns}, bm25(events_fts) FROM events_fts"
                " JOIN events e ON e.id = events_fts.rowid JOIN sessions s ON s.id = e.session"
                f" WHERE events_fts MATCH ? {'AND ' + filters if filters else ''}"
                " ORDER BY bm25(events_fts), s.agent, s.session_id, e.seq LIMIT ?"
            )
            params = [fts_match(indexed), *params, limit]
        else:
            sql = (
                f"SELECT {columns}, NULL FROM events e JOIN sessions s ON s.id = e.session"
                f" WHERE {filters} ORDER BY s.agent, s.session_id, e.seq LIMIT ?"
            )
            params.append(limit)
        return [index_rows.hit(row, words) for row in self._conn.execute(sql, params).fetchall()]

    def show(self, handle: str | Handle, context: int = 2) -> list[Event]:
        """The handle's turn and `context` turns either side, verbatim, in seq order (the
        whole session for a handle without ``#seq``). A session id may be abbreviated to
        a prefix that names one session. HandleNotFound names what is there."""
        target = handle if isinstance(handle, Handle) else parse_handle(handle)
        if context < 0:
            raise BadQuery(f"--context {context}: give 0 or more turns")
        with self._transaction() as conn:
            key, session_id, turns = self._resolve(conn, target)
            source = f"session:{target.agent}:{session_id}"
            if target.seq is None:
                return list(annotated(self._events(conn, key), source))
            if target.seq >= turns:
                shown = turn_handle(target.agent, session_id, target.seq)
                raise HandleNotFound(
                    f"{shown}: the session has {turns} turns, #0 to #{turns - 1} "
                    f"— 'sessions show {turn_handle(target.agent, session_id)}' shows them all"
                )
            first, last = target.seq - context, target.seq + context
            # From #0: a turn's mentions hold the names earlier turns carried into it.
            events = annotated(self._events(conn, key, 0, last), source)
            return [event for event in events if event.seq >= first]

    def between(self, handle: str | Handle, first: int, last: int) -> tuple[Handle, list[Event]]:
        """The session's turns `first` to `last` (inclusive, clipped to the session), with
        the handle resolved in full; HandleNotFound when the session has no turn there."""
        target = handle if isinstance(handle, Handle) else parse_handle(handle)
        if first < 0 or last < first:
            raise BadQuery(f"--from {first} --to {last}: give 0 ≤ FROM ≤ TO")
        with self._transaction() as conn:
            key, session_id, turns = self._resolve(conn, target)
            if first >= turns:
                raise HandleNotFound(
                    f"{turn_handle(target.agent, session_id)}: the session has {turns} turns, "
                    f"#0 to #{turns - 1} — start --from within them"
                )
            events = list(self._events(conn, key, first, last))
        return Handle(target.agent, session_id), events

    def resolve(self, handle: str | Handle) -> Handle:
        """The handle with its session id in full (an abbreviated one expanded)."""
        target = handle if isinstance(handle, Handle) else parse_handle(handle)
        with self._transaction() as conn:
            _, session_id, _ = self._resolve(conn, target)
        return Handle(target.agent, session_id, target.seq)

    # ------------------------------------------------------------ helpers

    def _resolve(self, conn: sqlite3.Connection, target: Handle) -> tuple[int, str, int]:
        """(sessions.id, full session id, turns) of the handle's session."""
        row = conn.execute(
            "SELECT id, session_id, turns FROM sessions WHERE agent = ? AND session_id = ?",
            (target.agent, target.session_id),
        ).fetchone()
        if row is not None:
            return row
        rows = conn.execute(
            "SELECT id, session_id, turns FROM sessions WHERE agent = ?"
            " AND substr(session_id, 1, ?) = ? ORDER BY session_id LIMIT 3",
            (target.agent, len(target.session_id), target.session_id),
        ).fetchall()
        if len(rows) == 1:
            return rows[0]
        if rows:
            several = ", ".join(turn_handle(target.agent, r[1]) for r in rows[:2])
            raise HandleNotFound(
                f"{target}: that session id begins several ({several}, …) — give more of it"
            )
        raise self._no_session(target)

    def _no_session(self, target: Handle) -> HandleNotFound:
        folder = self.path.parent
        return HandleNotFound(
            f"{target}: no such session in {folder} "
            f"— 'taguru-ray sessions list --store {folder}' shows the handles"
        )

    @staticmethod
    def _events(
        conn: sqlite3.Connection, key: int, first: int | None = None, last: int | None = None
    ) -> tuple[Event, ...]:
        """The session's turns in seq order, those from `first` to `last` when given."""
        select = f"SELECT {index_rows.EVENT_COLUMNS} FROM events WHERE session = ?"
        if first is None or last is None:
            rows = conn.execute(f"{select} ORDER BY seq", (key,)).fetchall()
        else:
            between = f"{select} AND seq BETWEEN ? AND ? ORDER BY seq"
            rows = conn.execute(between, (key, first, last)).fetchall()
        return tuple(index_rows.event(row) for row in rows)
