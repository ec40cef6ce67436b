"""Rounds of provider batches: every completion the segment programs ask for, gathered
and handed over together, answered back into the program that asked (ADR 0068).

The segment programs run in the driver as they run on a worker; their `complete`
is `BatchRounds.complete`, which does not send a request but adds it to the
round being gathered. A round closes once nothing new happened for QUIET_S (no
request asked, no segment started or ended, no answer handed back): by then
every program that can ask has asked, and waits. Its requests go out in as few
batches as the provider's limits allow, each recorded in --out before it is
polled (`store/batch_journal.py`); when a batch ends, each answer goes back to
its program, which judges it as it judges a live one and asks its next request
(a corrective turn, a split's pieces, the next chunk under carryover) — into
the next round.

A request's `custom_id` is its identity (`contract/batch_ids.py`): a rerun asks
the same requests again and finds them in the recorded batches, so it waits
for those still running, reads those that ended, and hands nothing over twice.
A request its batch did not answer (expired, failed, a line that errored) is
handed over again once per run, with a line; a second miss is a transport
failure of that attempt, as a live request's last failed try is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tenacity import AsyncRetrying, retry_if_result, stop_never, wait_exponential

from taguru_ray.contract.batch_ids import custom_id, pack
from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.llm.batch_wire import BatchWire, Line, LineFailure, LineResult
from taguru_ray.pipeline.effects import Stopped
from taguru_ray.store.batch_journal import BatchJournal

QUIET_S = 0.3  # nothing new for this long: every program that can ask has asked
MAX_POLL_S = 600.0  # the longest wait between two polls of one batch
Say = Callable[[str], None]


@dataclass
class _Asked:
    line: Line
    redoes: str | None  # the batch id it is handed over again after
    handed: asyncio.Future[BatchRecord] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class BatchRounds:
    def __init__(
        self,
        wire: BatchWire,
        journal: BatchJournal,
        run_id: str,
        poll_secs: float,
        say: Say,
    ) -> None:
        self._wire = wire
        self._journal = journal
        self._run_id = run_id
        self._poll = max(poll_secs, 0.01)
        self._say = say
        self._by_id: dict[str, BatchRecord] = {}  # custom_id → the latest batch holding it
        self._all: dict[str, BatchRecord] = {}  # every record, by key
        self._results: dict[str, asyncio.Task[dict[str, LineResult]]] = {}  # by record key
        self._asked: Counter[str] = Counter()  # occurrences of each request, by its id's stem
        self._gathering: list[_Asked] = []
        self._activity = 0  # bumped by anything that may lead to a new request
        self._wake = asyncio.Event()
        self._closer: asyncio.Task[None] | None = None
        self._stopped = False
        self.round = 0
        self.handed_over = 0  # requests this run handed over
        self._delivered: dict[str, set[str]] = {}  # source → ids its program was answered
        self._settled: set[str] = set()  # ids of segments that ended written or failed

    def load(self) -> list[str]:
        """The batches earlier runs recorded (on a thread: it reads --out); the notes."""
        records, notes = self._journal.load()
        for record in sorted(records, key=lambda r: (r.round, r.key)):
            self._all[record.key] = record
            for cid in record.custom_ids:
                self._by_id[cid] = record  # a later record (a redo) replaces an earlier
        return notes

    @property
    def recorded(self) -> int:
        return len({record.key for record in self._by_id.values()})

    def touch(self) -> None:
        """Something happened that may lead to a request: the round waits QUIET_S more."""
        self._activity += 1

    async def complete(self, source: str, request: CompletionRequest) -> Completion:
        """The completion of `request`, asked by segment `source`, from a batch."""
        if self._stopped:
            raise Stopped()
        body = self._wire.body(request)
        stem = custom_id(source, body, 0).rsplit("-", 1)[0]
        self._asked[stem] += 1
        cid = f"{stem}-{self._asked[stem]}"
        began = time.monotonic()
        self.touch()
        try:
            result, record = await self._answer(cid, body)
        except Stopped:
            raise
        except Exception as error:  # the provider refused the batch, or stayed unreachable
            why = f"the batch API ({self._wire.api}): {type(error).__name__}: {error}"
            return Completion("transport", error=why, extra={"custom_id": cid})
        finally:
            self.touch()
        extra = {"batch_id": record.batch_id, "custom_id": cid}
        elapsed = time.monotonic() - began
        if isinstance(result, LineFailure):
            missed = f"batch {record.batch_id}: {result.why}"
            return Completion("transport", error=missed, elapsed_seconds=elapsed, extra=extra)
        return dataclasses.replace(result, elapsed_seconds=elapsed, extra=extra)

    async def _answer(self, cid: str, body: dict[str, object]) -> tuple[LineResult, BatchRecord]:
        record = self._by_id.get(cid)
        redo = 1  # a request its batch did not answer is handed over again, once a run
        while True:
            if record is None:
                record = await self._hand_over(Line(cid, body), None)
            result = (await self._ended(record)).get(cid)
            record = self._all.get(record.key, record)  # with its batch id, once adopted
            if result is None:
                result = LineFailure("the batch's results do not name this request")
            if isinstance(result, Completion) or redo == 0:
                return result, record
            redo -= 1
            record = await self._hand_over(Line(cid, body), record.batch_id)

    async def _hand_over(self, line: Line, redoes: str | None) -> BatchRecord:
        asked = _Asked(line, redoes)
        self._gathering.append(asked)
        self._wake.set()
        if self._closer is None:
            self._closer = asyncio.ensure_future(self._close_rounds())
        return await asked.handed

    async def _close_rounds(self) -> None:
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            while self._gathering:
                seen = self._activity
                await asyncio.sleep(QUIET_S)
                if seen == self._activity:
                    break
            gathered, self._gathering = self._gathering, []
            if gathered:
                await self._send_round(gathered)

    async def _send_round(self, gathered: list[_Asked]) -> None:
        """The round's requests in batches within the provider's limits, each recorded
        before anyone waits on it; a batch the provider refused fails its requests."""
        self.round += 1
        gathered.sort(key=lambda asked: asked.line.custom_id)  # the same round, the same file
        runs = pack(
            [asked.line.size() for asked in gathered], self._wire.max_requests, self._wire.max_bytes
        )
        for run in runs:
            group = [gathered[i] for i in run]
            try:
                redone = {asked.redoes for asked in group}  # named when all redo one batch
                record = await self._create(
                    [asked.line for asked in group], redone.pop() if len(redone) == 1 else None
                )
            except Exception as error:  # refused, or the network is gone: those attempts fail
                for asked in group:
                    if not asked.handed.done():
                        asked.handed.set_exception(error)
                continue
            for asked in group:
                self._by_id[asked.line.custom_id] = record
                asked.handed.set_result(record)
        self.touch()

    async def _create(self, lines: list[Line], redoes: str | None) -> BatchRecord:
        ids = [line.custom_id for line in lines]
        named = "\n".join([self._run_id, str(self.round), *ids])  # a redo is a record apart
        key = hashlib.sha256(named.encode("utf-8")).hexdigest()[:16]
        file_id = await self._wire.upload(lines)
        record = BatchRecord(
            api=self._wire.api,
            key=key,
            run_id=self._run_id,
            round=self.round,
            batch_id=None,
            input_file_id=file_id,
            resubmits=redoes,
            custom_ids=ids,
        )
        if file_id is not None:  # a kill before the create is found again by the file
            await asyncio.to_thread(self._journal.write, record)
        batch_id = await self._wire.create(lines, file_id)
        record = record.model_copy(update={"batch_id": batch_id})
        await asyncio.to_thread(self._journal.write, record)
        self._all[key] = record
        self.handed_over += len(lines)
        self._say(
            f"batch round {self.round}: {len(lines)} request(s) handed over as {batch_id} "
            f"({self._wire.api}); recorded in --out before polling"
        )
        return record

    async def _ended(self, record: BatchRecord) -> dict[str, LineResult]:
        task = self._results.get(record.key)
        if task is None:
            task = self._results[record.key] = asyncio.ensure_future(self._collect(record))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._stopped and task.cancelled():
                raise Stopped() from None
            raise

    async def _collect(self, record: BatchRecord) -> dict[str, LineResult]:
        """Poll until the batch ends (backing off to MAX_POLL_S), then read its answers."""
        batch_id = record.batch_id
        if batch_id is None and record.input_file_id is not None:
            batch_id = await self._adopt(record)
        if batch_id is None:  # its create never happened: its requests go out again
            return {}
        polling = AsyncRetrying(
            retry=retry_if_result(lambda ended: not ended[0]),
            wait=wait_exponential(multiplier=self._poll, min=self._poll, max=MAX_POLL_S),
            stop=stop_never,
            reraise=True,
        )
        ended: tuple[bool, str] = await polling(self._wire.ended, batch_id)
        status = ended[1]
        results = await self._wire.results(batch_id)
        self.touch()
        missed = [results.get(cid) for cid in record.custom_ids]
        missed = [r for r in missed if not isinstance(r, Completion)]
        if missed:
            first = missed[0]
            why = first.why if isinstance(first, LineFailure) else "absent from its results"
            self._say(
                f"batch {batch_id} ended ({status}) with {len(missed)} of "
                f"{len(record.custom_ids)} request(s) unanswered — first: {why}; they are "
                "handed over again, once"
            )
        return results

    async def _adopt(self, record: BatchRecord) -> str | None:
        """A record of an upload whose batch this driver did not live to record: the
        provider's batch over that file, or one created now (the file is not sent again)."""
        assert record.input_file_id is not None
        batch_id = await self._wire.adopt(record.input_file_id)
        if batch_id is None:
            lines = [Line(cid, {}) for cid in record.custom_ids]
            batch_id = await self._wire.create(lines, record.input_file_id)
        adopted = record.model_copy(update={"batch_id": batch_id})
        await asyncio.to_thread(self._journal.write, adopted)
        self._all[record.key] = adopted
        for cid in record.custom_ids:
            if self._by_id.get(cid) is record:
                self._by_id[cid] = adopted
        return batch_id

    def halt(self) -> None:
        """The run stops: no new round; programs waiting on one are stopped. Batches
        handed over stay recorded, for the rerun to collect."""
        self._stopped = True
        for asked in self._gathering:
            if not asked.handed.done():
                asked.handed.set_exception(Stopped())
        self._gathering = []
        for task in self._results.values():
            task.cancel()
        if self._closer is not None:
            self._closer.cancel()

    def delivered(self, source: str, cid: str) -> None:
        """The answer of `cid` reached segment `source`'s program."""
        self._delivered.setdefault(source, set()).add(cid)

    def settle(self, source: str) -> None:
        """Segment `source` ended written or failed: a rerun asks none of its answers
        again (a written one is skipped; a failed one is asked afresh, as live)."""
        self._settled |= self._delivered.pop(source, set())

    def finished(self) -> list[BatchRecord]:
        """The records a rerun needs no more — each request in them answered to a segment
        that ended written or failed, or handed over again in a later batch — dropped at
        the run's end. A stopped segment resumes from its checkpoint and asks again the
        requests after it: their records stay."""
        return [
            record
            for record in self._all.values()
            if all(
                cid in self._settled or self._by_id.get(cid, record).key != record.key
                for cid in record.custom_ids
            )
        ]
