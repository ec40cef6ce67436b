"""What the driver knows about each segment before any worker sees it, and where lines go.

The driver reads and hashes every segment (the manifest compares the hash),
decides the written id, and turns a refusal into a line; a skipped segment
offers later segments its existing file's labels, read only when needed.
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import sys
import threading
import time
from array import array
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
from taguru_ray.store.inputs import SourceList, read_source
from taguru_ray.store.outdir import OutDir
from taguru_ray.text.redact import Rule, scan_answer_text

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
            sys.stdout.write(text + "\n")
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
            try:
                self.flush()
            except (OSError, ValueError):  # a closed pipe: the next line's write says so
                return

    def flush(self) -> None:
        with self._lock:
            if self._held.is_set():
                self._held.clear()
                sys.stdout.flush()


STDOUT = _Stdout()


@atexit.register
def _flush_at_exit() -> None:
    with contextlib.suppress(OSError, ValueError):
        STDOUT.flush()


def _stderr_line(text: str) -> None:
    STDOUT.flush()
    print(text, file=sys.stderr, flush=True)


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

    @property
    def unsettled(self) -> int:
        """Segments neither written, unchanged nor failed: interrupted, or never reached.
        A run that was not stopped must have none (`ExtractRun._summary`)."""
        return self.total - self.written - self.unchanged - self.failed


@dataclass(slots=True)
class Scanned:
    """A segment after the driver read and hashed it (or only looked up the hash the helper
    process found: `unread`). Never changed once made; not frozen
    only because a frozen dataclass costs a microsecond more to build, a second a million."""

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


class WrittenIds:
    """Which segments write an id an earlier segment of the run writes (refused): `first`
    says whether segment `index` is the first to write its id.

    A set of a million ids costs over a hundred MB of driver memory. Sources from one
    argument are distinct paths, so a run that writes each path as its id holds
    nothing. Otherwise the repeats are found once, in index order, before the first
    answer (`_IdTable`), and only their indexes are kept: the answer does not depend
    on the order segments are scanned in, and several batches are scanned at once
    (`engine/ahead.py`). A segment refused for its path (`--redact`) writes no id.
    """

    def __init__(
        self,
        ident_of: Callable[[int], str] | None,
        count: int,
        refused_path: Callable[[int], bool] | None = None,
    ) -> None:
        self._ident_of = ident_of  # None: no id can repeat
        self._count = count
        self._refused_path = refused_path
        self._repeats: frozenset[int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls, sources: Sequence[str], source_id: str | None, inputs: RunInputs | None = None
    ) -> WrittenIds:
        """The repeats of a run over `sources` (`settings.source.source_id`)."""
        several = len(sources) > 1
        if not several or (
            source_id is None and isinstance(sources, SourceList) and sources.parts == 1
        ):
            return cls(None, 0)
        rules = inputs.redaction if inputs is not None else ()
        return cls(
            lambda index: written_id(sources[index], source_id, several),
            len(sources),
            (lambda index: bool(scan_answer_text(sources[index], rules))) if rules else None,
        )

    def first(self, ident: str, index: int) -> bool:
        """Whether no earlier segment writes segment `index`'s id (`ident`)."""
        if self._ident_of is None:
            return True
        repeats = self._repeats
        if repeats is None:
            with self._lock:
                if self._repeats is None:
                    self._repeats = self._find_repeats()
                repeats = self._repeats
        return index not in repeats

    def _find_repeats(self) -> frozenset[int]:
        assert self._ident_of is not None
        table = _IdTable(self._ident_of, self._count)
        refused = self._refused_path
        return frozenset(
            index
            for index in range(self._count)
            if not (refused is not None and refused(index))
            and not table.first(self._ident_of(index), index)
        )


class _IdTable:
    """Ids met so far, as their 64-bit hashes beside the index of the segment that wrote
    each, in an open-addressed table at most two-thirds full (about 20 bytes an id); an
    id whose hash is met again is compared exactly with that segment's, so a hash
    collision never counts as a repeat."""

    def __init__(self, ident_of: Callable[[int], str], count: int) -> None:
        self._ident_of = ident_of
        self._size = 0
        self._used = 0
        self._grow(count)

    def _grow(self, count: int) -> None:
        held = list(zip(self._hashes, self._indexes, strict=True)) if self._size else []
        size = 16
        while size * 2 < count * 3:
            size *= 2
        self._size, self._mask = size, size - 1
        self._hashes = array("q", bytes(8 * size))
        self._indexes = array("Q", bytes(8 * size))  # the segment's index + 1; 0: empty
        self._used = 0
        for key, plus_one in held:
            if plus_one:
                self._put(key, plus_one)

    def _put(self, key: int, plus_one: int) -> None:
        slot = key & self._mask
        while self._indexes[slot]:
            slot = (slot + 1) & self._mask
        self._hashes[slot] = key
        self._indexes[slot] = plus_one
        self._used += 1

    def first(self, ident: str, index: int) -> bool:
        """Whether no segment met before wrote `ident`; `index` is the segment writing it."""
        key = hash(ident)
        hashes, indexes, mask = self._hashes, self._indexes, self._mask
        slot = key & mask
        while plus_one := indexes[slot]:
            if hashes[slot] == key and self._ident_of(plus_one - 1) == ident:
                return False
            slot = (slot + 1) & mask
        if (self._used + 1) * 3 > self._size * 2:
            self._grow(self._used * 2 + 2)
        self._put(key, index + 1)
        return True


def _first(seen_ids: set[str] | WrittenIds, ident: str, index: int) -> bool:
    if isinstance(seen_ids, WrittenIds):
        return seen_ids.first(ident, index)
    if ident in seen_ids:
        return False
    seen_ids.add(ident)
    return True


_NO_DIGESTS = InputDigests()
# The last run's entry with every field its segments share, keyed by the very settings
# and digests objects: compute_inputs hashes the settings model on each call, which
# showed in a skip of a million segments. One reference, swapped whole.
_template: tuple[Settings, InputDigests, dict[str, Any]] | None = None


def segment_inputs(
    settings: Settings, digests: InputDigests, digest: str, ident: str, output: str
) -> dict[str, Any]:
    """`compute_inputs(settings, digests, digest, ident, output)`, from a copy of the run's
    shared entry (the same keys, in the same order)."""
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
) -> Scanned:
    """Read and hash a segment; under --redact the hash is its masked text's (`read`).
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
    if not _first(seen_ids, ident, index):
        return Scanned(
            index,
            source,
            ident,
            refusal=(
                f"writes the same source id {ident!r} as an earlier segment of this run — "
                "give the segments distinct file stems or run them separately"
            ),
        )
    digests = inputs.digests if inputs is not None else _NO_DIGESTS
    if digest is not None:
        entry = segment_inputs(settings, digests, digest, ident, output_name(source))
        return Scanned(index, source, ident, None, entry)
    return _read(settings, index, source, ident, inputs, read)


def read_scanned(
    settings: Settings,
    scanned: Scanned,
    inputs: RunInputs | None = None,
    read: Callable[[str], bytes] = read_source,
) -> Scanned:
    """An unread segment (its hash from the helper) read and hashed here: the bytes a
    worker gets and the hash the manifest records come from this one read."""
    return _read(settings, scanned.index, scanned.source, scanned.written_id, inputs, read)


def _read(
    settings: Settings,
    index: int,
    source: str,
    ident: str,
    inputs: RunInputs | None,
    read: Callable[[str], bytes],
) -> Scanned:
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
    digests = inputs.digests if inputs is not None else _NO_DIGESTS
    entry = segment_inputs(settings, digests, digest, ident, output_name(source))
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
