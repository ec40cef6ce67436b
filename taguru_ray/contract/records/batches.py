"""The record of one provider batch a `--batch-api` run handed over (ADR 0068).

One object per batch under `<out>/.extract-batches/`, written whole before the
batch is polled: first with the uploaded file's id and no batch id (a driver
killed between the upload and the create is found again by that file), then
with the batch id. A rerun reads them all and matches its requests to them by
`custom_id`, so nothing already handed over is handed over again.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from taguru_ray.contract.records.typed import WHEN_SET, Typed

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

    @property
    def name(self) -> str:
        return f"{BATCHES}/{self.key}.json"
