"""A converted document as values: its paragraphs, each with its locator.

A locator says where in the document a paragraph came from, so every fact a source
file cites can be traced back to its page: ``{"page": 2}`` (PDF, 1-based),
``{"slide": 3}`` (PPTX; ``"notes": true`` for the speaker notes), ``{"headings":
["Setup", "Keys"]}`` (DOCX and HTML: the heading path above the paragraph, outermost
first; empty before the first heading). The trace's ``paragraph`` records carry it.

The text of a converted document is its paragraphs joined by one blank line; each
paragraph is normalised first (line ends, control characters, blank lines inside it
removed) so the canonical split of that text (`text/paragraphs.py`) finds exactly
these paragraphs again — `locators` maps them back by offset all the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.text.paragraphs import is_white_space

Locator = dict[str, Any]

# C0 and C1 controls but tab and newline, DEL, noncharacters and lone surrogates: a
# PDF's text layer carries them (pdfium marks a soft hyphen with \x02); a passage and
# every human-facing line are better without them.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff\ud800-\udfff]")


class DocumentRefused(ValueError):
    """The document cannot be converted; the message says why (and the fix) in one line."""


@dataclass(frozen=True)
class Located:
    """One paragraph of a converted document and where it came from."""

    text: str
    locator: Locator


@dataclass(frozen=True)
class Converted:
    """A document as paragraphs. `notes` are lines worth a reader's eye that do not fail
    the document (pages with no text layer among pages with one)."""

    kind: str
    paragraphs: tuple[Located, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def text(self) -> str:
        return "\n\n".join(paragraph.text for paragraph in self.paragraphs)

    def spans(self) -> list[tuple[int, Locator]]:
        """Each paragraph's start offset in `text`, with its locator."""
        found, at = [], 0
        for paragraph in self.paragraphs:
            found.append((at, paragraph.locator))
            at += len(paragraph.text) + 2
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "paragraphs": [{"text": p.text, "locator": p.locator} for p in self.paragraphs],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, value: Any) -> Converted:
        """The value `to_json` wrote; ValueError for anything else (a damaged cache file)."""
        if not isinstance(value, dict) or not isinstance(value.get("paragraphs"), list):
            raise ValueError("not a converted document")
        paragraphs = []
        for item in value["paragraphs"]:
            if not (isinstance(item, dict) and isinstance(item.get("text"), str)
                    and isinstance(item.get("locator"), dict)):  # fmt: skip
                raise ValueError("a paragraph is not {text, locator}")
            paragraphs.append(Located(item["text"], item["locator"]))
        notes = value.get("notes", [])
        if not isinstance(value.get("kind"), str) or not all(isinstance(n, str) for n in notes):
            raise ValueError("kind or notes of the wrong type")
        return cls(value["kind"], tuple(paragraphs), tuple(notes))

    def dumps(self) -> bytes:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":")).encode()


def clean(text: str) -> str:
    """A paragraph's text as a passage holds it: ``\\n`` line ends, no control characters,
    no blank line inside it (which would split it), no trailing space on a line, no
    leading or trailing blank lines. Empty when nothing is left."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = [line.rstrip() for line in text.split("\n")]
    return "\n".join(line for line in lines if line and not is_white_space(line))


def located(paragraphs: Iterable[tuple[str, Locator]]) -> tuple[Located, ...]:
    """The cleaned paragraphs that hold any text, in order."""
    kept = []
    for text, locator in paragraphs:
        text = clean(text)
        if text:
            kept.append(Located(text, locator))
    return tuple(kept)


def describe(locator: Locator | None) -> str:
    """A locator as a person reads it: ``page 2``, ``slide 3 notes``, ``Setup › Keys``."""
    if not locator:
        return ""
    if "page" in locator:
        return f"page {locator['page']}"
    if "slide" in locator:
        return f"slide {locator['slide']}" + (" notes" if locator.get("notes") else "")
    if "headings" in locator:
        path = [str(h) for h in locator["headings"]]
        return " › ".join(path) if path else "(before the first heading)"
    return json.dumps(locator, ensure_ascii=False)
