"""The manifest's journal: where a process records each segment it wrote (ADR 0044).

A written segment's manifest entry is durable before the driver counts it, and
`Manifest.compact` folds the journal into the single file at the run's end,
then deletes what it folded (ADR 0009). On an object store, which has no
append, each entry is its own object, `.extract-manifest.d/<16 hex of
sha256(source)>.json`. On a local disk each writing process appends its entries
to one log of its own, `.extract-manifest.d/<random>.jsonl`, a line each: a
file per entry cost the worker a create and a rename per segment, and the
driver a read and an unlink per segment at compaction (0.23 ms of its CPU a
segment, measured; a million unlinks after a million-segment run).

Both are read back as one sequence of entries, oldest file first (by when each
was last written), a log's lines in the order they were appended: a later
entry for a source replaces an earlier one. A log a killed writer tore ends in
a partial line, which is passed over: that segment was never counted written.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Iterator
from typing import Any

from taguru_ray.contract.manifest_entry import MANIFEST_FIELDS
from taguru_ray.contract.names import MANIFEST_JOURNAL
from taguru_ray.contract.records import compact_json
from taguru_ray.store.appenders import FileAppender
from taguru_ray.store.outdir import OutDir

LOG_SUFFIX = ".jsonl"


def journal_name(source: str) -> str:
    """A segment's own journal entry on an object store: a later record of it replaces
    the earlier."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    return f"{MANIFEST_JOURNAL}/{digest}.json"


def entry_line(source: str, inputs: dict[str, Any]) -> bytes:
    """One journal entry, ``{"source": …, "entry": {…}}``, in compact JSON."""
    entry = {key: inputs[key] for key in MANIFEST_FIELDS if key in inputs}
    return compact_json({"source": source, "entry": entry}).encode("utf-8")


def journal_documents(name: str, data: bytes) -> Iterator[bytes]:
    """The entries a journal file holds: a log's lines in order (a torn last line
    included, for the parser to pass over), or the one entry of an object's."""
    if name.endswith(LOG_SUFFIX):
        yield from data.splitlines()
    else:
        yield data


class Journal:
    """One process's journal writer: `write` is durable when it returns."""

    def __init__(self, out: OutDir) -> None:
        self._out = out
        self._log: FileAppender | None = None
        self._lock = threading.Lock()

    def write(self, source: str, inputs: dict[str, Any]) -> None:
        line = entry_line(source, inputs)
        if not self._out.local:
            self._out.write(journal_name(source), line)
            return
        with self._lock:
            if self._log is None:
                name = f"{MANIFEST_JOURNAL}/{secrets.token_hex(8)}{LOG_SUFFIX}"
                self._log = FileAppender(self._out.local_path(name), fresh=True)
            self._log.append(line + b"\n")

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None
