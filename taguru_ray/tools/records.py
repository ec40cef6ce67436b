"""Reading the records extract leaves behind: tolerant JSONL, and one segment's files in --out.

The attempts log is written line by line on purpose (CONTRACT.md section
4.2), so a killed run can leave its last line torn. Every reader here treats
a line that is not a JSON object as unreadable — counted, said by the caller,
never a failure — and skips it. A line is read as standard JSON with finite
numbers (`contract/strict_json.py`): ``NaN``, ``Infinity`` or ``1e999`` (which
Python's own reader takes as infinity) in a figure no writer of ours makes is
an unreadable line too, so no tool meets a non-finite second or token count.
Record types a reader does not know are skipped by the reader too (CONTRACT.md
section 4: "skip unknown types").

A segment's files share one stem: ``<out>/<stem>.jsonl`` (the source file),
``<out>/.extract-trace/<stem>.jsonl`` (the trace, only for a written segment)
and ``<out>/.extract-trace/<stem>.attempts.jsonl`` (the attempts log, kept
when the segment fails). --out may be any fsspec URL (CONTRACT.md section 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import fsspec

from taguru_ray.contract import strict_json
from taguru_ray.contract.names import TRACE
from taguru_ray.contract.records.attempts import SegmentAttempts, SettingsRecord
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.walk import reach

Record = dict[str, Any]
ATTEMPTS_SUFFIX = ".attempts.jsonl"
JSONL = ".jsonl"


@dataclass
class Lines:
    """A JSONL file read leniently: its JSON-object lines, in order, and what was skipped."""

    records: list[Record] = field(default_factory=list)
    unreadable: int = 0  # lines that are not a JSON object
    torn_tail: bool = False  # the last non-blank line is one of them: a killed run's

    def of_type(self, kind: str) -> list[Record]:
        return [record for record in self.records if record.get("type") == kind]


@dataclass
class SourceFiles:
    """A folder's source files, read: name -> bytes, and name -> why for each one listed
    that could not be read (said by the caller, never dropped)."""

    files: dict[str, bytes] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)


def read_source_files(out: str) -> SourceFiles:
    """A folder's source files (``*.jsonl``, non-recursive, hidden names skipped, so
    ``.extract-trace/`` is never read), in name order, or one file (keyed by OUT as
    given). FileNotFoundError when OUT does not exist; another OSError when it cannot be
    reached or listed."""
    folder = OutDir(out)
    reach(folder.fs, folder.root)  # missing, or hidden by a folder on its way: said apart
    if not folder.fs.isdir(folder.root):
        return SourceFiles({out: bytes(folder.fs.cat_file(folder.root))})
    names = sorted(
        name for name in folder.names() if name.endswith(JSONL) and not name.startswith(".")
    )
    found = SourceFiles()
    for name, data in folder.read_each(names).items():
        if isinstance(data, bytes):
            found.files[name] = data
        else:
            found.unreadable[name] = data.strerror or str(data)
    found.files = {name: found.files[name] for name in names if name in found.files}
    return found


def source_files(out: str) -> dict[str, bytes]:
    """`read_source_files`'s files; an OSError naming the first one that could not be read."""
    found = read_source_files(out)
    for name, why in found.unreadable.items():
        raise OSError(f"{name}: {why}")
    return found.files


def read_lines(data: bytes) -> Lines:
    """Parse JSONL bytes; blank lines are skipped, a non-object line is counted, not raised."""
    lines = Lines()
    last_bad = False
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = strict_json.loads(raw)
        except ValueError:  # JSON errors, non-finite numbers, UnicodeDecodeError alike
            value = None
        last_bad = not isinstance(value, dict)
        if last_bad:
            lines.unreadable += 1
        else:
            lines.records.append(value)
    lines.torn_tail = last_bad
    return lines


def attempt_key(ref: Any) -> tuple[str, int] | None:
    """``{run_id, attempt_seq}`` as a hashable key; None when absent or malformed."""
    if not isinstance(ref, dict):
        return None
    run_id, seq = ref.get("run_id"), ref.get("attempt_seq")
    if isinstance(run_id, str) and isinstance(seq, int) and not isinstance(seq, bool):
        return run_id, seq
    return None


def unreadable_note(name: str, lines: Lines) -> str | None:
    """The one line a reader says about skipped lines, or None when there were none."""
    if not lines.unreadable:
        return None
    torn = " — the last line is torn (a killed run, most likely)" if lines.torn_tail else ""
    return f"{name}: {lines.unreadable} unreadable line(s) skipped{torn}"


