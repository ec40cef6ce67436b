"""The `verify` step: which canonical paragraphs the written source file reflects.

One record per paragraph: how many kept associations and questions cite it,
and its text when none does, so the paragraphs a source file never reflects
are listable from the trace alone (taguru ADR 0026).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from taguru_ray.contract.items import Association, Question
from taguru_ray.contract.records import Record
from taguru_ray.contract.records.trace import ParagraphTrace
from taguru_ray.text.paragraphs import Paragraph


def paragraph_records(
    paragraphs: Iterable[Paragraph],
    associations: Iterable[Association],
    questions: Iterable[Question],
    locators: Sequence[dict[str, Any]] = (),
) -> list[Record]:
    """A `paragraph` record a canonical paragraph; a converted document's carry their
    `locators` (by paragraph index)."""
    cited: Counter[int] = Counter()
    for association in associations:
        if association.paragraph is not None:
            cited[association.paragraph] += 1
    for question in questions:
        cited[question.paragraph] += 1
    records: list[Record] = []
    for paragraph in paragraphs:
        items = cited[paragraph.index]
        records.append(
            ParagraphTrace(
                paragraph=paragraph.index,
                bytes=paragraph.bytes,
                items=items,
                covered=items > 0,
                text=paragraph.text if items == 0 else None,
                locator=locators[paragraph.index] if paragraph.index < len(locators) else None,
            ).record()
        )
    return records
