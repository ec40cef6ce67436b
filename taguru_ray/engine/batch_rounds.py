"""Rounds of provider batches: every completion the segment programs ask for, gathered
and handed over together, answered back into the program that asked (ADR 0068).

The segment programs run in the driver as they run on a worker; their `complete`
is `BatchRounds.complete`, which does not send a request but adds it to the
round being gathered. A round closes once nothing new happened for QUIET_S (no
request asked, no segment started or ended, no answer handed back): by then
every program that can ask has asked, and waits. Its requests go out in as few
batches as the provider's limits allow; when a batch ends, each answer goes back
to its program, which judges it as it judges a live one and asks its next
request (a corrective turn, a split's pieces, the next chunk under carryover) —
into the next round.

Money is accounted in one place (`engine/paid_ledger.py`, ADR 0084): a request's
`custom_id` is its identity (`contract/batch_ids.py`), and a batch is handed over
only through `PaidLedger.intend`, which refuses any request a recorded batch
holds and writes the batch's record to --out *before* the create is sent. So:

- a create answered ambiguously (a 5xx, a dropped connection) is never sent again
  before the provider's batches are listed for the one it may have made; one
  found is adopted, with a line (issue 49 item 2);
- a driver killed at any point leaves a record; the rerun finds the batch its
  create made (by metadata or file, or by time and request count), or creates
  it once if none was made (item 3);
- a poll or a results read that fails is tried again with backoff, for as long as
  the run lasts: the batch is still the provider's (item 1); a status this tool
  does not know is polled on, with a line naming the batch and its status (item 5);
- the first read that says the batch ended is trusted: its results are read from
  the files it names (item 4), streamed a line at a time (`llm/batch_results.py`),
  one bad line costing that line alone;
- a request the provider said it did not answer (expired, cancelled, failed, the
  line errored) is handed over again once per run, with a line; a second miss is a
  transport failure of that attempt, as a live request's last failed try is. A
  request whose answer could not be read is never handed over again: that attempt
  fails, and its record stays in --out for the rerun to read again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from taguru_ray.contract.batch_ids import custom_id, pack
from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.engine.batch_calls import BatchCalls, Refused, Verdicts
from taguru_ray.engine.paid_ledger import PaidLedger
from taguru_ray.llm.batch_wire import (
    BatchApiError,
    BatchWire,
    Line,
    LineFailure,
    LineResult,
    Unread,
)
from taguru_ray.pipeline.effects import Stopped
from taguru_ray.store.batch_journal import BatchJournal

QUIET_S = 0.3  # nothing new for this long: every program that can ask has asked
Say = Callable[[str], None]
VOID: Verdicts = {}  # a record whose create made no batch: its requests go out afresh


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
        quiet: float = QUIET_S,
    ) -> None:
        self._wire = wire
        self.ledger = PaidLedger(journal)
        self._run_id = run_id
        self._poll = max(poll_secs, 0.001)
        self._quiet = quiet
        self._say = say
        self._results: dict[str, asyncio.Task[Verdicts]] = {}  # by record key
        self._gathering: list[_Asked] = []
        self._activity = 0  # bumped by anything that may lead to a new request
        self._wake = asyncio.Event()
        self._closer: asyncio.Task[None] | None = None
        self._calls = BatchCalls(wire, self.ledger, self._poll, say)
        self._stopped = False
        self.round = 0
        self.handed_over = 0  # requests this run handed over

    def load(self) -> list[str]:
        """The batches earlier runs recorded (on a thread: it reads --out); the notes."""
        return self.ledger.load()

    @property
    def recorded(self) -> int:
        return self.ledger.recorded

    def touch(self) -> None:
        """Something happened that may lead to a request: the round waits QUIET_S more."""
        self._activity += 1

    async def complete(self, source: str, request: CompletionRequest) -> Completion:
        """The completion of `request`, asked by segment `source`, from a batch."""
        if self._stopped:
            raise Stopped()
        body = self._wire.body(request)
        cid = self.ledger.claim(custom_id(source, body, 0).rsplit("-", 1)[0])
        began = time.monotonic()
        self.touch()
        try:
            result, record = await self._answer(cid, body)
        except Stopped:
            raise
        except Exception as error:  # refused, unreachable, or possibly paid: kept recorded
            why = f"the batch API ({self._wire.api}): {type(error).__name__}: {error}"
            return Completion("transport", error=why, extra={"custom_id": cid})
        finally:
            self.touch()
        extra = {"batch_id": record.batch_id, "custom_id": cid}
        elapsed = time.monotonic() - began
        if isinstance(result, LineFailure | Unread):
            missed = f"batch {record.batch_id}: {result.why}"
            if isinstance(result, Unread):
                missed += (
                    f"; not handed over again (it may have been paid for): {record.name} "
                    "stays in --out for a rerun to read again — delete it to pay anew"
                )
            return Completion("transport", error=missed, elapsed_seconds=elapsed, extra=extra)
        return dataclasses.replace(result, elapsed_seconds=elapsed, extra=extra)

    async def _answer(self, cid: str, body: dict[str, object]) -> tuple[LineResult, BatchRecord]:
        again = False  # a request the provider did not answer goes out again, once a run
        while True:
            record = self.ledger.holder(cid)
            if record is None:  # unpaid: handed over (through the ledger's gate)
                record = await self._hand_over(Line(cid, body), None)
            verdicts = await self._ended(record)
            if verdicts is VOID:
                continue  # no batch was made of it: the ledger holds it no more
            record = self.ledger.current(record)
            result = verdicts.get(cid) or Unread(f"batch {record.batch_id} did not name it")
            if not isinstance(result, LineFailure) or again:
                return result, record
            again = True
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
                await asyncio.sleep(self._quiet)
                if seen == self._activity:
                    break
            gathered, self._gathering = self._gathering, []
            if gathered:
                await self._send_round(gathered)

    async def _send_round(self, gathered: list[_Asked]) -> None:
        """The round's requests in batches within the provider's limits, each recorded
        before its create; a batch that could not be made fails its requests."""
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
            except Exception as error:  # refused, the network is gone, or possibly paid
                for asked in group:
                    if not asked.handed.done():
                        asked.handed.set_exception(error)
                continue
            for asked in group:
                asked.handed.set_result(record)
        self.touch()

    async def _create(self, lines: list[Line], redoes: str | None) -> BatchRecord:
        ids = [line.custom_id for line in lines]
        named = "\n".join([self._run_id, str(self.round), *ids])  # a redo is a record apart
        key = hashlib.sha256(named.encode("utf-8")).hexdigest()[:16]
        file_id = await self._wire.upload(lines)  # an upload costs nothing: no record yet
        record = BatchRecord(
            api=self._wire.api,
            key=key,
            run_id=self._run_id,
            round=self.round,
            batch_id=None,
            input_file_id=file_id,
            resubmits=redoes,
            custom_ids=ids,
            created_after=time.time(),
        )
        await self.ledger.intend(record)  # durable before the create: a kill is found again
        try:
            batch_id = await self._calls.create(record, lines)
        except Refused as error:
            await self.ledger.void(record)
            raise BatchApiError(str(error)) from None
        record = await self.ledger.adopt(record, batch_id)
        self.handed_over += len(lines)
        self._say(
            f"batch round {self.round}: {len(lines)} request(s) handed over as {batch_id} "
            f"({self._wire.api}); recorded in --out before polling"
        )
        return record

    async def _ended(self, record: BatchRecord) -> Verdicts:
        task = self._results.get(record.key)
        if task is None:
            task = self._results[record.key] = asyncio.ensure_future(self._collect(record))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._stopped and task.cancelled():
                raise Stopped() from None
            raise

    async def _collect(self, record: BatchRecord) -> Verdicts:
        """Poll until the batch ends, then read its answers: a verdict per request."""
        batch_id = record.batch_id or await self._calls.recover(record)
        if batch_id is None:
            self._results.pop(record.key, None)
            return VOID
        verdicts = await self._calls.read(record, await self._calls.until_ended(batch_id))
        self.touch()
        return verdicts

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
        """The verdict of `cid` reached segment `source`'s program."""
        self.ledger.delivered(source, cid)

    def settle(self, source: str) -> None:
        """Segment `source` ended written or failed (`PaidLedger.settle`)."""
        self.ledger.settle(source)

    def finished(self) -> list[BatchRecord]:
        """The records a rerun needs no more, dropped at the run's end
        (`PaidLedger.finished`)."""
        return self.ledger.finished()
