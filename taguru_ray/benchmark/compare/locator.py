"""Where a difference sits in the corpus: the locator of a differences record (BENCHMARK.md §2.8).

A locator names the segment (id, source path, pinned sha256), the smallest
paragraph either side attributed the association to, and the manifest chunk
that contains it. With ``--with-text`` it also carries that paragraph's text,
read from the pinned corpus file: a file that is unreadable or whose sha256
no longer matches the manifest is a hard error (quoting a changed file would
put text next to a paragraph index that no longer points at it).
"""

from __future__ import annotations

import hashlib
from typing import Any

import fsspec

from taguru_ray.benchmark.compare.manifest import CompareError, SegmentInfo
from taguru_ray.text.paragraphs import Paragraph, split_paragraphs

TEXT_CAP_BYTES = 4096  # a locator's text is a pointer for a reader, not a copy of the corpus


def cap_text(text: str, limit: int = TEXT_CAP_BYTES) -> tuple[str, bool]:
    """(text cut to ≤ limit UTF-8 bytes on a character boundary, whether it was cut)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


class SegmentTexts:
    """Paragraphs of pinned corpus files, read once each and only when asked."""

    def __init__(self, with_text: bool) -> None:
        self.with_text = with_text
        self._paragraphs: dict[str, list[Paragraph]] = {}

    def paragraph(self, segment: SegmentInfo, index: int) -> str | None:
        """The paragraph's text; None past the end of the file."""
        if segment.segment_id not in self._paragraphs:
            self._paragraphs[segment.segment_id] = split_paragraphs(_read_pinned(segment))
        paragraphs = self._paragraphs[segment.segment_id]
        return paragraphs[index].text if index < len(paragraphs) else None


def _read_pinned(segment: SegmentInfo) -> str:
    try:
        fs, path = fsspec.core.url_to_fs(segment.path)
        data = fs.cat_file(path)
    except Exception as error:  # any failure to read is the same refusal
        raise CompareError(
            f"--with-text: {segment.path} (segment {segment.segment_id}) cannot be read: {error}"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != segment.sha256.lower():
        raise CompareError(
            f"--with-text: {segment.path} no longer matches manifest.json: sha256 {digest}, "
            f"pinned {segment.sha256} — its paragraphs may not be the ones extracted"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompareError(f"--with-text: {segment.path} is not UTF-8: {error}") from None


def locator(segment: SegmentInfo, paragraph: int | None, texts: SegmentTexts) -> dict[str, Any]:
    """A locator for a paragraph of a segment (or the segment alone, paragraph None)."""
    chunk = None
    if paragraph is not None:
        chunk = next(
            (c for c in segment.chunks if c.paragraph_first <= paragraph <= c.paragraph_last),
            None,
        )
    text, truncated = None, False
    if texts.with_text and paragraph is not None:
        found = texts.paragraph(segment, paragraph)
        if found is not None:
            text, truncated = cap_text(found)
    return {
        "segment_id": segment.segment_id,
        "source": segment.path,
        "segment_sha256": segment.sha256,
        "paragraph": paragraph,
        "chunk_index": chunk.chunk_index if chunk else None,
        "chunk_sha256": chunk.chunk_sha256 if chunk else None,
        "text": text,
        "text_truncated": truncated,
    }
