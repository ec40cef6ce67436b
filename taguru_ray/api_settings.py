"""The keyword settings of `taguru_ray.extract`, for type checkers.

Generated from the declarations (`taguru_ray.contract.settings.groups`) by
`python -m taguru_ray.contract.settings.python > taguru_ray/api_settings.py`;
tests/test_api_typed.py fails when it is out of date. Do not edit by hand.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import TypedDict

__all__ = ["ExtractSettings"]


class ExtractSettings(TypedDict, total=False):
    """`extract`'s settings by name; unset: the environment, --config, the default."""

    recursive: bool
    text_column: str
    id_column: str | None
    name: str | None
    description: str | None
    source_id: str | None
    date: int | str | datetime.date | None
    tags: str | Sequence[str]
    no_passage: bool
    config: str | os.PathLike[str] | None
    force: bool
    prune: bool
    chunk_bytes: int
    redact: bool | str
    redact_rules: str | os.PathLike[str] | None
    redact_key: str | None
    convert_timeout: float
    convert_memory: int
    questions: int
    fact_budget: int
    chunk_context: str
    carryover: int
    vocabulary: str | os.PathLike[str] | None
    schema_file: str | os.PathLike[str] | None
    candidates: bool
    max_attempts: int
    structured_output: str
    max_output_tokens: int
    escalation_factor: int
    runaway_ratio: int
    corrective_context_bytes: int
    lossy: bool
    gleanings: int
    url: str | None
    model: str | None
    api_key: str | None
    api_key_header: str
    timeout_secs: float
    endpoints: str | Sequence[str]
    max_inflight: int | str
    rpm: int
    tpm: int
    batch_api: str | None
    batch_poll_secs: float
    engine: str | None
    engine_replicas: int
    engine_gpus: int
    engine_accelerator: str | None
    engine_args: str
    engine_command: str | None
    engine_start_secs: float
    prices: str | os.PathLike[str] | None
    price_per_hour: float | None
    budget_usd: float | None
    budget_tokens: int | None
    address: str | None
    workers: int
    worker_resource: str | None
    segment_window: int | None
    parallel: int
    worker_hang_secs: float
    lease_seconds: float
    commit_order: str
    trace_attempts: bool
    diagnostics_out: str | os.PathLike[str] | None
    diagnostics_raw_bytes: int
    coverage: bool
    replay: str
    replay_from: str | os.PathLike[str] | None
    resume_from: str | None
    progress: bool | str
    progress_seconds: float | None
    # the same settings by their flags' names
    tag: str | Sequence[str]
    schema: str | os.PathLike[str] | None
    endpoint: str | Sequence[str]
