"""The batches a `--batch-api` run handed over, kept in --out (ADR 0068).

Each batch is one object, `.extract-batches/<key>.json`, written whole (an
atomic write, one PUT on an object store) before anything waits on the batch,
so a driver killed at any point leaves a record of every batch it created —
or, killed between OpenAI's upload and create, of the file it uploaded.
Records of batches whose every answer a run used are dropped at its end.
"""

from __future__ import annotations

import json

from taguru_ray.contract.records import dumps_line
from taguru_ray.contract.records.batches import BATCHES, BatchRecord
from taguru_ray.store.outdir import OutDir


class BatchJournal:
    def __init__(self, out: OutDir) -> None:
        self._out = out

    def load(self) -> tuple[list[BatchRecord], list[str]]:
        """Every record, in name order, and a note for each one unreadable (passed over:
        its requests are handed over again)."""
        names = sorted(n for n in self._out.names(BATCHES) if n.endswith(".json"))
        found: list[BatchRecord] = []
        notes: list[str] = []
        for name, data in self._out.read_each([f"{BATCHES}/{n}" for n in names]).items():
            record = None
            if isinstance(data, bytes):
                try:
                    record = BatchRecord.read(json.loads(data))
                except ValueError:
                    record = None
            if record is None:
                why = "unreadable JSON" if isinstance(data, bytes) else str(data)
                notes.append(f"{name}: not a batch record ({why}) — passed over")
                continue
            found.append(record)
        return found, notes

    def write(self, record: BatchRecord) -> None:
        """Durable when it returns."""
        self._out.write(record.name, dumps_line(record.record()))

    def drop(self, records: list[BatchRecord]) -> None:
        self._out.delete_many([record.name for record in records])
        self._out.remove_empty_folder(BATCHES)
