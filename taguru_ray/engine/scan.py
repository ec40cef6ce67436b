"""What the driver knows about each segment before any worker sees it, and where lines go.

The driver reads and hashes every segment (the manifest compares the hash),
decides the written id, and turns a refusal into a line; a skipped segment
offers later segments its existing file's labels, read only when needed.
"""

from __future__ import annotations

import atexit
import secrets
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from taguru_ray.contract.names import output_name, split_row, written_id
from taguru_ray.contract.source_file import SourceFileError, parse_source_file
from taguru_ray.documents.kinds import converter_id
from taguru_ray.engine.written_ids import WrittenIds, first_to_write
from taguru_ray.pipeline.coverage import stderr_line, uncovered
from taguru_ray.pipeline.parts import part_id, part_name
from taguru_ray.pipeline.read import (
    SegmentRefused,
    document_sha256,
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
from taguru_ray.text.paragraphs import split_paragraphs
from taguru_ray.text.redact import Rule, scan_answer_text
from taguru_ray.text.terminal import printable

FLUSH_S = 0.05  # the longest a report line waits in stdout's buffer


class _Stdout:
    """stdout's report lines, flushed within FLUSH_S rather than one write per line.

    A skip of a million segments prints a million lines, and a write call per line
    was a fifth of the skip's time. A line is buffered (a terminal still shows it at
    once: its stdout flushes at each newline), a flusher thread writes the buffer
    out FLUSH_S after the first line it holds, and stdout is flushed before any
    stderr line, so lines on the two streams keep their order wherever they meet.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = threading.Event()
        self._flusher: threading.Thread | None = None

    def line(self, text: str) -> None:
        with self._lock:
            if not _write(sys.stdout, printable(text) + "\n"):
                return
            if self._held.is_set():
                return
            self._held.set()
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_after, name="taguru-stdout", daemon=True
                )
                self._flusher.start()

    def _flush_after(self) -> None:
        while self._held.wait():
            time.sleep(FLUSH_S)
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._held.is_set():
                self._held.clear()
                _write(sys.stdout, "")


def _write(stream: TextIO, text: str) -> bool:
    """Write and flush (`text` may be empty); False when the stream is gone — a closed
    pipe, its reader dead (a `benchmark extract` harness killed, `| head` done). The
    lines are a view of the run, whose truth is in --out: a run whose reader went away
    goes on, or stops as it was told, instead of failing — or wedging its window — on
    a line no one can read (issue 36)."""
    try:
        if text:
            stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        return False
    return True


STDOUT = _Stdout()


@atexit.register
def _flush_at_exit() -> None:
    STDOUT.flush()


def _stderr_line(text: str) -> None:
    STDOUT.flush()
    _write(sys.stderr, printable(text) + "\n")


@dataclass
class Console:
    """Where report lines go; tests capture them."""

    out: Callable[[str], None] = field(default=STDOUT.line)
    err: Callable[[str], None] = field(default=_stderr_line)


@dataclass
class Tally:
    written: int = 0
    unchanged: int = 0
    failed: int = 0
    planned: int = 0
    interrupted: int = 0
    total: int = 0
    reached: int = 0  # segments 0 .. reached-1 were reached, in name order
    empty: int = 0  # written with no association (every item removed, or none given)

    @property
    def unsettled(self) -> int:
        """Segments neither written, unchanged nor failed: interrupted, or never reached.
        A run that was not stopped must have none (`Summary.close`)."""
        return self.total - self.written - self.unchanged - self.failed


@dataclass(slots=True)
class Scanned:
    """A segment after the driver read and hashed it, or built its entry from the hash the
    helper process found (`unread`). Never changed once made; not frozen only because a
    frozen dataclass costs a microsecond more to build, a second a million."""

    index: int
    source: str
    written_id: str
    data: bytes | None = None
    inputs: dict[str, Any] | None = None
    refusal: str | None = None

    @property
    def unread(self) -> bool:
        """Hashed by the helper process, not read here: skippable, or `read_scanned` next."""
        return self.data is None and self.inputs is not None


def new_run_id() -> str:
    return secrets.token_hex(8)


_NO_DIGESTS = InputDigests()
# The last run's entry with every field its segments share, keyed by the very settings
# and digests objects: compute_inputs hashes the settings model on each call, which
# showed in a skip of a million segments. One reference, swapped whole.
_template: tuple[Settings, InputDigests, dict[str, Any]] | None = None


def segment_inputs(
    settings: Settings,
    digests: InputDigests,
    digest: str,
    ident: str,
    output: str,
    converter: str | None = None,
) -> dict[str, Any]:
    """`compute_inputs(settings, digests, digest, ident, output, converter)`, from a copy
    of the run's shared entry (the same keys, in the same order)."""
    if converter is not None:  # a document's entry: its converter among the inputs
        return compute_inputs(settings, digests, digest, ident, output, converter)
    global _template
    held = _template
    if held is None or held[0] is not settings or held[1] is not digests:
        held = (settings, digests, compute_inputs(settings, digests, "", ident, ""))
        _template = held
    entry = held[2].copy()
    entry["sha256"] = digest
    entry["source_id"] = ident if settings.source.source_id is not None else ""
    entry["output"] = output
    return entry


def scan(
    settings: Settings,
    index: int,
    source: str,
    several: bool,
    seen_ids: set[str] | WrittenIds,
    inputs: RunInputs | None = None,
    read: Callable[[str], bytes] = read_source,
    digest: str | None = None,
    document: str | None = None,
) -> Scanned:
    """Read and hash a segment; under --redact the hash is its masked text's (`read`).
    A `document` (its kind, from its shape: `Corpus.document`) is hashed as bytes and
    converted on its worker; its entry names the converter (ADR 0078).
    `read` is the file reader, or a run's in-memory segments (staged agent sessions).
    With the `digest` a helper process found (`digest_helper.py`) nothing is read: the
    segment comes back unread (`Scanned.unread`), for `read_scanned` if it is not skipped."""
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
    if not first_to_write(seen_ids, ident, index):
        row = split_row(source)
        why = (
            f"its id {row[1]!r} is an earlier row's too — ids must be unique in a shard "
            "(and a shard named once)"
            if row is not None and ident == source
            else f"writes the same source id {ident!r} as an earlier segment of this run — "
            "give the segments distinct file stems or run them separately"
        )
        return Scanned(index, source, ident, refusal=why)
    digests = inputs.digests if inputs is not None else _NO_DIGESTS
    converter = converter_id(document) if document is not None else None
    if digest is not None:
        entry = segment_inputs(settings, digests, digest, ident, output_name(source), converter)
        return Scanned(index, source, ident, None, entry)
    return _read(settings, index, source, ident, inputs, read, converter)


def read_scanned(
    settings: Settings,
    scanned: Scanned,
    inputs: RunInputs | None = None,
    read: Callable[[str], bytes] = read_source,
) -> Scanned:
    """An unread segment (its hash from the helper) read and hashed here: the bytes a
    worker gets and the hash the manifest records come from this one read."""
    converter = scanned.inputs.get("converter") if scanned.inputs is not None else None
    return _read(
        settings, scanned.index, scanned.source, scanned.written_id, inputs, read, converter
    )


def _read(
    settings: Settings,
    index: int,
    source: str,
    ident: str,
    inputs: RunInputs | None,
    read: Callable[[str], bytes],
    converter: str | None = None,
) -> Scanned:
    try:
        data = read(source)
        redacting = inputs is not None and bool(inputs.redaction)
        if converter is not None:  # hashed as bytes, converted on the worker (ADR 0078)
            digest = document_sha256(data, inputs.redact_key if redacting and inputs else None)
        elif inputs is not None and redacting:
            digest = masked_sha256(source, data, inputs.redaction, inputs.redact_key)
        else:
            digest = segment_sha256(data)
    except OSError as error:
        return Scanned(index, source, ident, refusal=f"cannot read it ({error})")
    except SegmentRefused as refusal:
        return Scanned(index, source, ident, refusal=str(refusal))
    digests = inputs.digests if inputs is not None else _NO_DIGESTS
    entry = segment_inputs(settings, digests, digest, ident, output_name(source), converter)
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
    document: bool = False,
) -> list[str]:
    """--coverage over a skipped segment: judged from the source file it already has,
    so a rerun over an unchanged corpus still reports every gap, calling nothing. The
    text is masked first under --redact: a gap line quotes the sentence. A `document`'s
    text is its file's passage (masked already), never converted again; without one
    (--no-passage) its gaps are not judged."""
    written = out.read(name)
    if written is None:
        return []
    try:
        parsed = parse_source_file(written, name=name)
        if document:
            if parsed.passage is None:
                return []
            paragraphs = split_paragraphs(parsed.passage.text)
        else:
            paragraphs = list(redact_segment(read_segment(source, data), rules, key)[0].paragraphs)
    except (SourceFileError, SegmentRefused):
        return []
    return [stderr_line(source, gap) for gap in uncovered(paragraphs, parsed.associations)]


def existing_contribution(out: OutDir, name: str, source: str | None = None) -> Contribution:
    """What a skipped segment offers: its existing source file's labels and names — every
    part's, for a document written in parts (its first file's id ends ``/part-001``)."""
    data = out.read(name)
    if data is None:
        return Contribution()
    try:
        parsed = parse_source_file(data, name=name)
    except SourceFileError:
        return Contribution()
    associations, aliases = list(parsed.associations), list(parsed.aliases)
    if source is not None and parsed.header.id.endswith(part_id("", 1)):
        number = 2
        while (more := out.read(part_name(source, number))) is not None:
            try:
                part = parse_source_file(more, name=part_name(source, number))
            except SourceFileError:
                break
            associations += part.associations
            aliases += part.aliases
            number += 1
    return Contribution.of(associations, aliases)
