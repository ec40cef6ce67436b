"""`MemoryStore`: what extraction and the model left about each session, beside its turns.

Seed 004 "04 / Use": recall answers with one-sentence briefs, memory cards and the
always-on brief wait for a model, and nothing is lost while they wait. So all of it
lives in the session store's own SQLite file, in tables of its own (``memory_*``),
keyed by (agent, session_id) and stamped with what it was made from:

- a session's **facts** (the checked drafts `sessions extract` wrote, each with its
  seq and verbatim quote) carry the session's conversion fingerprint: a re-import
  that changed the session makes them stale — read as *pending*, never as facts of
  turns that are no longer there;
- its **card** carries the digest of the facts it was written from: new facts make it
  pending again;
- a project's **brief** carries the digest of the cards it was written from.

Pending is therefore never a flag to forget to clear: it is "no record made from
what is there now", computed on read, and a later `sessions extract` fills exactly
those (`cli/sessions_memory.py`). See ADR 0052.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from taguru_ray.sessions import index_schema
from taguru_ray.sessions.index_records import StoreNotFound, turn_handle
from taguru_ray.sqlite_wal import connect, opening

_TABLES = """
CREATE TABLE IF NOT EXISTS memory_sessions (
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,   -- sessions.fingerprint the facts were drawn from
    facts_sha256 TEXT NOT NULL,  -- digest of the facts below, in order
    project TEXT,                -- the project tag (project:<cwd basename>), NULL for none
    card TEXT,                   -- JSON array of card lines, NULL until a model wrote one
    card_facts_sha256 TEXT,      -- facts_sha256 the card was written from
    card_model TEXT,
    PRIMARY KEY (agent, session_id)
);
CREATE TABLE IF NOT EXISTS memory_facts (
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    ord INTEGER NOT NULL,        -- the trace's order
    seq INTEGER NOT NULL,
    quote TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (agent, session_id, ord)
);
CREATE INDEX IF NOT EXISTS memory_facts_by_turn ON memory_facts (agent, session_id, seq);
CREATE TABLE IF NOT EXISTS memory_briefs (
    project TEXT PRIMARY KEY,
    cards_sha256 TEXT NOT NULL,  -- digest of the project's cards it was written from
    lines TEXT NOT NULL,         -- JSON array of brief lines
    model TEXT
);
"""


@dataclass(frozen=True)
class Fact:
    """One checked fact of a session: its turn, the verbatim quote, the triple."""

    seq: int
    quote: str
    subject: str
    predicate: str
    value: str


@dataclass(frozen=True)
class CardLine:
    """One line of a memory card: what the turn `seq` decided, changed or learned."""

    seq: int
    kind: str  # decided | changed | learned
    subject: str
    text: str  # one sentence


@dataclass(frozen=True)
class BriefLine:
    """One line of a project's always-on brief, citing the turn it stands on."""

    handle: str  # cc:<id>#<seq>
    text: str  # one sentence


@dataclass(frozen=True)
class Card:
    """A session's card: `lines` None while pending (no card made from its current facts)."""

    handle: str
    project: str | None
    lines: tuple[CardLine, ...] | None
    model: str | None = None

    @property
    def pending(self) -> bool:
        return self.lines is None


@dataclass(frozen=True)
class Brief:
    project: str
    lines: tuple[BriefLine, ...] | None  # None while pending
    model: str | None = None
    cards: int = 0  # the written cards it stands on


