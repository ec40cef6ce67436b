"""The driver's pacing part: samples the run each tick and says what bounded it (ADR 0048).

Every TICK_S it asks the gateway for its pace (requests on the wire and waiting,
integrated; the limit now; its own CPU), asks each of the run's other actors
for its CPU, reads the driver's own CPU and its host's busy time, and keeps the
dispatch loop's time spent waiting on the segment window — one `bound.Sample`.
The judgement is `bound.py`'s (pure); this part only gathers, keeps the samples
bounded, and words the result for the summary, the sidecar and the progress line.

A failed ask (an actor restarting, the gateway gone at the end) skips that
figure for one tick: the counters are cumulative, so the next tick has it all.
An actor that restarted starts its CPU from zero; what its predecessor spent is
kept (`_Cpu`), so a worker death never reads as negative CPU.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ray

from taguru_ray.cpu import CpuReading, host_busy, own_cpu
from taguru_ray.engine.bound import Bound, Caps, Observed, Sample, judge, observe

TICK_S = 1.0  # between samples: a steady state of ten seconds has ten
ASK_S = 2.0  # an actor that takes longer to say its CPU is skipped for the tick
MOST_SAMPLES = 4096  # then every other one goes: the run's figures are cumulative
RECENT = 15  # ticks the progress line judges: the last quarter-minute


class _Cpu:
    """CPU seconds of the run's processes, a restarted one's predecessor kept."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], CpuReading] = {}  # by (host, pid)
        self._slot: dict[str, tuple[str, int]] = {}  # an actor's name → its process now

    def add(self, name: str, reading: CpuReading) -> None:
        self._slot[name] = (reading.host, reading.pid)
        self._last[(reading.host, reading.pid)] = reading

    def seconds(self) -> float:
        return sum(reading.seconds for reading in self._last.values())

    def cores(self) -> int:
        """The cores of the hosts the run's processes are on, each counted once."""
        by_host: dict[str, int] = {}
        for reading in self._last.values():
            by_host[reading.host] = max(by_host.get(reading.host, 0), reading.cores)
        return sum(by_host.values())


class Pacing:
    """Samples of the run, and what held its in-flight level."""

    def __init__(
        self,
        caps: Caps,
        window_waited: Callable[[], float],
        dispatched_all: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.caps = caps
        self._window_waited = window_waited
        self._dispatched_all = dispatched_all
        self._clock = clock
        self._cpu = _Cpu()
        self._pace: dict[str, Any] = {}  # the gateway's last answer
        self.samples: list[Sample] = []

    async def run(self, gateway: Any, actors: Callable[[], list[tuple[str, Any]]]) -> None:
        """Sample every TICK_S until cancelled."""
        while True:
            await self.tick(gateway, actors())
            await asyncio.sleep(TICK_S)

    async def tick(self, gateway: Any, actors: list[tuple[str, Any]]) -> Sample:
        """One sample: the gateway's pace, every actor's CPU, the driver's own."""
        asks = [self._ask("gateway pace", gateway.pace.remote())]
        asks += [self._ask(name, actor.cpu.remote()) for name, actor in actors]
        answers = await asyncio.gather(*asks)
        pace, cpus = answers[0], answers[1:]
        if isinstance(pace, dict):
            self._pace = pace
            if isinstance(pace.get("cpu"), tuple):
                self._cpu.add("gateway", CpuReading(*pace["cpu"]))
        for (name, _), reading in zip(actors, cpus, strict=True):
            if isinstance(reading, tuple):
                self._cpu.add(name, CpuReading(*reading))
        self._cpu.add("driver", own_cpu())
        sample = self._sample()
        self._keep(sample)
        return sample

    async def _ask(self, _name: str, call: Any) -> Any:
        try:
            return await asyncio.wait_for(call, ASK_S)
        except (TimeoutError, ray.exceptions.RayError):
            return None

    def _sample(self) -> Sample:
        pace, host = self._pace, host_busy()
        return Sample(
            at=self._clock(),
            requests=int(pace.get("requests", 0)),
            throttled=int(pace.get("throttled", 0)),
            wire_s=float(pace.get("wire_s", 0.0)),
            peak=int(pace.get("peak", 0)),
            limit=int(pace.get("limit", 0)),
            waited_limit_s=float(pace.get("waited_limit_s", 0.0)),
            waited_pause_s=float(pace.get("waited_pause_s", 0.0)),
            waited_rate_s=float(pace.get("waited_rate_s", 0.0)),
            window_s=self._window_waited(),
            cpu_s=self._cpu.seconds(),
            cores=self._cpu.cores(),
            host_busy_s=host[0] if host else None,
            host_cores=host[1] if host else 0,
            latency=pace.get("latency"),
            dispatched_all=self._dispatched_all(),
        )

    def _keep(self, sample: Sample) -> None:
        self.samples.append(sample)
        if len(self.samples) > MOST_SAMPLES:
            # Every other one goes (the first and the last stay): the counters are
            # cumulative, so only a dropped tick's peak and latency would be lost — the
            # peak is carried into the tick after it.
            kept = self.samples[:1]
            for index in range(1, len(self.samples) - 1, 2):
                dropped, after = self.samples[index], self.samples[index + 1]
                kept.append(replace(after, peak=max(dropped.peak, after.peak)))
            if len(self.samples) % 2 == 0:
                kept.append(self.samples[-1])
            self.samples = kept

    def observed(self) -> Observed | None:
        return observe(self.samples)

    def bound(self, *, budget_stopped: bool = False) -> tuple[Observed, Bound] | None:
        """The steady state and what bounded it, or None when the run had none."""
        seen = self.observed()
        if seen is None:
            return None
        return seen, judge(seen, self.caps, budget_stopped=budget_stopped)

    def now(self) -> str | None:
        """The progress line's words: what the last quarter-minute kept in flight and what
        held it (None before two ticks)."""
        recent = self.samples[-RECENT:]
        seen = observe(recent, steady_state=False)
        if seen is None:
            return None
        bound = judge(seen, self.caps)
        return f"{seen.mean:.0f} on the wire (peak {seen.peak}) · bound: {bound.word}"


def summary_line(seen: Observed, bound: Bound, caps: Caps) -> str:
    """The summary's line: what the steady state kept in flight, against what was allowed,
    and what held it; `auto` says where it settled beside what the run reached."""
    limit = (
        f"auto's limit settled at {seen.limit} of {caps.ceiling}"
        if caps.adaptive
        else f"limit {seen.limit}"
    )
    return (
        f"in flight {seen.mean:.1f} on average, {seen.peak} at most, over {seen.seconds:.1f} s "
        f"of steady state ({limit}; window {caps.window}) · bound: {bound.line()}"
    )


def record_fields(seen: Observed, bound: Bound, caps: Caps) -> dict[str, Any]:
    """The sidecar gateway record's steady-state fields (`GatewayRecord`)."""
    return {
        "window": caps.window,
        "inflight_mean": round(seen.mean, 3),
        "inflight_peak": seen.peak,
        "bound": bound.word,
        "bound_why": bound.why,
        "client_cpu_share": None if seen.own_cpu is None else round(seen.own_cpu, 4),
        "host_cpu_busy": None if seen.host_busy is None else round(seen.host_busy, 4),
    }
