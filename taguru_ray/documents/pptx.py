"""A PPTX's slides, a paragraph a shape, each with its slide (python-pptx, ADR 0078).

On each slide, the title first, then the other shapes top to bottom, left to right
(group shapes opened); a shape's text frame is one paragraph, a line a bullet; a
table a paragraph a row, its cells joined by `` | ``; the speaker notes last, marked
``"notes": true``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE

from taguru_ray.documents.converted import Converted, DocumentRefused, Locator, located
from taguru_ray.documents.docx import _why
from taguru_ray.documents.zipped import check_zip

MAX_GROUP_DEPTH = 32


def convert(data: bytes) -> Converted:
    check_zip(data, "pptx")
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        found = list(_paragraphs(presentation))
    except Exception as error:  # python-pptx's own, lxml's, KeyError for a missing part
        raise DocumentRefused(f"not a readable PPTX ({_why(error)}) — save it again") from None
    kept = located(found)
    return Converted("pptx", kept, () if kept else ("holds no text on any slide",))


def _paragraphs(presentation: Any) -> Iterator[tuple[str, Locator]]:
    for number, slide in enumerate(presentation.slides, start=1):
        for text in _shape_texts(_ordered(slide.shapes, slide.shapes.title), 0):
            yield text, {"slide": number}
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            if frame is not None:
                yield frame.text, {"slide": number, "notes": True}


def _ordered(shapes: Iterable[Any], title: Any = None) -> list[Any]:
    def place(shape: Any) -> tuple[int, int, int]:
        first = 0 if title is not None and shape.shape_id == title.shape_id else 1
        return first, shape.top or 0, shape.left or 0

    return sorted(shapes, key=place)


def _shape_texts(shapes: list[Any], depth: int) -> Iterator[str]:
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            if depth < MAX_GROUP_DEPTH:
                yield from _shape_texts(_ordered(shape.shapes), depth + 1)
        elif getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                if any(cells):
                    yield " | ".join(cells)
        elif shape.has_text_frame:
            yield "\n".join(p.text for p in shape.text_frame.paragraphs)
