"""Retiring segments from --out: `extract --prune`'s writes, in an order a kill cannot tear
(ADR 0083).

A run retires its orphans (`store/orphans.py`) as part of its commit, in four steps:

1. **plan** — ``.extract-retired/<run_id>.plan.jsonl``, one `RetiredRecord` per
   segment, written whole (a local temp file and a rename; one PUT on an
   object store); then ``<run_id>.retract.jsonl``, the same retractions as a
   Taguru import stream. The plan is the commit point: once it is there, the
   prune happens, by this run or the next.
2. **move** — each segment's source file, trace, attempts log and checkpoint
   into ``.extract-retired/<run_id>/``, out of where `import` reads (one rename
   each on a local disk; a copy, then the delete, on an object store).
3. **forget** — the manifest compacted without their entries (the caller's
   compaction, `Manifest.compact(forget=…)`).
4. **done** — ``<run_id>.jsonl``, the records, written whole; then the plan
   deleted.

Readers see the old state or the new one: `import` and `verify` read only the
records of step 4, and a segment whose file left in step 2 but whose record is
not written yet is simply not imported — the context keeps what it had, as
before the prune. A run killed anywhere in between leaves the plan; the next
run over --out (under the lock, before it reads the manifest) completes it
(`complete_pending`): every step is idempotent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.names import CHECKPOINTS, RETIRED, TRACE, attempts_name, checkpoint_name
from taguru_ray.contract.records import dumps_line, dumps_lines
from taguru_ray.contract.records.retired import (
    PLAN_SUFFIX,
    RECORDS_SUFFIX,
    RetiredRecord,
    plan_name,
    records_name,
    retract_name,
    run_of,
)
from taguru_ray.contract.source_file import SourceFileError, parse_source_file
from taguru_ray.pipeline.parts import part_id, part_name
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir

__all__ = [
    "Retired",
    "Retirement",
    "complete_pending",
    "pending",
    "plan_retirement",
    "read_retired",
    "segments",
    "to_retract",
]


HEADER_BYTES = 1 << 16


def plan_retirement(
    out: OutDir, entries: Mapping[str, dict[str, Any]], orphans: Iterable[str], run_id: str
) -> list[RetiredRecord]:
    """A record per orphan: its id and context from its source file's header (the
    manifest's `source_id` and `context` when the file is gone or unreadable)."""
    now = int(time.time())
    records = []
    for source in orphans:
        entry = entries[source]
        output = str(entry.get("output", ""))
        header = _header(out, output)
        first = RetiredRecord(
            run_id=run_id,
            source=source,
            id=header.id if header else (entry.get("source_id") or source),
            context_id=header.context_id if header else str(entry.get("context", "")),
            name=header.name if header else None,
            sha256=str(entry["sha256"]),
            output=output,
            retired_at=now,
        )
        records.append(first)
        if header is None or first.id.endswith(part_id("", 1)):
            records += _later_parts(out, first)
    return records


def _later_parts(out: OutDir, first: RetiredRecord) -> list[RetiredRecord]:
    """A document written in parts (`pipeline/parts.py`) retires whole: a record for each
    part file after the first, each a source of its own in the context. Its first file's
    id ends ``/part-001`` (when the file is gone, its parts are looked for all the same)."""
    found = []
    written_id = first.id.removesuffix(part_id("", 1))
    number = 2
    while out.exists(name := part_name(first.source, number)):
        header = _header(out, name)
        found.append(
            first.model_copy(
                update={
                    "id": header.id if header else part_id(written_id, number),
                    "context_id": header.context_id if header else first.context_id,
                    "name": header.name if header else first.name,
                    "output": name,
                }
            )
        )
        number += 1
    return found


def _header(out: OutDir, output: str) -> Any:
    """The header a source file's first line holds, or None."""
    handle = out.open_bytes(output) if output else None
    if handle is None:
        return None
    with handle:  # a header is a few KiB at most (names 1 KiB, a description 4 KiB)
        first = handle.read(HEADER_BYTES).split(b"\n", 1)[0]
    try:
        return parse_source_file(first, name=output, strict=False).header
    except SourceFileError:
        return None


class Retirement:
    """One run's prune on the store (see the module): `plan`, `move`, the caller's
    compaction with `forget`, `done`."""

    def __init__(self, out: OutDir, run_id: str, records: list[RetiredRecord]) -> None:
        self._out = out
        self.run_id = run_id
        self.records = records

    @property
    def forget(self) -> dict[str, str]:
        """The manifest entries to drop: path → the digest they hold."""
        return {record.source: record.sha256 for record in self.records}

    def plan(self) -> None:
        """The commit point: the plan, then the Taguru retraction stream."""
        lines = dumps_lines(record.record() for record in self.records)
        self._out.write(f"{RETIRED}/{plan_name(self.run_id)}", lines)
        stream = b"".join(dumps_line(record.retraction_header()) for record in self.records)
        self._out.write(f"{RETIRED}/{retract_name(self.run_id)}", stream)

    def move(self) -> int:
        """Every record's files into ``<run_id>/``; how many source files moved (a segment
        whose file a killed run already moved, or a hand deleted, counts none)."""
        moved = 0
        folder = f"{RETIRED}/{self.run_id}"
        for record in self.records:
            for name in _files(record):
                if self._out.move(name, f"{folder}/{name}") and name == record.output:
                    moved += 1
        return moved

    def done(self) -> None:
        """The records, then the plan deleted: `import` and `verify` see the prune now."""
        lines = dumps_lines(record.record() for record in self.records)
        self._out.write(f"{RETIRED}/{records_name(self.run_id)}", lines)
        self._out.delete(f"{RETIRED}/{plan_name(self.run_id)}")

    def apply(self, manifest: Manifest) -> None:
        """The whole prune, `manifest`'s compaction as its third step."""
        self.plan()
        self.move()
        manifest.compact(forget=self.forget)
        self.done()