def digest(value: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()


class MemoryStore:
    """The ``memory_*`` tables of one session store folder (it must exist: import first)."""

    def __init__(self, folder: str | Path) -> None:
        path = index_schema.store_file(folder)
        if not path.is_file():
            raise StoreNotFound(
                f"{folder}: no session store here — make one with "
                f"'taguru-ray sessions import PATH… --store {folder}'"
            )
        with opening(folder, path, "session store"):
            conn = connect(path)
            try:
                with _transaction(conn) as c:  # not executescript: it commits on its own
                    for statement in _TABLES.split(";"):
                        if statement.strip():
                            c.execute(statement)
            except BaseException:
                conn.close()
                raise
        self._conn = conn

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ facts

    def put_facts(
        self, agent: str, session_id: str, project: str | None, facts: Sequence[Fact]
    ) -> bool:
        """Record the session's checked facts as of its stored conversion; False when the
        session is not in the store. A card made from other facts turns pending."""
        rows = [asdict(f) for f in facts]
        with _transaction(self._conn) as conn:
            found = conn.execute(
                "SELECT fingerprint FROM sessions WHERE agent = ? AND session_id = ?",
                (agent, session_id),
            ).fetchone()
            if found is None:
                return False
            conn.execute(
                "INSERT INTO memory_sessions"
                " (agent, session_id, fingerprint, facts_sha256, project) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (agent, session_id) DO UPDATE SET"
                " fingerprint = excluded.fingerprint, facts_sha256 = excluded.facts_sha256,"
                " project = excluded.project",
                (agent, session_id, found[0], digest(rows), project),
            )
            conn.execute(
                "DELETE FROM memory_facts WHERE agent = ? AND session_id = ?", (agent, session_id)
            )
            conn.executemany(
                "INSERT INTO memory_facts (agent, session_id, ord, seq, quote, subject,"
                " predicate, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (agent, session_id, i, f.seq, f.quote, f.subject, f.predicate, f.value)
                    for i, f in enumerate(facts)
                ],
            )
        return True

    def facts(self, agent: str, session_id: str) -> list[Fact] | None:
        """The session's facts, None while pending (never extracted, or re-imported since)."""
        if self._current(agent, session_id) is None:
            return None
        rows = self._conn.execute(
            "SELECT seq, quote, subject, predicate, value FROM memory_facts"
            " WHERE agent = ? AND session_id = ? ORDER BY ord",
            (agent, session_id),
        ).fetchall()
        return [Fact(*row) for row in rows]

    def turn_facts(
        self, agent: str, session_id: str, seqs: Sequence[int]
    ) -> dict[int, list[Fact]] | None:
        """Per seq asked, its facts ([] for none); None while the session is pending."""
        if self._current(agent, session_id) is None:
            return None
        marks = ", ".join("?" for _ in seqs)
        rows = self._conn.execute(
            "SELECT seq, quote, subject, predicate, value FROM memory_facts"
            f" WHERE agent = ? AND session_id = ? AND seq IN ({marks}) ORDER BY ord",
            (agent, session_id, *seqs),
        ).fetchall()
        found: dict[int, list[Fact]] = {seq: [] for seq in seqs}
        for row in rows:
            found[row[0]].append(Fact(*row))
        return found

    # ------------------------------------------------------------ cards

    def card(self, agent: str, session_id: str) -> Card | None:
        """The session's card; None when its facts are pending (nothing to write from)."""
        row = self._current(agent, session_id)
        if row is None:
            return None
        facts_sha256, project, card, card_sha256, model = row
        handle = turn_handle(agent, session_id)
        if card is None or card_sha256 != facts_sha256:
            return Card(handle, project, None)
        return Card(handle, project, tuple(CardLine(**line) for line in json.loads(card)), model)

    def pending_cards(self) -> list[tuple[str, str, str]]:
        """(agent, session_id, facts_sha256) of each session with current facts and no card
        made from them, in handle order."""
        rows = self._conn.execute(
            "SELECT m.agent, m.session_id, m.facts_sha256 FROM memory_sessions m"
            " JOIN sessions s ON s.agent = m.agent AND s.session_id = m.session_id"
            " WHERE s.fingerprint = m.fingerprint"
            " AND (m.card IS NULL OR m.card_facts_sha256 IS NOT m.facts_sha256)"
            " ORDER BY m.agent, m.session_id"
        ).fetchall()
        return [tuple(row) for row in rows]

    def put_card(
        self,
        agent: str,
        session_id: str,
        facts_sha256: str,
        lines: Sequence[CardLine],
        model: str | None,
    ) -> bool:
        """Store a card written from the facts of digest `facts_sha256`; False (nothing
        stored) when the session's facts changed meanwhile."""
        with _transaction(self._conn) as conn:
            changed = conn.execute(
                "UPDATE memory_sessions SET card = ?, card_facts_sha256 = ?, card_model = ?"
                " WHERE agent = ? AND session_id = ? AND facts_sha256 = ?",
                (
                    json.dumps([asdict(line) for line in lines], ensure_ascii=False),
                    facts_sha256,
                    model,
                    agent,
                    session_id,
                    facts_sha256,
                ),
            ).rowcount
        return bool(changed)

    # ------------------------------------------------------------ briefs

    def project_cards(self) -> dict[str, list[Card]]:
        """Per project, its sessions' written cards (current ones), in handle order."""
        rows = self._conn.execute(
            "SELECT m.agent, m.session_id, m.project FROM memory_sessions m"
            " JOIN sessions s ON s.agent = m.agent AND s.session_id = m.session_id"
            " WHERE s.fingerprint = m.fingerprint AND m.project IS NOT NULL"
            " ORDER BY m.project, s.started_ms IS NULL, s.started_ms, m.agent, m.session_id"
        ).fetchall()
        found: dict[str, list[Card]] = {}
        for agent, session_id, project in rows:
            card = self.card(agent, session_id)
            found.setdefault(project, [])
            if card is not None and not card.pending:
                found[project].append(card)
        return found

    def brief(self, project: str) -> Brief:
        """The project's brief: pending (lines None) when none was written from its
        current cards."""
        cards = self.project_cards().get(project, [])
        row = self._conn.execute(
            "SELECT cards_sha256, lines, model FROM memory_briefs WHERE project = ?", (project,)
        ).fetchone()
        if row is None or not cards or row[0] != cards_digest(cards):
            return Brief(project, None, cards=len(cards))
        lines = tuple(BriefLine(**line) for line in json.loads(row[1]))
        return Brief(project, lines, row[2], len(cards))

    def put_brief(
        self, project: str, cards_sha256: str, lines: Sequence[BriefLine], model: str | None
    ) -> None:
        with _transaction(self._conn) as conn:
            conn.execute(
                "INSERT INTO memory_briefs (project, cards_sha256, lines, model)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (project) DO UPDATE SET"
                " cards_sha256 = excluded.cards_sha256,"
                " lines = excluded.lines, model = excluded.model",
                (
                    project,
                    cards_sha256,
                    json.dumps([asdict(line) for line in lines], ensure_ascii=False),
                    model,
                ),
            )

    def projects(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT DISTINCT project FROM memory_sessions"
            " WHERE project IS NOT NULL ORDER BY project"
        ).fetchall()
        return [row[0] for row in rows]

    # ------------------------------------------------------------ helpers

    def _current(self, agent: str, session_id: str) -> tuple[Any, ...] | None:
        """The session's memory row when its facts match its stored conversion."""
        return self._conn.execute(
            "SELECT m.facts_sha256, m.project, m.card, m.card_facts_sha256, m.card_model"
            " FROM memory_sessions m JOIN sessions s"
            " ON s.agent = m.agent AND s.session_id = m.session_id"
            " WHERE m.agent = ? AND m.session_id = ? AND s.fingerprint = m.fingerprint",
            (agent, session_id),
        ).fetchone()


def cards_digest(cards: Sequence[Card]) -> str:
    """What a brief is keyed by: its cards' handles and lines."""
    return digest([[c.handle, [asdict(line) for line in c.lines or ()]] for c in cards])


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
