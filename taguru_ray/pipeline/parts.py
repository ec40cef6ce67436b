"""A document whose text is over the passage cap, written as parts that each import whole.

A source file's passage holds at most 8 MiB (`MAX_PASSAGE_BYTES`: import refuses a
longer one), and a segment file over it is refused as the reference refuses it. A
converted document is no file a user can split by hand as easily: one whose text is
over the cap is extracted whole — one segment, its chunks, its commit turn, its trace
— and *written* in parts, as agent sessions are (SESSIONS.md §8): consecutive
paragraphs, each part's within the cap, each part a source file of its own whose
header `id` is the segment's written id plus ``/part-001``, ``/part-002``, … Its
associations and questions are those citing its paragraphs, renumbered from its
first; an association citing none goes with the first part; an alias goes with the
first part whose associations use its canonical (import requires one there), else
the first. Pure: the engine writes the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.contract.names import output_name
from taguru_ray.pipeline.merge import Extraction
from taguru_ray.pipeline.read import SegmentRefused
from taguru_ray.text.paragraphs import Paragraph

# The most a part's passage holds: import's passage cap (read at the call, so a test can
# cut a small document in parts).
BUDGET = MAX_PASSAGE_BYTES


def part_id(written_id: str, number: int) -> str:
    return f"{written_id}/part-{number:03d}"


def part_name(source: str, number: int) -> str:
    """The output file of part `number` from 2 on (the first keeps the segment's own name,
    the one the manifest records): named from its source as any segment's file is."""
    return output_name(f"{source}/part-{number:03d}")


def over_budget(size: int) -> bool:
    """Whether a passage of `size` bytes is written in parts."""
    return size > BUDGET


def oversized(paragraphs: Sequence[Paragraph], budget: int | None = None) -> None:
    """`SegmentRefused` when one paragraph alone is over the cap: no part could hold it.
    Said before any completion is paid for."""
    budget = BUDGET if budget is None else budget
    for paragraph in paragraphs:
        if paragraph.bytes > budget:
            raise SegmentRefused(
                f"paragraph {paragraph.index} alone is {paragraph.bytes} bytes, over the "
                f"{budget}-byte (8 MiB) passage cap no part can exceed — split the document"
            )


def plan(paragraphs: Sequence[Paragraph], budget: int | None = None) -> list[range]:
    """The paragraphs of each part, consecutive, each part's text (its paragraphs joined
    by a blank line) within `budget` (the cap); one range when the whole fits."""
    budget = BUDGET if budget is None else budget
    oversized(paragraphs, budget)
    ranges: list[range] = []
    start, size = 0, 0
    for paragraph in paragraphs:
        if paragraph.index == start:
            size = paragraph.bytes
        elif size + 2 + paragraph.bytes > budget:  # a blank line joins it to the one before
            ranges.append(range(start, paragraph.index))
            start, size = paragraph.index, paragraph.bytes
        else:
            size += 2 + paragraph.bytes
    ranges.append(range(start, len(paragraphs)))
    return ranges


def text_of(paragraphs: Sequence[Paragraph], span: range) -> str:
    return "\n\n".join(paragraphs[index].text for index in span)


def split(extraction: Extraction, spans: Sequence[range]) -> list[Extraction]:
    """The extraction of each part, its paragraph numbers counted from the part's first."""
    parts = [Extraction() for _ in spans]

    def part_of(paragraph: int | None) -> int:
        if paragraph is None:
            return 0
        return next((k for k, span in enumerate(spans) if paragraph in span), 0)

    for association, piece in extraction.associations:
        k = part_of(association.paragraph)
        if association.paragraph is not None:
            moved = association.paragraph - spans[k].start
            association = dataclasses.replace(association, paragraph=moved)
        parts[k].associations.append((association, piece))
    for question, piece in extraction.questions:
        k = part_of(question.paragraph)
        moved = question.paragraph - spans[k].start
        parts[k].questions.append((dataclasses.replace(question, paragraph=moved), piece))
    concepts = [{a.subject for a, _ in p.associations} | {a.object for a, _ in p.associations}
                for p in parts]  # fmt: skip
    labels = [{a.label for a, _ in p.associations} for p in parts]
    for alias, piece in extraction.aliases:
        used = concepts if alias.kind == "concept" else labels
        k = next((k for k, names in enumerate(used) if alias.canonical in names), 0)
        parts[k].aliases.append((alias, piece))
    return parts
