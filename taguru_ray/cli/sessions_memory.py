"""The step after `sessions extract`'s run: facts into the store, then the model's cards
and briefs for whatever is pending.

1. Each session's checked facts are read back from its trace (``OUT/.extract-trace``,
   the ``fact`` lines program.py writes) and stored beside its turns (`MemoryStore`),
   but only when every quote is still verbatim in the stored turn and the turn count
   matches: a trace left by an earlier run over a since-changed session is not the
   session's (it stays pending). A session written in parts (`parts.py`) has a trace
   per part: its facts are every part's, in part order, stored once — and only when
   every part's trace reads, else the session stays pending rather than remember a
   part's facts as the whole session's.
2. Every session whose card is pending (no card made from its current facts) gets one
   card ask; every project whose brief is pending gets one brief ask (`card.py`).
   They go through extract's own client and settings (`ChatClient.of`: endpoints, key,
   timeouts, the transport retry policy) from this driver, not through the engine:
   the engine's program is per segment, and a brief spans sessions (ADR 0052).

Every ask is logged, once settled, in ``STORE/.ledger/memory.jsonl`` (`ledger.append_ask`:
what, about whom, model, tokens, seconds, state ``written``, ``unreadable`` or the
transport's outcome) — these asks go around the engine's attempts log, and a user should
still see what they cost; the run's summary line counts them.

No answer, an unreadable one, or no endpoint at all leaves the card or brief pending and
says so; the next `sessions extract` asks for exactly those again (the extraction
itself is then "unchanged" and asks nothing). The first transport failure stops the
asking: an endpoint that is down is not asked once per session.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec

from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.names import TRACE, join, output_name
from taguru_ray.contract.settings import Settings
from taguru_ray.sessions import ledger
from taguru_ray.sessions.card import (
    Kept,
    brief_messages,
    card_messages,
    read_brief,
    read_card,
)
from taguru_ray.sessions.checks import collapse
from taguru_ray.sessions.events import Session
from taguru_ray.sessions.index_records import turn_handle
from taguru_ray.sessions.memory import Card, Fact, MemoryStore, cards_digest
from taguru_ray.sessions.source import tags_of
from taguru_ray.text.terminal import printable

if TYPE_CHECKING:
    from taguru_ray.llm.client import ChatClient

PROJECT_TAGS = ("project:", "repo:")


@dataclass
class Tally:
    cards: int = 0
    briefs: int = 0
    pending_cards: int = 0
    pending_briefs: int = 0
    asked: int = 0  # card and brief asks sent, each logged (`ledger.append_ask`)
    tokens: int = 0  # their total tokens, as the endpoint reported them
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"memory: {self.cards} card(s) and {self.briefs} brief(s) written; "
            f"{self.pending_cards} card(s) and {self.pending_briefs} brief(s) pending; "
            f"{self.asked} ask(s), {self.tokens} token(s), {self.seconds:.1f} s"
        )


def project_of(session: Session) -> str | None:
    """The project a session belongs to: its project (or repo) tag, None for none."""
    return next((tag for tag in tags_of(session) if tag.startswith(PROJECT_TAGS)), None)


def trace_facts(out: str, session: Session) -> list[Fact] | None:
    """The session's facts from its trace; None when there is no trace of this session
    as stored (none written, unreadable, or of other turns)."""
    path = join(join(out, TRACE), output_name(session.source))
    try:
        with fsspec.open(path, "rb") as handle:
            lines = [json.loads(line) for line in handle.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    head = lines[0] if lines else {}
    if head.get("source") != session.source or head.get("turns") != len(session.events):
        return None
    texts = {event.seq: collapse(event.text) for event in session.events}
    facts = []
    for line in lines[1:]:
        if line.get("type") != "fact":
            continue
        try:
            fact = Fact(int(line["seq"]), line["quote"], line["subject"], line["predicate"],
                        line["value"])  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None
        if collapse(fact.quote) not in texts.get(fact.seq, "\0"):
            return None  # a trace of other turns: not this session's facts
        facts.append(fact)
    return facts


def by_session(sessions: Sequence[Session]) -> list[list[Session]]:
    """The staged sessions grouped by session, each group's parts in part order."""
    groups: dict[tuple[str, str], list[Session]] = {}
    for session in sessions:
        groups.setdefault((session.agent, session.session_id), []).append(session)
    return [sorted(parts, key=lambda part: part.part or 0) for parts in groups.values()]


def session_facts(out: str, parts: Sequence[Session]) -> list[Fact] | None:
    """A session's facts from the trace of each of its parts (one, when written whole);
    None when any part's trace is not this session's as stored."""
    facts: list[Fact] = []
    for part in parts:
        found = trace_facts(out, part)
        if found is None:
            return None
        facts += found
    return facts


