"""The `render` step: the merged extraction becomes the segment's source file.

Line order is the format's (header, passage, questions, associations, concept
aliases, label aliases); the writer re-parses its own bytes with the import
parser before handing them back, so a file import would refuse is never
produced. The trace's `item` records follow the same order, one per line.
"""

from __future__ import annotations

from dataclasses import dataclass

from taguru_ray.contract.items import Alias
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import AliasItem, AssociationItem, QuestionItem
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from taguru_ray.pipeline.merge import Extraction


@dataclass(frozen=True)
class HeaderFields:
    written_id: str
    context_id: str
    name: str | None
    description: str | None


@dataclass(frozen=True)
class Rendered:
    data: bytes
    items: list[Record]  # the trace's item records, in file order


def alias_order(entry: tuple[Alias, str]) -> tuple[int, str]:
    """Concept aliases before label aliases, each by spelling (code-point = UTF-8 byte order)."""
    alias = entry[0]
    return (0 if alias.kind == "concept" else 1, alias.alias)


def render(
    extraction: Extraction,
    header: HeaderFields,
    passage_text: str | None,
    date: int | None,
    tags: tuple[str, ...],
) -> Rendered:
    aliases = sorted(extraction.aliases, key=alias_order)
    source = SourceFile(
        header=Header(
            id=header.written_id,
            context_id=header.context_id,
            name=header.name,
            description=header.description if header.name is not None else None,
        ),
        passage=Passage(passage_text, date, tags) if passage_text is not None else None,
        questions=[question for question, _ in extraction.questions],
        associations=[association for association, _ in extraction.associations],
        aliases=[alias for alias, _ in aliases],
        sections=[],
    )
    items: list[Record] = []
    for question, piece_id in extraction.questions:
        items.append(
            QuestionItem(
                paragraph=question.paragraph, question=question.question, piece_id=piece_id
            ).record()
        )
    for association, piece_id in extraction.associations:
        items.append(
            AssociationItem(
                subject=association.subject,
                label=association.label,
                object=association.object,
                piece_id=piece_id,
            ).record()
        )
    for alias, piece_id in aliases:
        items.append(
            AliasItem(
                item=alias.kind, alias=alias.alias, canonical=alias.canonical, piece_id=piece_id
            ).record()
        )
    return Rendered(render_source_file(source), items)
