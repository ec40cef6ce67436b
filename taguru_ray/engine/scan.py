"""What the driver knows about each segment before any worker sees it, and where lines go.

The driver reads and hashes every segment (the manifest compares the hash),
decides the written id, and turns a refusal into a line; a skipped segment
offers later segments its existing file's labels, read only when needed.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.names import output_name, written_id
from taguru_ray.contract.source_file import SourceFileError, parse_source_file
from taguru_ray.pipeline.coverage import stderr_line, uncovered
from taguru_ray.pipeline.read import (
    SegmentRefused,
    masked_sha256,
    read_segment,
    redact_segment,
    segment_sha256,
)
from taguru_ray.pipeline.run_inputs import InputDigests, RunInputs
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.settings import Settings, compute_inputs
from taguru_ray.store.inputs import read_source
from taguru_ray.store.outdir import OutDir
from taguru_ray.text.redact import Rule, scan_answer_text


@dataclass
class Console:
    """Where report lines go; tests capture them."""

    out: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    err: Callable[[str], None] = field(
        default=lambda line: print(line, file=sys.stderr, flush=True)
    )


@dataclass
class Tally:
    written: int = 0
    unchanged: int = 0
    failed: int = 0
    planned: int = 0
    interrupted: int = 0
    total: int = 0


@dataclass(frozen=True)
class Scanned:
    """A segment after the driver read and hashed it."""

    index: int
    source: str
    written_id: str
    data: bytes | None = None
    inputs: dict[str, Any] | None = None
    refusal: str | None = None


def new_run_id() -> str:
    return secrets.token_hex(8)


def scan(
    settings: Settings,
    index: int,
    source: str,
    several: bool,
    seen_ids: set[str],
    inputs: RunInputs | None = None,
    read: Callable[[str], bytes] = read_source,
) -> Scanned:
    """Read and hash a segment; under --redact the hash is its masked text's (`read`).
    `read` is the file reader, or a run's in-memory segments (staged agent sessions)."""
    ident = written_id(source, settings.source.source_id, several)
    if inputs is not None and inputs.redaction:
        # The path is in every prompt and record: one that holds what --redact masks
        # (an e-mail address in a file name) is refused, never sent.
        tripped = scan_answer_text(source, inputs.redaction)
        if tripped:
            return Scanned(
                index,
                source,
                ident,
                refusal=(
                    f"its path holds what --redact masks ({', '.join(tripped)}) — rename the "
                    "file: a segment's path is sent in every prompt and written in its records"
                ),
            )
    if ident in seen_ids:
        return Scanned(
            index,
            source,
            ident,
            refusal=(
                f"writes the same source id {ident!r} as an earlier segment of this run — "
                "give the segments distinct file stems or run them separately"
            ),
        )
    seen_ids.add(ident)
    try:
        data = read(source)
        if inputs is not None and inputs.redaction:
            digest = masked_sha256(source, data, inputs.redaction, inputs.redact_key)
        else:
            digest = segment_sha256(data)
    except OSError as error:
        return Scanned(index, source, ident, refusal=f"cannot read it ({error})")
    except SegmentRefused as refusal:
        return Scanned(index, source, ident, refusal=str(refusal))
    digests = inputs.digests if inputs is not None else InputDigests()
    entry = compute_inputs(settings, digests, digest, ident, output_name(source))
    return Scanned(index, source, ident, data, entry)


def skip_line(source: str) -> str:
    return f"{source}: unchanged, skipped (--force re-extracts)"


def existing_gaps(
    out: OutDir,
    name: str,
    source: str,
    data: bytes,
    rules: Sequence[Rule] = (),
    key: bytes = b"",
) -> list[str]:
    """--coverage over a skipped segment: judged from the source file it already has,
    so a rerun over an unchanged corpus still reports every gap, calling nothing. The
    text is masked first under --redact: a gap line quotes the sentence."""
    written = out.read(name)
    if written is None:
        return []
    try:
        parsed = parse_source_file(written, name=name)
        segment, _ = redact_segment(read_segment(source, data), rules, key)
    except (SourceFileError, SegmentRefused):
        return []
    return [stderr_line(source, gap) for gap in uncovered(segment.paragraphs, parsed.associations)]


def existing_contribution(out: OutDir, name: str) -> Contribution:
    """What a skipped segment offers: its existing source file's labels and names."""
    data = out.read(name)
    if data is None:
        return Contribution()
    try:
        parsed = parse_source_file(data, name=name)
    except SourceFileError:
        return Contribution()
    return Contribution.of(parsed.associations, parsed.aliases)