def _files(record: RetiredRecord) -> list[str]:
    """A segment's files in --out: its source file, trace, attempts log, checkpoint (a
    document's later part: its file alone; the segment's others go with its first)."""
    if _later_part(record):
        return [record.output]
    trace = record.output
    return [
        record.output,
        f"{TRACE}/{trace}",
        f"{TRACE}/{attempts_name(record.source)}",
        f"{CHECKPOINTS}/{checkpoint_name(record.source)}",
    ]


def _later_part(record: RetiredRecord) -> bool:
    """Whether `record` is a document's part after the first (named ``<source>/part-NNN``)."""
    number = record.id.rpartition("/part-")[2]
    return (
        number.isdigit()
        and int(number) > 1
        and record.output == part_name(record.source, int(number))
    )


def segments(records: Iterable[RetiredRecord]) -> int:
    """How many segments `records` retired: a document in parts has a record a part."""
    return len({(record.run_id, record.source) for record in records})


def pending(out: OutDir) -> list[Retirement]:
    """The prunes a killed run left unfinished: a plan without its records."""
    names = out.names(RETIRED)
    found = []
    for name in sorted(names):
        run_id = run_of(name, PLAN_SUFFIX)
        if run_id is None or records_name(run_id) in names:
            continue
        data = out.read(f"{RETIRED}/{name}") or b""
        records = [r for r in _records(data).records if r.run_id == run_id]
        found.append(Retirement(out, run_id, records))
    return found


def complete_pending(out: OutDir) -> list[Retirement]:
    """Finish every prune a killed run left (call under the lock, before the manifest is
    read): the moves, the manifest without their entries, the records."""
    names = out.names(RETIRED)
    for name in sorted(names):  # done, but the kill came before the plan's delete
        run_id = run_of(name, PLAN_SUFFIX)
        if run_id is not None and records_name(run_id) in names:
            out.delete(f"{RETIRED}/{name}")
    unfinished = pending(out)
    for retirement in unfinished:
        retirement.plan()  # the retraction stream, if the kill came before it
        retirement.move()
        manifest, _ = Manifest.load(out)
        manifest.compact(forget=retirement.forget)
        retirement.done()
    return unfinished


@dataclass
class Retired:
    """The records of every finished prune in --out, and what could not be read."""

    records: list[RetiredRecord] = field(default_factory=list)
    files: int = 0  # record files read
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why
    unfinished: list[str] = field(default_factory=list)  # runs whose prune a rerun completes


def read_retired(out: OutDir) -> Retired:
    """Every finished prune's records (oldest retirement first), for `import` and `verify`."""
    found = Retired()
    names = out.names(RETIRED)
    wanted = sorted(name for name in names if run_of(name, RECORDS_SUFFIX) is not None)
    found.unfinished = sorted(
        run_id
        for name in names
        if (run_id := run_of(name, PLAN_SUFFIX)) is not None and records_name(run_id) not in names
    )
    for name, data in out.read_each([f"{RETIRED}/{name}" for name in wanted]).items():
        if not isinstance(data, bytes):
            found.unreadable[name] = data.strerror or str(data)
            continue
        found.files += 1
        read = _records(data)
        if read.bad:
            found.unreadable[name] = f"{read.bad} line(s) that are no retired record"
        found.records.extend(read.records)
    found.records.sort(key=lambda record: (record.retired_at, record.run_id, record.source))
    return found


def to_retract(
    records: Iterable[RetiredRecord], written: Container[tuple[str, str]], context: str | None
) -> list[tuple[str, RetiredRecord]]:
    """What `import` retracts: (the local context's name, record) once per source, the
    latest record of it, and none whose (context, id) a file being imported writes — a
    segment retired, then written again since, is current (ADR 0083). `context`: the
    import's --context, which names every file's context and so every record's."""
    latest: dict[tuple[str, str], RetiredRecord] = {}
    for record in records:
        key = (record.context(context), record.id)
        held = latest.get(key)
        if held is None or (record.retired_at, record.run_id) >= (held.retired_at, held.run_id):
            latest[key] = record
    return [(key[0], record) for key, record in sorted(latest.items()) if key not in written]


@dataclass
class _Read:
    records: list[RetiredRecord] = field(default_factory=list)
    bad: int = 0


def _records(data: bytes) -> _Read:
    read = _Read()
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        record = RetiredRecord.read(value) if isinstance(value, dict) else None
        if record is None:
            read.bad += 1
        else:
            read.records.append(record)
    return read
