"""--chunk-context for one segment: the plan, the overview pass, the blocks
(taguru ADRs 0033, 0034).

`plan_segment` is the plan step under every mode (structure-preferring
boundaries when the mode is on). `overview_pass` asks once per chunk — or
takes the checkpointed answer — with the program it is handed, and
`blocks_for` builds each chunk's context block from the units, the merged
overview and, under ``ingested``, what the target context's export knows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from taguru_ray.pipeline.annotate import ContextBlock, context_block
from taguru_ray.pipeline.effects import Parallel, Program, SaveOverview
from taguru_ray.pipeline.overview import (
    Merged,
    Overview,
    merge_overviews,
    opening_units,
    parse_overview,
)
from taguru_ray.pipeline.plan import Chunk, plan_chunks
from taguru_ray.pipeline.plan_structure import plan_chunks_by_structure
from taguru_ray.pipeline.structure import Unit, units
from taguru_ray.pipeline.vocabulary import Vocabulary, known_relations
from taguru_ray.text.paragraphs import Paragraph

OVERVIEW_MODES = ("overview", "ingested")

# (chunk, the units opening in it) -> a program answering (answer, None) or (None, why)
AskOverview = Callable[[Chunk, list[Unit]], Program[tuple[str | None, str | None]]]


def plan_segment(
    mode: str, paragraphs: Sequence[Paragraph], chunk_bytes: int
) -> tuple[list[Unit], list[Chunk]]:
    """The units (none when the mode is off) and the chunks of one segment."""
    if mode == "off":
        return [], plan_chunks(paragraphs, chunk_bytes)
    found = units(paragraphs)
    return found, plan_chunks_by_structure(paragraphs, chunk_bytes, found)


@dataclass
class OverviewPass:
    """What the pass found: per chunk its answer ("" = unusable), parsed overviews, notes."""

    answers: list[str] = field(default_factory=list)
    overviews: list[Overview | None] = field(default_factory=list)
    notes: list[tuple[Chunk, str]] = field(default_factory=list)
    asked: int = 0

    def merged(self) -> Merged:
        return merge_overviews(self.answers, self.overviews)


def overview_pass(
    chunks: Sequence[Chunk],
    found: Sequence[Unit],
    cached: dict[str, str],
    ask: AskOverview,
    width: int,
) -> Program[OverviewPass]:
    """Every chunk's overview: the checkpoint's answer when it has one (an empty one is a
    failed ask, never re-asked), else one ask, saved; `width` asks run at once."""
    result = OverviewPass(answers=[""] * len(chunks), overviews=[None] * len(chunks))

    def one(chunk: Chunk) -> Program[None]:
        opening = opening_units(found, chunk)
        answer = cached.get(chunk.sha256)
        if answer is None:
            answer, why = yield from ask(chunk, opening)
            result.asked += 1
            if answer is not None:
                parsed = parse_overview(answer, opening)
                if isinstance(parsed, str):
                    answer, why = None, parsed
            if answer is None:
                result.notes.append((chunk, f"overview skipped ({why}) — extracted without it"))
            yield SaveOverview(chunk.sha256, answer or "")
        if answer:
            parsed = parse_overview(answer, opening)
            if isinstance(parsed, Overview):
                result.answers[chunk.index] = answer
                result.overviews[chunk.index] = parsed

    yield Parallel(tuple(_start(one, chunk) for chunk in chunks), max(width, 1))
    return result


def _start(one: Callable[[Chunk], Program[None]], chunk: Chunk) -> Callable[[], Program[None]]:
    return lambda: one(chunk)


def blocks_for(
    chunks: Sequence[Chunk],
    found: Sequence[Unit],
    paragraphs: Sequence[Paragraph],
    chunk_bytes: int,
    merged: Merged | None,
    known_from: Vocabulary | None,
    candidates: Sequence[str] = (),
) -> dict[int, ContextBlock]:
    """Each chunk's block (chunks with nothing to say get none)."""
    cast = merged.cast if merged is not None else ()
    synopses = merged.synopses if merged is not None else {}
    known = _known(known_from, [name for name, _ in cast], candidates) if known_from else []
    blocks = {}
    for chunk in chunks:
        block = context_block(
            chunk, found, paragraphs, chunk_bytes, cast=cast, synopses=synopses, known=known
        )
        if block is not None:
            blocks[chunk.index] = block
    return blocks


def _known(
    vocabulary: Vocabulary, cast: Sequence[str], candidates: Sequence[str]
) -> list[tuple[str, str]]:
    """``Known:`` entries: each cast name, then each candidate, the export has relations for."""
    known: dict[str, str] = {}
    for name in (*cast, *candidates):
        if name not in known:
            relations = known_relations(vocabulary, name)
            if relations:
                known[name] = "; ".join(relations)
    return list(known.items())
