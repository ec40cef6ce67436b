"""One accounting of money: was this request already paid for, or possibly paid for?
(issue 49, ADR 0084).

Every path that can hand a paid request over asks here first, from durable records
(`--out/.extract-batches/`, `store/batch_journal.py`), by the request's digest
(its `custom_id`, `contract/batch_ids.py`):

- **batch create** and **batch resubmit** go through `intend`, which refuses any
  request the ledger holds and writes the batch's record *before* the create is
  sent — so a driver killed, or a create answered ambiguously, leaves a record
  from which a rerun finds the batch instead of paying again;
- **live** runs ask `held_by_batches` before their first request: a request a
  batch may have paid for is not asked again live (`engine/run.py` refuses the
  run and names the two ways on).

A request's standing is UNPAID (no record names it: it may be handed over),
HELD (a record names it: its answer is collected, or the batch found, never paid
again), or FAILED (the provider said its latest batch did not answer it:
expired, cancelled, failed, the line errored — only then may it be paid again).
A request whose verdict could not be read (a damaged line, a read that kept
failing) stays HELD: possibly paid. A record is dropped only once each request in
it was answered to a segment that ended, or handed over again in a later batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from enum import StrEnum

from taguru_ray.contract.completion import Completion
from taguru_ray.contract.records.batches import BATCHES, BatchRecord
from taguru_ray.llm.batch_results import LineFailure, LineResult
from taguru_ray.store.batch_journal import BatchJournal
from taguru_ray.store.outdir import OutDir


class Standing(StrEnum):
    UNPAID = "unpaid"
    HELD = "held"
    FAILED = "failed"


class AlreadyPaid(Exception):
    """A path tried to pay for a request the ledger holds: a defect of the tool, never
    of the user's input; the request is not handed over."""


