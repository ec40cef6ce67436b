"""The `read` step: a segment's bytes become its text, hash and paragraphs.

Pure: the engine fetches the bytes (local path or fsspec URL) and hands them
here; a refusal is a value the engine reports for this segment alone.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.documents.converted import Converted, Locator
from taguru_ray.text.paragraphs import Paragraph, split_paragraphs
from taguru_ray.text.redact import Redaction, Rule, redact

BOM = "\ufeff"
BOM_BYTES = BOM.encode("utf-8")


class SegmentRefused(ValueError):
    """The segment cannot be extracted as it is; the message says why and what to do."""


@dataclass(frozen=True)
class Segment:
    """One input file as the pipeline sees it.

    `source` is the input path exactly as given (a directory joined with the
    file name, never canonicalised); `sha256` hashes the text after the BOM
    strip, which is what the manifest compares.
    """

    source: str
    text: str
    sha256: str
    paragraphs: tuple[Paragraph, ...] = field(repr=False)
    # A converted document's: each paragraph's locator, by index (ADR 0078); empty for
    # a text segment.
    locators: tuple[Locator, ...] = field(default=(), repr=False)
    # A converted document: known by its bytes' digest (`document_sha256`), which masking
    # its text does not change.
    document: bool = field(default=False, repr=False)

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def read_segment(source: str, data: bytes) -> Segment:
    """Decode, check the cap, strip one leading BOM and split into paragraphs."""
    text = decode_segment(data)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Segment(source, text, digest, tuple(split_paragraphs(text)))


def redact_segment(
    segment: Segment, rules: Sequence[Rule], key: bytes = b""
) -> tuple[Segment, list[Redaction]]:
    """--redact: the segment with every match masked, before anything else reads it.

    The text and the paragraphs are the masked ones, so the prompt, the passage,
    the checkpoint and every record hold placeholders only — and so does the
    hash: under --redact a segment is known by the sha256 of its masked text
    (the manifest's `sha256`, the checkpoint's, the records' `segment_sha256`).
    The file's own hash would let anyone holding --out check a guess at a masked
    value by hashing the file rebuilt around it; the masked text's cannot, and
    it still changes whenever the file does (a masked value's placeholder is a
    keyed digest of it) — the `redaction` input names the rules.
    """
    if not rules:
        return segment, []
    text, found = redact(segment.text, segment.sha256, rules, key)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if segment.document:  # known by its bytes' digest (`document_sha256`)
        digest = segment.sha256
    if not found:
        return Segment(segment.source, segment.text, digest, segment.paragraphs,
                       segment.locators, segment.document), []  # fmt: skip
    paragraphs = tuple(split_paragraphs(text))
    # A match across a blank line would join two paragraphs: their locators no longer
    # line up, and none is claimed.
    locators = segment.locators if len(paragraphs) == len(segment.paragraphs) else ()
    return Segment(segment.source, text, digest, paragraphs, locators, segment.document), found


def masked_sha256(source: str, data: bytes, rules: Sequence[Rule], key: bytes = b"") -> str:
    """The manifest's hash of a segment under --redact: its masked text's."""
    segment, _ = redact_segment(read_segment(source, data), rules, key)
    return segment.sha256


def decode_segment(data: bytes) -> str:
    """The segment's text: size-checked first (the caller may hand a truncated read of a
    huge file), then UTF-8 decoded, one leading BOM stripped."""
    size = len(data) - (len(BOM_BYTES) if data.startswith(BOM_BYTES) else 0)
    if size > MAX_PASSAGE_BYTES:
        raise SegmentRefused(
            f"over the {MAX_PASSAGE_BYTES}-byte (8 MiB) segment cap — its passage could not "
            "fit in a source file; split the segment"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SegmentRefused(
            f"not valid UTF-8 (byte {error.start}: {error.reason}) — re-encode the file as UTF-8"
        ) from None
    return text[1:] if text.startswith(BOM) else text


def segment_sha256(data: bytes) -> str:
    """The manifest's hash of a segment, without splitting its paragraphs."""
    decode_segment(data)  # the same refusals as a read, so a skip never hides one
    body = data[len(BOM_BYTES) :] if data.startswith(BOM_BYTES) else data
    return hashlib.sha256(body).hexdigest()


# The most of a document the driver reads: a PDF of scans runs to hundreds of MiB, its
# text to far less; past this one is refused unread.
DOCUMENT_LIMIT = 512 << 20


def document_sha256(data: bytes, key: bytes | None = None) -> str:
    """A document's manifest hash: the sha256 of its bytes, known before it is converted
    (the driver never converts). Under --redact it is keyed (HMAC-SHA256 with the
    redaction key), for the reason a text segment's is its masked text's: the plain
    digest of a file would let anyone holding --out check a guess at what it held."""
    if len(data) > DOCUMENT_LIMIT:
        raise SegmentRefused(
            f"over the {DOCUMENT_LIMIT >> 20} MiB document cap — split the document"
        )
    if key is not None:
        return hmac.new(key, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


def read_document(source: str, converted: Converted, digest: str) -> Segment:
    """A converted document as a segment: its paragraphs' text, each paragraph's locator
    (the converter's paragraphs hold no blank line, so the canonical split finds each
    again: paragraph *i* is the converter's *i*), and its bytes' `digest`. No cap on its
    text: one over the passage cap is written in parts (`pipeline/parts.py`)."""
    text = converted.text
    paragraphs = tuple(split_paragraphs(text))
    located = converted.paragraphs
    locators = tuple(p.locator for p in located) if len(located) == len(paragraphs) else ()
    return Segment(source, text, digest, paragraphs, locators, document=True)
