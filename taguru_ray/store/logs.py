"""Logs written record by record: the per-segment attempts log and the run's sidecar.

The attempts log is "written incrementally" on every backend (CONTRACT.md
section 4.2): a record is durable before `write` returns — fsynced on a local
disk (or, written through `OutDir.offload`, before the awaited call returns:
its batch's one barrier, ADR 0018), on an object store the whole object re-PUT
(it has no append; ADR 0009 weighs this against parts) — so a killed run
keeps every record it wrote, in
one ``<stem>.attempts.jsonl`` object a reader opens as it would a local file.
It is truncated on a fresh start of its segment and appended to on a
checkpoint resume (the existing object read first), so it spans exactly the
runs that built the source file.

The diagnostics sidecar is truncated once per run and has one writer for the
whole run. It may live at any fsspec URL: on a local disk each write is
flushed; on an object store it is one streamed upload that appears whole at
close (a killed run leaves none there — the attempts logs keep the same
completions durably).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import IO

import fsspec
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.contract.records import Record, dumps_lines
from taguru_ray.store.outdir import Appender, OutDir


class AttemptsLog:
    """One segment's attempts log at `name` inside --out; one writer (the segment's worker)."""

    def __init__(self, out: OutDir, name: str) -> None:
        self._out = out
        self.name = name
        self._appender: Appender | None = None
        self._started = False

    def open(self, *, fresh: bool) -> None:
        """Start the log: emptied when `fresh`, else continued after its existing records."""
        self._appender = self._out.appender(self.name, fresh=fresh)
        self._started = True

    @property
    def opened(self) -> bool:
        """True once opened, closed or not: the log exists from then on (no probe needed)."""
        return self._started

    def write(self, record: Record) -> None:
        self.write_many([record])

    def write_many(self, records: Iterable[Record]) -> None:
        """Append records; they are durable when this returns (one flush or PUT for all),
        or, inside a group-commit batch, when the batch's barrier has run."""
        if self._appender is None:
            raise RuntimeError("attempts log written before it was opened")
        data = dumps_lines(records)
        if data:
            self._appender.append(data)

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None


class Sidecar:
    """The --diagnostics-out JSONL file at any fsspec URL; safe to call from several threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        fs, target = fsspec.core.url_to_fs(path)
        # A local file is flushed per write; an object-store file streams its
        # upload in large parts and completes it (one object) at close.
        self._local = isinstance(fs, LocalFileSystem)
        self._handle: IO[bytes] = fs.open(target, "wb")

    def write(self, records: Iterable[Record]) -> None:
        data = dumps_lines(records)
        if not data:
            return
        with self._lock:
            self._handle.write(data)
            if self._local:
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()