def remember(
    store_dir: str, settings: Settings, sessions: Sequence[Session], say: Callable[[str], None]
) -> Tally:
    """Store the sessions' facts, then write the pending cards and briefs if a model is
    there to ask. `say` hears one line per thing left pending and why."""
    with MemoryStore(store_dir) as memory:
        for parts in by_session(sessions):
            facts = session_facts(settings.source.out, parts)
            if facts is not None:
                first = parts[0]
                memory.put_facts(first.agent, first.session_id, project_of(first), facts)
        transport = settings.transport
        if not transport.endpoints or settings.records.replay_mode != "off":
            tally = Tally(pending_cards=len(memory.pending_cards()))
            if tally.pending_cards:
                say(f"{tally.pending_cards} memory card(s) pending: no live model to ask "
                    "(replay or no endpoint) — a later sessions extract writes them")  # fmt: skip
            return tally
        return asyncio.run(_Asker(memory, settings, say, store_dir).run())


class _Asker:
    """The card and brief asks of one run, one at a time, stopping at the first
    transport failure."""

    def __init__(
        self,
        memory: MemoryStore,
        settings: Settings,
        say: Callable[[str], None],
        store_dir: str | Path,
    ) -> None:
        self.memory, self.settings, self.say, self.store_dir = memory, settings, say, store_dir
        self.tally = Tally()
        self.down: str | None = None  # why the endpoint is not answering, once it is not

    async def run(self) -> Tally:
        from taguru_ray.llm.client import ChatClient, open_session

        async with open_session() as http:
            return await self.asks(ChatClient.of(http, self.settings.transport))

    async def asks(self, client: ChatClient) -> Tally:
        """The pending cards, then the pending briefs, through `client`."""
        for agent, session_id, facts_sha256 in self.memory.pending_cards():
            await self._card(client, agent, session_id, facts_sha256)
        for project, cards in self.memory.project_cards().items():
            if self.memory.brief(project).lines is None and cards:
                await self._brief(client, project, cards)
        return self.tally

    async def _card(
        self, client: ChatClient, agent: str, session_id: str, facts_sha256: str
    ) -> None:
        handle = turn_handle(agent, session_id)
        facts = self.memory.facts(agent, session_id) or []
        if not facts:  # nothing stated, nothing to ask: an empty card, written by code
            self.tally.cards += self.memory.put_card(agent, session_id, facts_sha256, [], None)
            return
        text, asked = await self._ask(client, card_messages(handle, facts), "card", handle)
        kept = read_card(text, facts) if text is not None else None
        self._log(asked, kept)
        if kept is None or not kept.readable:
            self.tally.pending_cards += 1
            if kept is not None:
                why = printable(kept.removed[0])
                self.say(f"{handle}: card pending — the answer was unreadable ({why}); "
                         "a later sessions extract asks again")  # fmt: skip
            return
        model = self.settings.transport.model
        self.tally.cards += self.memory.put_card(agent, session_id, facts_sha256, kept.lines, model)  # type: ignore[arg-type]

    async def _brief(self, client: ChatClient, project: str, cards: list[Card]) -> None:
        if not any(card.lines for card in cards):  # cards with no line: an empty brief
            self.memory.put_brief(project, cards_digest(cards), [], None)
            self.tally.briefs += 1
            return
        text, asked = await self._ask(client, brief_messages(project, cards), "brief", project)
        kept = read_brief(text, cards) if text is not None else None
        self._log(asked, kept)
        if kept is None or not kept.readable:
            self.tally.pending_briefs += 1
            if kept is not None:
                self.say(f"{printable(project)}: brief pending — the answer was unreadable; "
                         "a later sessions extract asks again")  # fmt: skip
            return
        model = self.settings.transport.model
        self.memory.put_brief(project, cards_digest(cards), kept.lines, model)  # type: ignore[arg-type]
        self.tally.briefs += 1

    async def _ask(
        self, client: ChatClient, messages: list[dict[str, str]], what: str, about: str
    ) -> tuple[str | None, dict[str, Any] | None]:
        """The answer's text, None (said once) when the endpoint gave none; and the ask's
        record for the log, None when it was not sent (the endpoint is down)."""
        if self.down is not None:
            return None, None
        max_tokens = self.settings.ladder.max_output_tokens or None
        completion = await client.complete(CompletionRequest(messages, max_tokens=max_tokens))
        state = "empty" if completion.outcome == "answer" else completion.outcome
        asked = {"what": what, "about": about, "model": self.settings.transport.model,
                 "state": state, "input_tokens": completion.input_tokens,
                 "output_tokens": completion.output_tokens,
                 "total_tokens": completion.total_tokens,
                 "seconds": round(completion.elapsed_seconds, 3)}  # fmt: skip
        if completion.outcome == "answer":  # an empty one stays pending; the endpoint is up
            return completion.text or None, asked
        self.down = completion.error or completion.outcome
        self.say(f"{printable(about)}: {what} pending — no answer ({printable(self.down)}); "
                 "the rest stay pending too, and a later sessions extract writes them")  # fmt: skip
        return None, asked

    def _log(self, asked: dict[str, Any] | None, kept: Kept | None) -> None:
        """The settled ask into the store's log and the tally; `kept` what code kept of
        its answer (None: no answer to read)."""
        if asked is None:
            return
        if kept is not None:
            asked["state"] = "written" if kept.readable else "unreadable"
        ledger.append_ask(self.store_dir, asked)
        self.tally.asked += 1
        self.tally.tokens += asked["total_tokens"] or 0
        self.tally.seconds += asked["seconds"]