@dataclass
class SegmentFiles:
    """One segment's records in an --out: trace (None when not written) and attempts log."""

    stem: str
    trace: Lines | None
    attempts: Lines | None
    source_file: bytes | None  # the written source file, when it exists

    @property
    def source(self) -> str:
        """The segment's source as its own records spell it (else the stem)."""
        for lines in (self.trace, self.attempts):
            if lines is not None:
                for record in lines.of_type("segment"):
                    if isinstance(record.get("source"), str):
                        return str(record["source"])
        return self.stem

    @property
    def status(self) -> str:
        """``written``; ``failed`` (a log, no trace, no source file); ``untraced``."""
        if self.trace is not None:
            return "written"
        return "untraced" if self.source_file is not None else "failed"


def segment_files(out: OutDir) -> list[SegmentFiles]:
    """Every segment --out holds records for, by stem (name order); hidden temp files skipped."""
    names = {name for name in out.names(TRACE) if not name.startswith(".")}
    traces = {n[: -len(JSONL)] for n in names if n.endswith(JSONL) and not _is_log(n)}
    logs = {n[: -len(ATTEMPTS_SUFFIX)] for n in names if _is_log(n)}
    stems = sorted(traces | logs)
    wanted = [f"{TRACE}/{s}{JSONL}" for s in traces] + [
        f"{TRACE}/{s}{ATTEMPTS_SUFFIX}" for s in logs
    ]
    wanted += [f"{s}{JSONL}" for s in stems]
    data = out.read_many(wanted)
    segments = []
    for stem in stems:
        trace = data.get(f"{TRACE}/{stem}{JSONL}")
        log = data.get(f"{TRACE}/{stem}{ATTEMPTS_SUFFIX}")
        segments.append(
            SegmentFiles(
                stem=stem,
                trace=None if trace is None else read_lines(trace),
                attempts=None if log is None else read_lines(log),
                source_file=data.get(f"{stem}{JSONL}"),
            )
        )
    return segments


def read_file(path: str) -> bytes:
    """One file's bytes (a path or URL); OSError with a plain reason when it is missing or
    a folder."""
    fs, target = fsspec.core.url_to_fs(path)
    if not fs.exists(target):
        raise FileNotFoundError("no such file")
    if fs.isdir(target):
        raise IsADirectoryError(
            "is a folder — give the log itself, <out>/.extract-trace/<stem>.attempts.jsonl"
        )
    return bytes(fs.cat_file(target))


def attempts_logs(target: str) -> list[tuple[str, Lines]]:
    """(path, lines) of every attempts log an --out holds, by stem (name order), or of
    the one log TARGET names. FileNotFoundError when TARGET does not exist."""
    out = OutDir(target)
    if not out.fs.exists(out.root):
        raise FileNotFoundError("no such folder or file")
    if not out.fs.isdir(out.root):
        return [(target, read_lines(read_file(target)))]
    stems = sorted(
        n[: -len(ATTEMPTS_SUFFIX)] for n in out.names(TRACE) if _is_log(n) and n[0] != "."
    )
    data = out.read_many([f"{TRACE}/{stem}{ATTEMPTS_SUFFIX}" for stem in stems])
    return [
        (attempts_log_path(target, stem), read_lines(data[f"{TRACE}/{stem}{ATTEMPTS_SUFFIX}"]))
        for stem in stems
        if f"{TRACE}/{stem}{ATTEMPTS_SUFFIX}" in data
    ]


def attempts_log_path(out: str, stem: str) -> str:
    """The attempts log's path as a user would type it: --out as given, then the name."""
    return f"{out.rstrip('/')}/{TRACE}/{stem}{ATTEMPTS_SUFFIX}"


def _is_log(name: str) -> bool:
    return name.endswith(ATTEMPTS_SUFFIX)


@dataclass
class RunModels:
    """Which model each run of an attempts log asked, read as the log goes: a run's
    settings record names it; an attempt of a run that named none takes the latest
    model named before it. `run` is the run of the latest segment record."""

    models: dict[str, str] = field(default_factory=dict)
    run: Any = None
    model: str | None = None

    def see(self, record: dict[str, Any]) -> bool:
        """Take `record` if it is a segment record or a settings record naming a model."""
        if segment := SegmentAttempts.view(record):
            self.run = segment.run_id
            return True
        if (settings := SettingsRecord.view(record)) and isinstance(settings.model, str):
            self.model = settings.model
            if isinstance(self.run, str):
                self.models[self.run] = self.model
            return True
        return False

    def of(self, run_id: Any) -> str | None:
        """The model run `run_id` asked."""
        return self.models.get(run_id, self.model) if isinstance(run_id, str) else self.model
