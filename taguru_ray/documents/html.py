"""An HTML page's main text, a paragraph a block, each with its heading path
(trafilatura, ADR 0078).

Trafilatura finds the page's main content — not its navigation, scripts, styles,
cookie banners or footer — and hands it back as XML blocks (``head`` with its
level, ``p``, ``list``, ``code``, ``quote``, ``table``); a heading opens a level
of the path the blocks under it carry. A list item is a paragraph (a definition
list's entry with its paragraphs as lines), a table a paragraph a row, its cells
joined by `` | ``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import trafilatura
from lxml import etree

from taguru_ray.documents.converted import Converted, DocumentRefused, Locator, located

BLOCKS = {"p", "list", "code", "quote", "table", "head"}


def convert(data: bytes) -> Converted:
    try:
        xml = trafilatura.extract(
            data,
            output_format="xml",
            include_comments=False,
            include_tables=True,
            include_links=False,
            include_images=False,
            favor_recall=True,
            deduplicate=False,
            with_metadata=False,
        )
    except RecursionError:
        raise DocumentRefused("nested too deep to read — simplify the page") from None
    empty = ("no main text found (an empty page, or navigation only)",)
    if not xml:
        return Converted("html", (), empty)
    try:
        root = etree.fromstring(xml.encode("utf-8"), etree.XMLParser(resolve_entities=False))
    except etree.XMLSyntaxError as error:
        raise DocumentRefused(f"its main text could not be read back ({error})") from None
    kept = located(_paragraphs(root))
    return Converted("html", kept, () if kept else empty)


def _paragraphs(root: Any) -> Iterator[tuple[str, Locator]]:
    main = root.find("main")
    path: list[tuple[int, str]] = []
    for block in _blocks(main if main is not None else root):
        tag = block.tag
        if tag == "head":
            text = " ".join("".join(block.itertext()).split()).rstrip("¶").strip()
            if text:
                level = _level(block.get("rend"))
                path = [(lvl, head) for lvl, head in path if lvl < level]
                path.append((level, text))
                yield text, {"headings": [head for _, head in path]}
            continue
        headings = {"headings": [head for _, head in path]}
        if tag == "list":
            for item in block.iterchildren("item"):
                yield _item_text(item), headings
        elif tag == "table":
            for row in block.iter("row"):
                cells = [" ".join("".join(c.itertext()).split()) for c in row.iter("cell")]
                if any(cells):
                    yield " | ".join(cells), headings
        elif tag == "code":
            yield "".join(block.itertext()), headings
        else:
            yield " ".join("".join(block.itertext()).split()), headings


def _item_text(item: Any) -> str:
    """An item's own text and each block inside it as a line."""
    lines = [" ".join((item.text or "").split())]
    for child in item:
        if isinstance(child.tag, str):
            lines.append(" ".join("".join(child.itertext()).split()))
        lines.append(" ".join((child.tail or "").split()))
    return "\n".join(line for line in lines if line)


def _blocks(parent: Any) -> Iterator[Any]:
    """The block elements in document order, not descending into one (a list in a quote
    is the quote's text)."""
    for child in parent:
        if not isinstance(child.tag, str):
            continue
        if child.tag in BLOCKS:
            yield child
        else:
            yield from _blocks(child)


def _level(rend: str | None) -> int:
    if rend and len(rend) == 2 and rend[0] == "h" and rend[1].isdigit():
        return int(rend[1])
    return 6
