"""The Taguru source file one session becomes (SESSIONS.md §8).

The passage is the session's turns — those its profile writes (`parts.py`) — one
block per turn headed by its handle, speaker and time, in seq order, so a Taguru
citation points at the turn; every association carries the paragraph of the
passage that holds its quote. Source id ``session:{agent}:{id}`` (a part's
``…/part-001``), ``date`` the first turn's time, tags for the agent and
the project. Written through extract's writer, which re-parses its own bytes as
import does; a session with drafts that writes no association is an error.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from taguru_ray.contract.items import Alias, Association
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.sessions.checks import Draft
from taguru_ray.sessions.events import Event, Session
from taguru_ray.sessions.parts import passage_events
from taguru_ray.sessions.prompt import stamp
from taguru_ray.text.paragraphs import split_paragraphs


def turn_heading(session: Session, event: Event) -> str:
    return f"⟦{session.handle}#{event.seq} {event.speaker_id}{stamp(event.ts_ms)}⟧"


def block_text(session: Session, event: Event) -> str:
    """The turn's block in the passage: its heading, then its text."""
    return f"{turn_heading(session, event)} {event.text.strip()}"


def passage_of(session: Session, events: Sequence[Event]) -> tuple[str, dict[int, int]]:
    """The passage text and, per seq, the passage paragraph its turn begins at: the
    turns the session's profile writes (`parts.py`), in seq order."""
    text, first, _ = _passage(session, events)
    return text, first


def _passage(
    session: Session, events: Sequence[Event]
) -> tuple[str, dict[int, int], dict[int, int]]:
    """The passage, and per seq the paragraph its turn begins at and its paragraph count."""
    blocks: list[str] = []
    first: dict[int, int] = {}
    count: dict[int, int] = {}
    paragraphs = 0
    for event in passage_events(session, events):
        block = block_text(session, event)
        first[event.seq] = paragraphs
        count[event.seq] = len(split_paragraphs(block))
        blocks.append(block)
        paragraphs += count[event.seq]
    return "\n\n".join(blocks), first, count


def tags_of(session: Session) -> tuple[str, ...]:
    tags = [f"agent:{session.agent}"]
    if session.cwd:
        tags.append(f"project:{posixpath.basename(session.cwd.rstrip('/')) or session.cwd}")
    return tuple(tag[:128] for tag in tags)


def render(
    session: Session,
    context_id: str,
    events: Sequence[Event],
    drafts: Sequence[Draft],
    aliases: Sequence[Alias] = (),
) -> bytes:
    text, first, count = _passage(session, events)
    date = session.started_ms // 1000 if session.started_ms is not None else None
    # A turn cut to fit a part keeps its head (`parts.fitted`): a quote in the store's
    # whole turn past the cut cites the last paragraph written.
    associations = [
        Association(d.fact.subject, d.fact.predicate, d.fact.value, 1.0,
                    first[d.seq] + min(d.paragraph, count[d.seq] - 1))
        for d in drafts
    ]  # fmt: skip
    source = SourceFile(
        Header(session.source, context_id),
        Passage(text, date, tags_of(session)),
        associations=associations,
        aliases=list(aliases),  # L2's, each naming a concept the associations use
    )
    return render_source_file(source, name=session.source)
