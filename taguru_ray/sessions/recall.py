"""`sessions recall QUERY`: the turns search finds, each with a one-sentence brief.

Seed 004 "04 / Use": recall gives a one-sentence brief, and every line starts with the
handle that expands to the source text. The brief is built by code from the checked
facts extraction left for that turn (`MemoryStore`): "subject predicate value." — each
word attested in the turn by extraction's checks, so no model is asked at recall time
and the same store answers the same bytes (ADR 0052). A turn of a session not
extracted yet (or re-imported since) is *pending*: its handle is still returned, so
recall is useful with no model at all; a turn of an extracted session that states no
fact has no brief.

Ranking: search's own (bm25 over the trigram index), over a pool of `POOL` times the
limit, then turns with a brief first, pending ones next, turns with no fact last —
each group keeping search's order, so the answer is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.index_records import Hit
from taguru_ray.sessions.memory import Fact, MemoryStore

POOL = 4  # search hits read per answer line: room for turns with a brief to rise
MAX_POOL = 400
BRIEF_CHARS = 240  # a brief is one line of a terminal's worth, give or take
State = Literal["brief", "pending", "no_fact"]
_ORDER: dict[str, int] = {"brief": 0, "pending": 1, "no_fact": 2}
_RUNS = re.compile(r"\s+")


@dataclass(frozen=True)
class Recalled:
    handle: str
    ts_ms: int | None
    speaker_id: str
    state: State
    brief: str | None  # None unless state is "brief"
    snippet: str  # the raw words around the match, as search shows them
    facts: tuple[Fact, ...] = field(default=())


def sentence(fact: Fact) -> str:
    """One sentence of a fact: its three fields, whitespace runs made one space, a full
    stop unless it ends in one, cut with ``…`` past `BRIEF_CHARS`."""
    text = _RUNS.sub(" ", f"{fact.subject} {fact.predicate} {fact.value}").strip()
    if len(text) > BRIEF_CHARS:
        return text[: BRIEF_CHARS - 1].rstrip() + "…"
    return text if text.endswith((".", "!", "?", "。", "！", "？", "…")) else text + "."


def recalled(hit: Hit, facts: Sequence[Fact] | None) -> Recalled:
    """A hit with its brief: `facts` None while its session is pending."""
    if facts is None:
        return Recalled(hit.handle, hit.ts_ms, hit.speaker_id, "pending", None, hit.snippet)
    if not facts:
        return Recalled(hit.handle, hit.ts_ms, hit.speaker_id, "no_fact", None, hit.snippet)
    return Recalled(
        hit.handle, hit.ts_ms, hit.speaker_id, "brief", sentence(facts[0]), hit.snippet,
        tuple(facts),
    )  # fmt: skip


def rank(found: Sequence[Recalled], limit: int) -> list[Recalled]:
    """Briefs first, then pending, then no fact; search's order within each (stable)."""
    return sorted(found, key=lambda r: _ORDER[r.state])[:limit]


def recall(
    store: SessionStore, memory: MemoryStore, query: str, limit: int = 10, agent: str | None = None
) -> list[Recalled]:
    """The turns holding every word of `query`, each with its brief or pending."""
    hits = store.search(query, limit=min(max(limit, limit * POOL), MAX_POOL), agent=agent)
    wanted: dict[tuple[str, str], list[int]] = {}
    for hit in hits:
        wanted.setdefault((hit.agent, hit.session_id), []).append(hit.seq)
    facts = {key: memory.turn_facts(*key, seqs) for key, seqs in wanted.items()}
    found = []
    for hit in hits:
        per_turn = facts[(hit.agent, hit.session_id)]
        found.append(recalled(hit, None if per_turn is None else per_turn[hit.seq]))
    return rank(found, limit)
