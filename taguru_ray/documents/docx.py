"""A DOCX's body, a paragraph at a time, each with its heading path (python-docx, ADR 0078).

Body paragraphs and tables in document order; a heading (a paragraph whose outline
level is set, by its own properties or its style's — locale-proof, unlike style names —
or a ``Title`` / ``Heading N`` style, up its base styles) opens a level of the path the
paragraphs under it carry. A table is a paragraph a row, its cells joined by `` | ``.
Headers, footers and comments are not the document's text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from taguru_ray.documents.converted import Converted, DocumentRefused, Locator, located
from taguru_ray.documents.zipped import check_zip

_HEADING_NAME = re.compile(r"heading\s*(\d)", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def convert(data: bytes) -> Converted:
    check_zip(data, "docx")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as error:  # python-docx's own, lxml's, KeyError for a missing part
        raise DocumentRefused(f"not a readable DOCX ({_why(error)}) — save it again") from None
    kept = located(_paragraphs(document))
    return Converted("docx", kept, () if kept else ("holds no text: nothing to extract",))


def _why(error: Exception) -> str:
    text = str(error).splitlines()[0][:160] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _paragraphs(document: Any) -> Iterator[tuple[str, Locator]]:
    path: list[tuple[int, str]] = []  # (level, heading text)
    # A style's level, by its id: python-docx finds a paragraph's style by a scan of every
    # style (0.5 ms a paragraph; 400 000 paragraphs took minutes).
    styles: dict[str | None, int | None] = {}
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            level = _outline(block._p.pPr)
            if level is None:
                style_id = block._p.style
                if style_id not in styles:
                    styles[style_id] = style_level(block.style)
                level = styles[style_id]
            text = block.text
            if level is not None and text.strip():
                path = [(lvl, head) for lvl, head in path if lvl < level]
                path.append((level, " ".join(text.split())))
            yield text, {"headings": [head for _, head in path]}
        elif isinstance(block, Table):
            for row in _rows(block):
                yield row, {"headings": [head for _, head in path]}


def _rows(table: Table) -> Iterator[str]:
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:  # a merged cell is listed once per grid column it spans
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            yield " | ".join(cells)


def style_level(style: Any) -> int | None:
    """A paragraph style's heading level: 1 for a top heading (Title, Heading 1, outline
    level 0), None for body text; read up its base styles."""
    level = None
    depth = 0
    while level is None and style is not None and depth < 16:
        level = _outline(style.element.pPr)
        if level is None:
            name = style.name or ""
            if name.lower() == "title":
                return 1
            match = _HEADING_NAME.fullmatch(name.strip())
            if match:
                return int(match.group(1))
        style, depth = style.base_style, depth + 1
    return level


def _outline(ppr: Any) -> int | None:
    if ppr is None:
        return None
    found = ppr.find(f"{_W}outlineLvl")
    if found is None:
        return None
    try:
        value = int(found.get(f"{_W}val"))
    except (TypeError, ValueError):
        return None
    return value + 1 if 0 <= value < 9 else None  # 9 is "body text"
