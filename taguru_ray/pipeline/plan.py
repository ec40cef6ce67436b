"""The `plan` step: a segment's labelled paragraphs packed into chunks.

Every paragraph is rendered as ``[i] text`` with its canonical index, so the
numbering the model sees is the segment's own, across chunk boundaries. A
paragraph too long for one chunk is cut (at its last line break inside the
window when it has one) and every piece keeps the same ``[i]`` label, so an
oversized paragraph repeats its number across chunks instead of inventing a
boundary that no locator could address. Blocks are packed greedily and joined
by a blank line; no chunk exceeds ``chunk_bytes``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from taguru_ray.text.paragraphs import Paragraph, is_white_space

DEFAULT_CHUNK_BYTES = 24576
MIN_CHUNK_BYTES = 512
BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Block:
    """One labelled paragraph, or one labelled piece of an oversized paragraph."""

    paragraph: int
    text: str  # with its "[i] " label

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Chunk:
    """One unit of the plan: what one completion is asked about."""

    index: int  # 0-based
    total: int
    text: str  # the labelled blocks, no preamble
    paragraph_first: int
    paragraph_last: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def label(index: int) -> str:
    return f"[{index}] "


def label_blocks(paragraphs: tuple[Paragraph, ...] | list[Paragraph], cap: int) -> list[Block]:
    """Render each paragraph as labelled blocks of at most `cap` bytes."""
    blocks: list[Block] = []
    for paragraph in paragraphs:
        prefix = label(paragraph.index)
        window = cap - len(prefix.encode("utf-8"))
        for piece in _cut(paragraph.text, window):
            if piece and not is_white_space(piece):
                blocks.append(Block(paragraph.index, prefix + piece))
    return blocks


def _cut(text: str, window: int) -> list[str]:
    """Cut `text` into pieces of at most `window` bytes, preferring line breaks.

    Each cut falls after the last ``\\n`` inside the window (the piece's
    trailing ``\\n`` trimmed), else at the last character boundary that fits;
    every cut takes at least one character so the loop always progresses.
    """
    pieces: list[str] = []
    rest = text
    while len(rest.encode("utf-8")) > window:
        fitting = _prefix_within(rest, window)
        newline = fitting.rfind("\n")
        if newline > 0:
            pieces.append(fitting[:newline])
            rest = rest[newline + 1 :]
        else:
            taken = max(len(fitting), 1)
            pieces.append(rest[:taken])
            rest = rest[taken:]
    pieces.append(rest)
    return pieces


def _prefix_within(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 encoding fits in `limit` bytes."""
    encoded = text.encode("utf-8")[:limit]
    return encoded.decode("utf-8", errors="ignore")


def plan_chunks(paragraphs: tuple[Paragraph, ...] | list[Paragraph], cap: int) -> list[Chunk]:
    """Pack the labelled blocks greedily into chunks of at most `cap` bytes."""
    groups: list[list[Block]] = []
    current: list[Block] = []
    current_bytes = 0
    for block in label_blocks(paragraphs, cap):
        joined = current_bytes + len(BLOCK_SEPARATOR) + block.bytes
        if current and joined > cap:
            groups.append(current)
            current, current_bytes = [], 0
        current_bytes = block.bytes if not current else joined
        current.append(block)
    if current:
        groups.append(current)
    return [
        Chunk(
            index=index,
            total=len(groups),
            text=BLOCK_SEPARATOR.join(block.text for block in group),
            paragraph_first=group[0].paragraph,
            paragraph_last=group[-1].paragraph,
        )
        for index, group in enumerate(groups)
    ]
