"""The provider's side of a batch, said once: make it once, find it again, wait for it,
read it (issue 49, ADR 0084). `BatchRounds` gathers the rounds; this is how each of
its batches is made and read.

- `create`: one batch of a record already durable in --out, never two — a create
  answered ambiguously (a 5xx, a dropped connection) is sent again only after the
  provider's listing showed no batch made by the try before it; one found is
  adopted, with a line (item 2);
- `recover`: a record written before a create this driver did not live to see
  answered — the batch found at the provider, or (OpenAI) created once over its
  uploaded file, or (Anthropic) none: the record goes (item 3);
- `until_ended`: polled, backing off to MAX_POLL_S, until the provider says it
  ended; the first such read is trusted (item 4); a status this tool does not know
  is polled on; a line names the batch and its status whenever it changes and every
  PROGRESS_S (item 5);
- `patiently`: a read that fails in transport is tried again with backoff for as
  long as the run lasts — the batch is still the provider's (item 1).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from taguru_ray.contract.records.batches import BatchRecord
from taguru_ray.engine.paid_ledger import PaidLedger
from taguru_ray.llm.batch_wire import (
    TRANSIENT,
    Ambiguous,
    BatchApiError,
    BatchWire,
    Line,
    LineFailure,
    LineResult,
    Snapshot,
    Unread,
)
from taguru_ray.llm.retry import RetryableStatus

MAX_POLL_S = 600.0  # the longest wait between two polls of one batch
PROGRESS_S = 600.0  # a batch still running is named again at least this often
CREATE_TRIES = 4  # creates tried (each after looking for the one before) before giving up
T = TypeVar("T")
Say = Callable[[str], None]
Verdicts = dict[str, LineResult]


class PossiblyPaid(Exception):
    """A create whose every try was ambiguous and whose batch the provider's listing does
    not show (yet): the record stays in --out, so a rerun looks again before paying."""


class Refused(Exception):
    """The provider refused the create (a 4xx): nothing was made."""


class BatchCalls:
    def __init__(self, wire: BatchWire, ledger: PaidLedger, poll: float, say: Say) -> None:
        self._wire = wire
        self._ledger = ledger
        self._poll = poll
        self._say = say
        self._finding = asyncio.Lock()  # one search of the provider's listing at a time

    async def read(self, record: BatchRecord, snapshot: Snapshot) -> Verdicts:
        """A verdict for each request of `record` from its ended batch, said if not all
        were answered."""
        if snapshot.note is not None:
            self._say(snapshot.note)
        reader = await self.patiently(
            f"reading the results of batch {snapshot.batch_id}",
            lambda: self._wire.results(snapshot),
        )
        verdicts = {cid: reader.found.get(cid) or snapshot.absent() for cid in record.custom_ids}
        self._ledger.heard(record, verdicts)
        self.tell_end(snapshot, verdicts, reader.bad_lines, reader.first_bad, reader.repeated)
        return verdicts

    async def create(self, record: BatchRecord, lines: list[Line]) -> str:
        """One batch of `record`, never two: a create is sent again only after the
        provider's listing showed no batch made by the try before it."""
        wait, doubt = self._poll, None
        for _ in range(CREATE_TRIES):
            if doubt is not None:
                found = await self._find(record)
                if found is not None:
                    self._say(
                        f"batch create for round {record.round}: {doubt}, but the provider "
                        f"holds {found} made from these requests: adopted, not created again"
                    )
                    return found
            try:
                return await self._wire.create(record, lines)
            except RetryableStatus as error:  # a 429: nothing was made
                pause = error.retry_after or wait
            except Ambiguous as error:
                doubt, pause = str(error), wait
            except BatchApiError as error:
                if doubt is None:
                    raise Refused(str(error)) from None
                raise  # refused after a doubtful try: the record stays
            await asyncio.sleep(pause)
            wait = min(wait * 2, MAX_POLL_S)
        if doubt is not None and (found := await self._find(record)) is not None:
            return found
        raise PossiblyPaid(
            f"the create of round {record.round} failed {CREATE_TRIES} times ({doubt}); "
            f"{record.name} stays in --out, so a rerun looks for its batch before paying"
        )

    async def _find(self, record: BatchRecord) -> str | None:
        async with self._finding:
            return await self._wire.find(record, self._ledger.batch_ids())

    async def recover(self, record: BatchRecord) -> str | None:
        """A record written before a create this driver did not live to see answered:
        the provider's batch made of it, adopted; else (OpenAI) one created over its
        file, or (Anthropic) none — the record goes and its requests out again."""
        found = await self._find(record)
        if found is not None:
            self._say(
                f"batch {found}: found at the provider, made from round {record.round} of "
                f"run {record.run_id} before its id was recorded: adopted, not created again"
            )
        elif record.input_file_id is not None:
            found = await self.create(record, [])
        else:
            await self._ledger.void(record)
            return None
        await self._ledger.adopt(record, found)
        return found

    async def until_ended(self, batch_id: str) -> Snapshot:
        """Polls (backing off to MAX_POLL_S) until the provider says the batch ended; a
        failed read is tried again; a line whenever its status changes, and every
        PROGRESS_S while it runs."""
        wait, shown, last = self._poll, "", time.monotonic()
        while True:
            snapshot = await self.patiently(
                f"reading the status of batch {batch_id}", lambda: self._wire.poll(batch_id)
            )
            if snapshot.ended:
                return snapshot
            now = time.monotonic()
            if snapshot.status != shown or now - last >= PROGRESS_S:
                detail = f", {snapshot.detail}" if snapshot.detail else ""
                strange = (
                    ""
                    if snapshot.known
                    else (
                        " — a status this tool does not know: polled until the provider says "
                        "the batch ended"
                    )
                )
                self._say(
                    f"waiting on batch {batch_id} ({self._wire.api}): "
                    f"{_shown(snapshot.status)}{detail}{strange}"
                )
                shown, last = snapshot.status, now
            await asyncio.sleep(wait)
            wait = min(wait * 2, MAX_POLL_S)

    async def patiently(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """`call`, tried again with backoff while it fails in transport (a 5xx, a 429,
        a dropped connection): the batch is the provider's, and will still be there.
        The first failure of a streak is said; a 4xx ends it (BatchApiError)."""
        wait, failures = self._poll, 0
        while True:
            try:
                return await call()
            except TRANSIENT as error:
                failures += 1
                if failures == 1:
                    self._say(
                        f"{what} failed ({_why(error)}); the batch is still the provider's: "
                        "tried again with backoff"
                    )
                pause = error.retry_after if isinstance(error, RetryableStatus) else None
                await asyncio.sleep(pause or wait)
                wait = min(wait * 2, MAX_POLL_S)

    def tell_end(
        self,
        snapshot: Snapshot,
        verdicts: Verdicts,
        bad_lines: int,
        first_bad: str | None,
        repeated: int,
    ) -> None:
        batch, status, total = snapshot.batch_id, snapshot.status, len(verdicts)
        failed = [v for v in verdicts.values() if isinstance(v, LineFailure)]
        unread = [v for v in verdicts.values() if isinstance(v, Unread)]
        if failed:
            self._say(
                f"batch {batch} ended ({status}) with {len(failed)} of {total} request(s) "
                f"unanswered — first: {failed[0].why}; they are handed over again, once"
            )
        if unread:
            self._say(
                f"batch {batch} ended ({status}) with {len(unread)} of {total} answer(s) "
                f"unreadable — first: {unread[0].why}; not handed over again (they may "
                "have been paid for): their record stays in --out for a rerun to read"
            )
        if bad_lines:
            self._say(f"batch {batch}: {bad_lines} bad line(s) in its results — first: {first_bad}")
        if repeated:
            self._say(
                f"batch {batch}: {repeated} custom_id(s) repeated in its results; "
                "the first success of each is kept"
            )


def _why(error: BaseException) -> str:
    return (
        str(error).split(":", 1)[0]
        if isinstance(error, RetryableStatus)
        else (f"{type(error).__name__}: {error}"[:200])
    )


def _shown(status: str) -> str:
    """A provider's word, safe to print (it is the provider's, not ours)."""
    kept = "".join(c if c.isprintable() else "?" for c in status)
    return kept if len(kept) <= 40 else kept[:40] + "…"
