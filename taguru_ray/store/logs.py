"""Logs written line by line: the per-segment attempts log and the run's sidecar.

Both are "written incrementally": every record is flushed as it is written,
so a killed run keeps every record it wrote. The attempts log is truncated on
a fresh start of its segment and appended to on a checkpoint resume, so it
spans exactly the runs that built the source file. The diagnostics sidecar
is truncated once per run and has a single writer for the whole run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import IO

import fsspec

from taguru_ray.contract.records import Record, dumps_line
from taguru_ray.store.outdir import OutDir


class AttemptsLog:
    def __init__(self, out: OutDir, name: str) -> None:
        self._out = out
        self.name = name
        self._handle: IO[bytes] | None = None

    def open(self, *, fresh: bool) -> None:
        if fresh:
            self._handle = self._out.open_truncate(self.name)
        else:
            self._handle = self._out.open_append(self.name)

    def write(self, record: Record) -> None:
        if self._handle is None:
            raise RuntimeError("attempts log written before it was opened")
        self._handle.write(dumps_line(record))
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class Sidecar:
    """The --diagnostics-out JSONL file; safe to call from several threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle = fsspec.open(path, "wb").open()

    def write(self, records: Iterable[Record]) -> None:
        data = b"".join(dumps_line(record) for record in records)
        if not data:
            return
        with self._lock:
            self._handle.write(data)
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()
