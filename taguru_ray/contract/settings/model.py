"""The Settings of one `extract` invocation: its groups, and what the environment adds.

Each part of the run receives the group it reads (`settings.prompt`,
`settings.transport`, …); the whole travels to the workers once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taguru_ray.contract.settings.groups import (
    AUTO_CEILING_PER_ENDPOINT,
    GROUPS,
    Ladder,
    Prompting,
    Reading,
    Records,
    Run,
    Scale,
    Serving,
    Source,
    Spending,
    Transport,
)
from taguru_ray.contract.settings.knob import Declared, knobs_of


class Settings(BaseModel):
    """Everything one `extract` invocation settled on. Immutable; safe to ship to workers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source
    run: Run = Run()
    input: Reading = Reading()
    prompt: Prompting = Prompting()
    ladder: Ladder = Ladder()
    transport: Transport
    serving: Serving = Serving()
    spending: Spending = Spending()
    scale: Scale = Scale()
    records: Records = Records()
    # What fsspec/s3fs read from the environment (credentials, endpoint, region),
    # carried to the workers, which may run on other nodes. Never printed.
    storage_env: tuple[tuple[str, str], ...] = Field(default=(), repr=False)
    notes: tuple[str, ...] = ()  # said once on stderr before the run (unknown variables)

    @classmethod
    def of(cls, **values: Any) -> Settings:
        """Settings from flat names (``model=…, carryover=0``), each put in its group."""
        owner = {declared.name: declared.group for declared in declarations()}
        grouped: dict[str, dict[str, Any]] = {group.GROUP: {} for group in GROUPS}
        top: dict[str, Any] = {}
        for name, value in values.items():
            if name in owner:
                grouped[owner[name]][name] = value
            else:
                top[name] = value
        return cls.model_validate({**{k: body for k, body in grouped.items() if body}, **top})

    @property
    def inflight_ceiling(self) -> int:
        """The most completions the run may keep in flight: --max-inflight N, or the
        ceiling `auto` climbs to (per endpoint)."""
        limit = self.transport.max_inflight
        if isinstance(limit, int):
            return limit
        return AUTO_CEILING_PER_ENDPOINT * max(self.endpoint_count, 1)

    @property
    def endpoint_count(self) -> int:
        """The endpoints the run balances over: --endpoint's, or the engine's replicas."""
        if self.serving.engine is not None:
            return self.serving.engine_replicas
        return len(self.transport.endpoints)

    @property
    def window(self) -> int:
        """The segment window W (SPEC 4.2): --segment-window, else the in-flight ceiling,
        so a default run can keep every permit busy (ADR 0047). Derived from the settings
        alone: the same answers write the same bytes at every W."""
        pinned = self.scale.segment_window
        return pinned if pinned is not None else self.inflight_ceiling

    def replay_dir(self) -> str:
        """Where replay reads the attempts log: --replay-from, else OUT/.extract-trace."""
        if self.records.replay_from:
            return self.records.replay_from
        return self.source.out.rstrip("/") + "/.extract-trace"


def declarations() -> Iterator[Declared]:
    """Every setting, group by group, in declaration order."""
    for group in GROUPS:
        yield from knobs_of(group)
