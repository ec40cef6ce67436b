"""The diagnostics sidecar's records (CONTRACT.md section 4.3); its `chunk` is the
trace's with the source (`trace.ChunkRecord`)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from taguru_ray.contract.records.typed import WHEN_NONEMPTY, WHEN_SET, Stage, State, Typed


class RunRecord(Typed):
    TYPE: ClassVar[str] = "run"
    run_id: str


class ProviderMetadata(BaseModel):
    model_config = ConfigDict(frozen=True)
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None


class SidecarAttempt(Typed):
    """An attempt's metadata; the raw answer only when opted in, capped."""

    TYPE: ClassVar[str] = "attempt"
    run_id: str
    attempt_seq: int
    piece_id: str
    source: str
    stage: Stage
    chunk_index: int
    attempt: int
    max_attempts: int
    state: State
    length_limited: bool
    elapsed_seconds: float
    provider_metadata: ProviderMetadata | None
    parse_error: str | None
    validation_issues: list[Any] | None
    removed_items: Annotated[list[Any] | None, WHEN_NONEMPTY] = None
    piece_bytes: Annotated[int | None, WHEN_SET] = None  # the ladder only
    requested_max_tokens: Annotated[int | None, WHEN_SET] = None  # the ladder only
    response_text: Annotated[str | None, WHEN_SET] = None


class SidecarSegment(Typed):
    """A written segment's counts; taguru-ray's own counters only when their feature ran."""

    TYPE: ClassVar[str] = "segment"
    source: str
    associations: int
    concepts: int
    labels: int
    questions: int
    duplicates: int
    dropped: int
    removed: int
    uncovered: int
    redacted: Annotated[int | None, WHEN_SET] = None
    carryover_names: Annotated[int | None, WHEN_SET] = None
    gleaning_passes: Annotated[int | None, WHEN_SET] = None
    failed_gleanings: Annotated[int | None, WHEN_SET] = None
    batch_path: str


class GatewayRecord(Typed):
    """The run's permits at its end, last in the sidecar (a taguru-ray addition; readers
    skip unknown types): what `benchmark extract` reports as an endpoint's saturation —
    the in-flight level `auto` settled at, every request's outcome (`ok`, `http_429`,
    `timeout`, `transport`, …), the tokens — and what the run's steady state kept in
    flight and what held it there (ADR 0048): the window W, the mean and peak of the
    requests on the wire, the bound's word and why, the share of their cores the
    run's own processes used and how busy the driver's host was. The steady-state
    fields are absent when the run had no span to measure."""

    TYPE: ClassVar[str] = "gateway"
    run_id: str
    completions: int
    requests: int
    outcomes: dict[str, int]
    inflight_limit: int | None
    inflight_adaptive: bool
    max_in_flight: int
    input_tokens: int
    output_tokens: int
    window: Annotated[int | None, WHEN_SET] = None
    inflight_mean: Annotated[float | None, WHEN_SET] = None
    inflight_peak: Annotated[int | None, WHEN_SET] = None
    bound: Annotated[str | None, WHEN_SET] = None
    bound_why: Annotated[str | None, WHEN_SET] = None
    client_cpu_share: Annotated[float | None, WHEN_SET] = None
    host_cpu_busy: Annotated[float | None, WHEN_SET] = None


class EngineStart(BaseModel):
    """One server start of an engine's replica that answered its health check."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    replica: int
    generation: int  # 1 for its first start, then one more per replacement
    node: str  # the node's address
    accelerator: str | None  # the node's Ray accelerator type, read from the node
    version: str | None  # what the running server said of itself
    start_s: float  # from spawn to its first healthy answer


class EngineRecord(Typed):
    """The run's own replicas (`--engine`, ADR 0080), before the gateway record (a
    taguru-ray addition; readers skip unknown types): the engine, the weights, the
    version its servers stated, the GPUs each reserved and the type asked for, the
    types of the nodes they ran on (read from the nodes, never from the settings),
    every start that answered, and how many replicas were lost and replaced.
    `benchmark extract` names a cell's engine, version and GPU type from it."""

    TYPE: ClassVar[str] = "engine"
    run_id: str
    engine: str
    model: str
    version: str | None
    replicas: int
    gpus: int
    accelerator: str | None
    accelerators: list[str]
    starts: list[EngineStart]
    lost: int


SIDECAR_TYPES: tuple[type[Typed], ...] = (
    RunRecord,
    SidecarAttempt,
    SidecarSegment,
    EngineRecord,
    GatewayRecord,
)
