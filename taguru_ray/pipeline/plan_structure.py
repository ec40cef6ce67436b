"""The `plan` step under ``--chunk-context structure``: chunk boundaries fall on chapters.

taguru ADR 0033 gives the packing one preference (CONTRACT.md section 7): a block
that opens a unit at the segment's outermost level — a chapter, a top-level
heading, a speaker's section — ends the current chunk once that chunk is past
half the cap. Everything else is ``plan_chunks``: the same labelled blocks, the
same greedy packing, no chunk over the cap. Past half the cap, so a chapter
break never leaves a sliver of a chunk behind and the chunk count grows by at
most what the halves cost. A segment with no structure (no units, or only the
level-0 title) chunks exactly as ``plan_chunks`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from taguru_ray.pipeline.plan import BLOCK_SEPARATOR, Block, Chunk, Piece, label_blocks, plan_chunks
from taguru_ray.pipeline.structure import Unit, outermost_level
from taguru_ray.text.paragraphs import Paragraph


def preferred_breaks(units: Sequence[Unit]) -> frozenset[int]:
    """The paragraphs where a unit of the outermost level opens; empty without structure."""
    level = outermost_level(units)
    if level is None:
        return frozenset()
    return frozenset(unit.paragraph_first for unit in units if unit.level == level)


def plan_chunks_by_structure(
    paragraphs: Sequence[Paragraph], cap: int, units: Sequence[Unit]
) -> list[Chunk]:
    """``plan_chunks``, preferring to end a chunk where an outermost unit opens."""
    breaks = preferred_breaks(units)
    if not breaks:
        return plan_chunks(paragraphs, cap)
    groups = _pack_preferring(label_blocks(paragraphs, cap), cap, breaks)
    return [Piece(index, len(groups), tuple(group)) for index, group in enumerate(groups)]


def _pack_preferring(blocks: list[Block], cap: int, breaks: frozenset[int]) -> list[list[Block]]:
    """Greedy packing; a paragraph's first block in ``breaks`` ends a chunk past half the cap.

    Only a paragraph's first block opens it: the later pieces of an oversized
    paragraph continue it and never count as a break.
    """
    groups: list[list[Block]] = []
    current: list[Block] = []
    current_bytes = 0
    previous: int | None = None
    for block in blocks:
        opens = block.paragraph in breaks and block.paragraph != previous
        joined = current_bytes + len(BLOCK_SEPARATOR) + block.bytes
        if current and (joined > cap or (opens and 2 * current_bytes > cap)):
            groups.append(current)
            current, current_bytes = [], 0
        current_bytes = block.bytes if not current else joined
        current.append(block)
        previous = block.paragraph
    if current:
        groups.append(current)
    return groups
