"""What the run says about its replicas: the lines, the progress part, the record. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.engines import ServerSpec
from taguru_ray.contract.records.sidecar import EngineRecord, EngineStart

PREFIX = "engine: "
ACCELERATOR_PREFIX = "accelerator_type:"  # Ray's resource for a node's GPU type
TAIL_JOIN = " ⏎ "  # a log's lines, on the one line a failure is


def gpus_words(gpus: int, accelerator: str | None) -> str:
    """``1 GPU``, ``2 GPUs of type H100``, ``no GPU``."""
    if gpus == 0:
        return "no GPU"
    kind = f" of type {accelerator}" if accelerator else ""
    return f"{gpus} GPU{'s' if gpus > 1 else ''}{kind}"


def starting_line(spec: ServerSpec, replicas: int, accelerator: str | None) -> str:
    return (
        f"{PREFIX}starting {replicas} {spec.engine} replica(s) of {spec.model}, "
        f"{gpus_words(spec.gpus, accelerator)} each"
    )


def not_started_line(
    spec: ServerSpec, index: int, why: str, tail: Sequence[str], where: str
) -> str:
    """A replica that could not start: one line, its log's last lines at its end."""
    line = f"--engine {spec.engine}: replica {index} could not start: {why}"
    if tail:
        line += f" — last lines of its log ({where}): {TAIL_JOIN.join(tail)}"
    else:
        line += f" — its log ({where}) is empty"
    return line


def up_line(index: int, node: str, accelerator: str | None, seconds: float, again: bool) -> str:
    on = f"{node} ({accelerator})" if accelerator else node
    verb = "up again" if again else "up"
    return f"{PREFIX}replica {index} {verb} on {on} after {seconds:.0f} s"


def lost_line(index: int, why: str, tail: Sequence[str]) -> str:
    line = f"{PREFIX}replica {index} lost ({why})"
    if tail:
        line += f" — last lines of its log: {TAIL_JOIN.join(tail)}"
    return line + " — its requests in flight are asked again elsewhere; starting another"


def waiting_line(
    index: int, gpus: int, accelerator: str | None, seconds: float, seen: Sequence[str]
) -> str:
    """A replica Ray has not placed yet: no node has its GPUs free."""
    types = f" (GPU types in the cluster now: {', '.join(seen)})" if seen else ""
    return (
        f"{PREFIX}replica {index} waits {seconds:.0f} s for a node with "
        f"{gpus_words(gpus, accelerator)} free{types} — an autoscaler may add one; "
        "Ctrl+C stops the run"
    )


def no_gpu_line(
    gpus: int, replicas: int, accelerator: str | None, found: float, types: Sequence[str]
) -> str:
    """A local Ray (no autoscaler) that cannot hold every replica at once."""
    have = f"{found:g} GPU(s)" + (f" of type {', '.join(types)}" if types else "")
    return (
        f"--engine-gpus {gpus}: {replicas} replica(s) need {gpus_words(gpus, accelerator)} each "
        f"and this machine's Ray has {have} — join a cluster with GPUs (--address), give fewer "
        "--engine-replicas, or --engine-gpus 0 to run the engine on CPU"
    )


@dataclass
class SlotView:
    """One replica slot as the progress line sees it."""

    index: int
    state: str  # placing | starting | up | lost | stopped
    seconds: float  # in that state
    node: str | None = None


def progress_words(slots: Sequence[SlotView], gpus: int, accelerator: str | None) -> str | None:
    """The progress line's engine part while a replica is not up (None when all are)."""
    down = [slot for slot in slots if slot.state != "up"]
    if not down:
        return None
    first = down[0]
    if first.state == "placing":
        doing = f"waits {first.seconds:.0f} s for {gpus_words(gpus, accelerator)}"
    elif first.state == "lost":
        doing = f"lost {first.seconds:.0f} s ago"
    else:
        doing = f"starting on {first.node} for {first.seconds:.0f} s"
    up = len(slots) - len(down)
    return f"engine {up}/{len(slots)} up (replica {first.index} {doing})"


@dataclass(frozen=True)
class Start:
    """One server start that answered: where, on what, how long it took."""

    replica: int
    generation: int
    node: str
    accelerator: str | None
    version: str | None
    start_s: float

    def record(self) -> dict[str, Any]:
        return {
            "replica": self.replica,
            "generation": self.generation,
            "node": self.node,
            "accelerator": self.accelerator,
            "version": self.version,
            "start_s": round(self.start_s, 3),
        }


@dataclass
class Ledger:
    """Every start and loss of the run's replicas: the record and the summary line."""

    starts: list[Start] = field(default_factory=list)
    lost: int = 0

    def versions(self) -> list[str]:
        return sorted({s.version for s in self.starts if s.version})

    def accelerators(self) -> list[str]:
        return sorted({s.accelerator for s in self.starts if s.accelerator})

    def record(
        self, run_id: str, spec: ServerSpec, replicas: int, accelerator: str | None
    ) -> EngineRecord:
        """The sidecar's `engine` record: what was asked, and what each start found."""
        versions = self.versions()
        return EngineRecord(
            run_id=run_id,
            engine=spec.engine,
            model=spec.model,
            version="/".join(versions) if versions else None,
            replicas=replicas,
            gpus=spec.gpus,
            accelerator=accelerator,
            accelerators=self.accelerators(),
            starts=[EngineStart(**start.record()) for start in self.starts],
            lost=self.lost,
        )

    def summary(self, spec: ServerSpec, replicas: int) -> str:
        version = "/".join(self.versions()) or "(version not stated)"
        types = self.accelerators()
        on = f" on {', '.join(types)}" if types else ""
        line = (
            f"{PREFIX}{spec.engine} {version}, {replicas} replica(s) of {spec.model}{on} "
            f"({gpus_words(spec.gpus, None)} each)"
        )
        if self.lost:
            line += f"; {self.lost} lost and replaced"
        return line


def accelerator_types(resources: dict[str, float]) -> list[str]:
    """The accelerator types a cluster's resources name."""
    return sorted(
        key.removeprefix(ACCELERATOR_PREFIX)
        for key in resources
        if key.startswith(ACCELERATOR_PREFIX)
    )


def death(error: BaseException) -> str:
    """Ray's word on a dead actor, its first line (its node, its exit)."""
    text = str(error).strip().splitlines()
    first = next((line for line in text if line.strip()), type(error).__name__)
    return first[:200]
