"""What the extraction program asks its interpreter to do, and what comes back.

The program (`rounds`) is plain generators: each `yield` hands out one
effect — a completion to make, a record to log, a note to print — and
receives its result; the engine's interpreter (`engine/segment.Interpreter`) carries
the effects out against the model, the attempt counter and the records, and a
test feeds a list of completions instead. No asyncio, Ray or file here.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records import Record
from taguru_ray.pipeline.claims import Proposal

T = TypeVar("T")


@dataclass(frozen=True)
class Ask:
    """Make a completion; the program receives its `Answered`."""

    request: CompletionRequest


@dataclass(frozen=True)
class Answered:
    completion: Completion
    attempt_seq: int  # run-wide, in issue order


@dataclass(frozen=True)
class LogAttempt:
    """An attempt record: durable in the attempts log before the program acts on it."""

    record: Record


@dataclass(frozen=True)
class LogMove:
    """A ladder move record (escalate, runaway), written before what it causes."""

    record: Record


@dataclass(frozen=True)
class Say:
    """A stderr note about the piece, said once per segment."""

    text: str


Program = Generator[Any, Any, T]  # yields effects (below), returns T


@dataclass(frozen=True)
class Log:
    """Any other attempts-log record (a system prompt, a demotion)."""

    record: Record


@dataclass(frozen=True)
class Sidecar:
    """Records for the diagnostics sidecar (when there is one)."""

    records: list[Record]


@dataclass(frozen=True)
class CurrentRung:
    """The run-wide structured-output rung now; receives it (None off the ladder)."""


@dataclass(frozen=True)
class Demote:
    """Compare-and-demote the run-wide rung a piece ran under; receives (moved, rung now)."""

    ran_under: str


@dataclass(frozen=True)
class LoadResume:
    """Read the segment's checkpoint bound to `fingerprint` (none when `discard`);
    receives (`Resume`, a note or None)."""

    fingerprint: dict[str, Any]
    discard: bool


@dataclass(frozen=True)
class Begin:
    """Open the segment's attempts log with its head records (`fresh`: truncate it)."""

    records: list[Record]
    fresh: bool


@dataclass(frozen=True)
class SaveUnit:
    """A finished piece: durable in the checkpoint before the program goes on."""

    piece_id: str
    unit: Record


@dataclass(frozen=True)
class SaveSplit:
    piece_id: str
    cap: int


@dataclass(frozen=True)
class SaveOverview:
    chunk_sha256: str
    answer: str


@dataclass(frozen=True)
class BindOverview:
    """Bind the checkpoint's units to the merged overview; receives True when units bound
    to another one were dropped."""

    digest: str
    keep: bool


@dataclass(frozen=True)
class Parallel:
    """Run programs side by side, at most `width` at once, each started (built) only when
    a slot frees, in order; receives their results in the same order."""

    starts: tuple[Callable[[], Program[Any]], ...]
    width: int


@dataclass(frozen=True)
class Commit:
    """The segment's commit turn (ADR 0019); receives the `Verdict`, or None when the run
    stopped before the turn came."""

    proposal: Proposal


@dataclass(frozen=True)
class Finish:
    """Write the source file and its trace; receives the notes the writing left. A
    document's `parts` (None for a text segment): its files after the first when its
    passage is over the cap (`pipeline/parts.py`), empty when it fits one — either way
    parts an earlier version of it left are removed."""

    source_file: bytes
    trace: bytes
    parts: tuple[bytes, ...] | None = None


@dataclass(frozen=True)
class Convert:
    """Convert a document (ADR 0078): receives its `Converted`, or the one line saying why
    it has none. `converter` is the manifest's compute input (``pdf:pypdfium2 5.15.2/1``);
    `digest` names the document's bytes; `keep`: the converted text may be kept in --out
    (not under --redact, where it would hold what the masking hides)."""

    converter: str
    data: bytes = field(repr=False)
    digest: str
    keep: bool


@dataclass(frozen=True)
class WhereRecords:
    """Where the segment's records are kept; receives `RecordsKept`."""


@dataclass(frozen=True)
class RecordsKept:
    attempts_log: bool  # the attempts log exists (a failure line points at it)
    sidecar: str | None  # the diagnostics sidecar's path, when there is one


class Stopped(Exception):
    """The run is stopping (first Ctrl+C or SIGTERM): a completion was refused. Thrown into
    the program at the effect that was refused."""


Effect = (
    Ask
    | Convert
    | LogAttempt
    | LogMove
    | Log
    | Say
    | Sidecar
    | CurrentRung
    | Demote
    | LoadResume
    | Begin
    | SaveUnit
    | SaveSplit
    | SaveOverview
    | BindOverview
    | Parallel
    | Commit
    | Finish
    | WhereRecords
)