class PaidLedger:
    def __init__(self, journal: BatchJournal) -> None:
        self._journal = journal
        self._records: dict[str, BatchRecord] = {}  # every live record, by key
        self._holders: dict[str, list[str]] = {}  # custom_id → keys naming it, oldest first
        self._verdicts: dict[tuple[str, str], str] = {}  # (key, custom_id) → answered|failed
        self._delivered: dict[str, set[str]] = {}  # source → ids its program was answered
        self._settled: set[str] = set()  # ids answered to segments that ended
        self._stems: dict[str, set[str]] = {}  # segment+body digest → ids known by it
        self._claimed: set[str] = set()  # ids this run's asks go by

    def load(self) -> list[str]:
        """The records earlier runs left (on a thread: it reads --out); the notes."""
        records, notes = self._journal.load()
        for record in sorted(records, key=lambda r: (r.created_after or 0.0, r.round, r.key)):
            self._hold(record)
            self._settled.update(record.settled)
        return notes

    @property
    def recorded(self) -> int:
        return len({keys[-1] for keys in self._holders.values() if keys})

    def records(self) -> list[BatchRecord]:
        return list(self._records.values())

    def current(self, record: BatchRecord) -> BatchRecord:
        """The record as last written (with its batch id, once adopted)."""
        return self._records.get(record.key, record)

    def batch_ids(self) -> set[str]:
        return {r.batch_id for r in self._records.values() if r.batch_id is not None}

    def claim(self, stem: str) -> str:
        """The custom_id this run's next ask of `stem` (its segment and body digest) goes
        by: the lowest-numbered one a record holds that no ended segment used and no ask
        of this run claimed — its answer is collected, never paid again — else one
        numbered past every id known. A rerun resumed from its checkpoints asks fewer
        bodies before this one than the run that paid for it, so counting this run's asks
        alone (ADR 0069) could give a held request a new id, and pay for it again."""
        known = sorted(self._stems.get(stem, set()), key=_occurrence)
        for cid in known:
            if cid not in self._claimed and cid not in self._settled and self.holder(cid):
                self._claimed.add(cid)
                return cid
        cid = f"{stem}-{max(map(_occurrence, known), default=0) + 1}"
        self._claimed.add(cid)
        self._stems.setdefault(stem, set()).add(cid)
        return cid

    def holder(self, cid: str) -> BatchRecord | None:
        keys = self._holders.get(cid)
        return self._records[keys[-1]] if keys else None

    def standing(self, cid: str) -> Standing:
        record = self.holder(cid)
        if record is None:
            return Standing.UNPAID
        if self._verdicts.get((record.key, cid)) == "failed":
            return Standing.FAILED
        return Standing.HELD

    async def intend(self, record: BatchRecord) -> None:
        """The one gate before money is spent: every request of `record` unpaid or failed
        at the provider, and the record durable in --out, before the create is sent."""
        if record.key in self._records:  # its record would be overwritten: lost
            raise AlreadyPaid(f"a batch record of key {record.key} exists: not written over")
        held = [cid for cid in record.custom_ids if self.standing(cid) == Standing.HELD]
        if held:
            raise AlreadyPaid(
                f"{len(held)} request(s) of round {record.round} are held by a recorded "
                f"batch (first: {held[0]}): not handed over again"
            )
        await asyncio.to_thread(self._journal.write, record)
        self._hold(record)

    async def adopt(self, record: BatchRecord, batch_id: str) -> BatchRecord:
        """The record with the provider's batch id, durable."""
        adopted = self.current(record).model_copy(update={"batch_id": batch_id})
        await asyncio.to_thread(self._journal.write, adopted)
        self._records[record.key] = adopted
        return adopted

    async def void(self, record: BatchRecord) -> None:
        """A record whose create never made a batch (refused, or none found at the
        provider): dropped, its requests back to their standing before it."""
        await asyncio.to_thread(self._journal.drop, [record])
        self._records.pop(record.key, None)
        for cid in record.custom_ids:
            keys = self._holders.get(cid, [])
            if record.key in keys:
                keys.remove(record.key)

    def heard(self, record: BatchRecord, verdicts: Mapping[str, LineResult]) -> None:
        """What the provider said of each request of `record` (an Unread says nothing)."""
        for cid, verdict in verdicts.items():
            if isinstance(verdict, Completion):
                self._verdicts[(record.key, cid)] = "answered"
            elif isinstance(verdict, LineFailure):
                self._verdicts[(record.key, cid)] = "failed"

    def delivered(self, source: str, cid: str) -> None:
        """The verdict of `cid` reached segment `source`'s program. Only a verdict the
        provider gave counts: an unread answer may still be collected by a rerun."""
        record = self.holder(cid)
        if record is not None and (record.key, cid) in self._verdicts:
            self._delivered.setdefault(source, set()).add(cid)

    def settle(self, source: str) -> None:
        """Segment `source` ended written or failed: a rerun asks none of its answers
        again (a written one is skipped; a failed one is asked afresh, as live)."""
        self._settled |= self._delivered.pop(source, set())

    def finished(self) -> list[BatchRecord]:
        """The records a rerun needs no more — each request in them answered to a segment
        that ended, or handed over again in a later batch. A stopped segment resumes
        from its checkpoint and asks again the requests after it: their records stay."""
        return [
            record
            for record in self._records.values()
            if all(
                cid in self._settled or self._holders.get(cid, [record.key])[-1] != record.key
                for cid in record.custom_ids
            )
        ]

    def kept(self) -> list[BatchRecord]:
        """The records that stay, each with the requests of it settled by now: rewritten
        at the run's end, so a rerun that never asks those requests can still drop it."""
        done = {r.key for r in self.finished()}
        kept = []
        for record in self._records.values():
            settled = sorted(cid for cid in record.custom_ids if cid in self._settled)
            if record.key not in done and settled != record.settled:
                kept.append(record.model_copy(update={"settled": settled}))
        return kept

    def _hold(self, record: BatchRecord) -> None:
        self._records[record.key] = record
        for cid in record.custom_ids:
            self._stems.setdefault(cid.rsplit("-", 1)[0], set()).add(cid)
            keys = self._holders.setdefault(cid, [])
            if record.key not in keys:
                keys.append(record.key)


def _occurrence(cid: str) -> int:
    tail = cid.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def held_by_batches(out: OutDir) -> tuple[int, int, str | None]:
    """(records, requests, the API) a --batch-api run left in --out: requests possibly
    paid for, whose answers only that API can collect."""
    records, _ = BatchJournal(out).load()
    apis = sorted({record.api for record in records})
    return (
        len(records),
        len({cid for record in records for cid in record.custom_ids}),
        apis[0] if apis else None,
    )


__all__ = ["BATCHES", "AlreadyPaid", "PaidLedger", "Standing", "held_by_batches"]
