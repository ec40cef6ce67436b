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

import functools
import hashlib
from dataclasses import dataclass

from taguru_ray.contract.settings.sizes import MIN_CHUNK_BYTES
from taguru_ray.text.paragraphs import Paragraph, is_white_space

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
class Piece:
    """What one completion is asked about: a chunk, or a sub-piece the split rung made.

    A sub-piece keeps its chunk's index and total (it is still "part K of N")
    and its blocks keep their canonical labels.
    """

    index: int  # the chunk's 0-based index
    total: int
    blocks: tuple[Block, ...]

    # Cached: a piece's prompt, records and checkpoint unit each ask for them again.
    @functools.cached_property
    def text(self) -> str:
        """The labelled blocks, no preamble: what the piece id hashes."""
        return BLOCK_SEPARATOR.join(block.text for block in self.blocks)

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def paragraph_first(self) -> int:
        return self.blocks[0].paragraph

    @property
    def paragraph_last(self) -> int:
        return self.blocks[-1].paragraph


Chunk = Piece  # a chunk is the top-level piece of the plan


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
    groups = _pack(label_blocks(paragraphs, cap), cap)
    return [Piece(index, len(groups), tuple(group)) for index, group in enumerate(groups)]


def _pack(blocks: list[Block], cap: int) -> list[list[Block]]:
    groups: list[list[Block]] = []
    current: list[Block] = []
    current_bytes = 0
    for block in blocks:
        joined = current_bytes + len(BLOCK_SEPARATOR) + block.bytes
        if current and joined > cap:
            groups.append(current)
            current, current_bytes = [], 0
        current_bytes = block.bytes if not current else joined
        current.append(block)
    if current:
        groups.append(current)
    return groups


def split_cap(piece: Piece) -> int:
    """The split rung's cap: half the piece, never under the 512-byte floor."""
    return max(piece.bytes // 2, MIN_CHUNK_BYTES)


def split_piece(piece: Piece, cap: int) -> list[Piece]:
    """Re-plan a piece's blocks at `cap` bytes: each block re-cut under its own label.

    One sub-piece back means the piece cannot split any further (the floor).
    """
    recut: list[Block] = []
    for block in piece.blocks:
        prefix = label(block.paragraph)
        body = block.text[len(prefix) :]
        window = cap - len(prefix.encode("utf-8"))
        recut.extend(
            Block(block.paragraph, prefix + part)
            for part in _cut(body, window)
            if part and not is_white_space(part)
        )
    return [Piece(piece.index, piece.total, tuple(group)) for group in _pack(recut, cap)]


def piece_from_text(index: int, total: int, text: str) -> Piece:
    """Rebuild a piece from its labelled text (a checkpoint unit keeps the user turn)."""
    blocks = []
    for block in text.split(BLOCK_SEPARATOR):
        number = block[1 : block.index("]")] if block.startswith("[") and "]" in block else ""
        blocks.append(Block(int(number) if number.isdigit() else 0, block))
    return Piece(index, total, tuple(blocks))
