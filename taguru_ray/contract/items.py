"""The three kinds of item a source file carries, as plain values.

These are what `merge` produces and `render` writes; the import parser reads
them back. Field names follow the source-file format (CONTRACT.md section 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AliasKind = Literal["concept", "label"]

# Byte caps shared by the answer contract and the source-file format.
MAX_NAME_BYTES = 1024
# A context *name* as the older `taguru_batch` / taguru ADR 0042 headers carry it.
MAX_CONTEXT_NAME_BYTES = 64
MAX_DESCRIPTION_BYTES = 4096
MAX_QUESTION_BYTES = 512
MAX_QUESTIONS_PER_PARAGRAPH = 8
MAX_SECTION_BYTES = 512
MAX_TAG_BYTES = 128
MAX_TAGS = 32
MAX_PASSAGE_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_WEIGHT = 1e6


@dataclass(frozen=True)
class Association:
    subject: str
    label: str
    object: str
    weight: float = 1.0
    paragraph: int | None = None

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.subject, self.label, self.object)


@dataclass(frozen=True)
class Alias:
    alias: str
    canonical: str
    kind: AliasKind


@dataclass(frozen=True)
class Question:
    paragraph: int
    question: str
