"""The record of one provider batch a `--batch-api` run handed over (ADR 0068).

One object per batch under `<out>/.extract-batches/`, written whole before the
create is sent (ADR 0084): with no batch id yet, the time the driver was about to
create, and OpenAI's uploaded file — what lets a rerun find the batch a killed or
ambiguously answered create made (OpenAI by metadata and file, Anthropic by time
and request count) — then again with the batch id. A rerun reads them all and
matches its requests to them by `custom_id`, so nothing already handed over is
handed over again.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from taguru_ray.contract.records.typed import WHEN_NONEMPTY, WHEN_SET, Typed

BATCHES = ".extract-batches"


class BatchRecord(Typed):
    TYPE: ClassVar[str] = "batch"
    api: str  # openai | anthropic
    key: str  # the record's name: 16 hex of sha256 of run_id, round and its custom ids
    run_id: str  # the run that handed it over
    round: int  # that run's round, from 1
    batch_id: str | None
    input_file_id: Annotated[str | None, WHEN_SET] = None  # OpenAI's uploaded file
    resubmits: Annotated[str | None, WHEN_SET] = None  # the expired or failed batch it redoes
    custom_ids: list[str]
    # The driver's clock (seconds since the epoch) just before the create was sent: a
    # batch listed as made from then on, of as many requests, may be this one.
    created_after: Annotated[float | None, WHEN_SET] = None
    # Its requests already answered to segments that ended (written or failed), kept when
    # the record itself must stay for others: a rerun that skips those segments never
    # asks them, yet the record goes once the rest are answered.
    settled: Annotated[list[str], WHEN_NONEMPTY] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{BATCHES}/{self.key}.json"
