"""Where a converted document's paragraphs came from, read off its trace (ADR 0078).

The trace's ``paragraph`` records carry each paragraph's locator — its PDF page, its
PPTX slide, its DOCX or HTML heading path. `inspect` reads them from the trace beside
an attempts log (the same name without ``.attempts``) and `report` from the out
folder's traces, so a piece or a fact is shown with the page it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from taguru_ray.documents.converted import describe

ATTEMPTS_SUFFIX = ".attempts.jsonl"


def trace_beside(attempts_log: str) -> str | None:
    """The trace of the segment an attempts log belongs to, by name; None for another file."""
    if not attempts_log.endswith(ATTEMPTS_SUFFIX):
        return None
    return attempts_log[: -len(ATTEMPTS_SUFFIX)] + ".jsonl"


def paragraph_locators(records: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Paragraph index → locator, from a trace's ``paragraph`` records (others ignored)."""
    found: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("type") != "paragraph":
            continue
        index, locator = record.get("paragraph"), record.get("locator")
        if isinstance(index, int) and isinstance(locator, dict):
            found[index] = locator
    return found


def span(locators: Mapping[int, Mapping[str, Any]], first: int | None, last: int | None) -> str:
    """Where paragraphs `first`..`last` came from: ``page 2``, ``pages 1–3``, ``slide 4``,
    ``Setup › Keys``; empty when none of them has a locator."""
    if first is None or not locators:
        return ""
    last = first if last is None else last
    seen: list[str] = []
    pages: list[int] = []
    for index in range(first, last + 1):
        locator = locators.get(index)
        if not locator:
            continue
        if isinstance(locator.get("page"), int):
            pages.append(locator["page"])
        text = describe(dict(locator))
        if text not in seen:
            seen.append(text)
    if pages and len(seen) > 1 and len(pages) == sum(1 for i in range(first, last + 1)
                                                       if i in locators):  # fmt: skip
        low, high = min(pages), max(pages)
        return f"page {low}" if low == high else f"pages {low}–{high}"
    if len(seen) > 2:
        return f"{seen[0]} … {seen[-1]}"
    return "; ".join(seen)
