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
from dataclasses import dataclass, replace
from typing import Any

import ray

from taguru_ray.cpu import CpuReading, host_busy, own_cpu
from taguru_ray.engine.bound import Bound, Caps, Observed, Sample, judge, observe
from taguru_ray.settings import Settings

TICK_S = 1.0  # between samples: a steady state of ten seconds has ten
ASK_S = 2.0  # an actor that takes longer to say its CPU is skipped for the tick
MOST_SAMPLES = 4096  # then every other one goes: the run's figures are cumulative
RECENT = 15  # ticks the progress line judges: the last quarter-minute
WORKER = "worker "  # the segment workers' names: they answer `pace`, the others `cpu`


class _Kept:
    """Cumulative figures of the run's processes, a restarted one's predecessor kept: an
    actor that restarts starts its counters from zero."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], float] = {}  # by (host, pid)
        self._cores: dict[str, int] = {}  # by host

    def add(self, reading: CpuReading, value: float) -> None:
        self._last[(reading.host, reading.pid)] = value
        self._cores[reading.host] = max(self._cores.get(reading.host, 0), reading.cores)

    def total(self) -> float:
        return sum(self._last.values())

    def cores(self) -> int:
        """The cores of the hosts the run's processes are on, each counted once."""
        return sum(self._cores.values())


def caps_of(settings: Settings) -> Caps:
    """What the settings allow a run to keep in flight (`bound.Caps`)."""
    return Caps(
        window=settings.window,
        width=1 if settings.prompt.carryover else settings.scale.parallel,
        adaptive=settings.transport.max_inflight == "auto",
        ceiling=settings.inflight_ceiling,
    )


@dataclass(frozen=True)
class Judged:
    """What bounded a run, worded: the summary's line and the sidecar record's fields."""

    line: str
    fields: dict[str, Any]


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
        self._cpu = _Kept()
        self._wire = _Kept()  # the workers' requests on the wire, integrated
        self._pace: dict[str, Any] = {}  # the gateway's last answer
        self._peak = 0  # the workers' peaks on the wire in this tick, summed
        self.samples: list[Sample] = []

    async def run(self, gateway: Any, actors: Callable[[], list[tuple[str, Any]]]) -> None:
        """Sample every TICK_S until cancelled."""
        while True:
            await self.tick(gateway, actors())
            await asyncio.sleep(TICK_S)

    async def tick(self, gateway: Any, actors: list[tuple[str, Any]]) -> Sample:
        """One sample: the gateway's pace; each worker's CPU and requests on the wire
        (`SegmentWorker.pace`), every other actor's CPU; the driver's own."""
        asks = [self._ask(gateway.pace.remote())]
        asks += [
            self._ask(actor.pace.remote() if name.startswith(WORKER) else actor.cpu.remote())
            for name, actor in actors
        ]
        answers = await asyncio.gather(*asks)
        pace, others = answers[0], answers[1:]
        if isinstance(pace, dict):
            self._pace = pace
            if isinstance(pace.get("cpu"), tuple):
                reading = CpuReading(*pace["cpu"])
                self._cpu.add(reading, reading.seconds)
        self._peak = 0
        for answer in others:
            if isinstance(answer, dict):  # a worker's
                reading = CpuReading(*answer["cpu"])
                self._wire.add(reading, float(answer["wire_s"]))
                self._peak += int(answer["peak"])
            elif isinstance(answer, tuple):
                reading = CpuReading(*answer)
            else:
                continue
            self._cpu.add(reading, reading.seconds)
        driver = own_cpu()
        self._cpu.add(driver, driver.seconds)
        sample = self._sample()
        self._keep(sample)
        return sample

    async def _ask(self, call: Any) -> Any:
        try:
            return await asyncio.wait_for(call, ASK_S)
        except (TimeoutError, ray.exceptions.RayError):
            return None

    def _sample(self) -> Sample:
        pace, host = self._pace, host_busy()
        # The workers know their requests on the wire exactly; the gateway only its
        # permits out, some idle at a worker. Its figures stand in before any worker is.
        exact = bool(self._wire.cores())
        gateway_peak = int(pace.get("peak", 0))
        return Sample(
            at=self._clock(),
            requests=int(pace.get("requests", 0)),
            throttled=int(pace.get("throttled", 0)),
            wire_s=self._wire.total() if exact else float(pace.get("wire_s", 0.0)),
            # Each worker's peak, summed: at most their true joint peak, never above the
            # gateway's permits out.
            peak=min(self._peak, gateway_peak) if exact else gateway_peak,
            limit=int(pace.get("limit", 0)),
            waited_limit_s=float(pace.get("waited_limit_s", 0.0)),
            waited_pause_s=float(pace.get("waited_pause_s", 0.0)),
            waited_rate_s=float(pace.get("waited_rate_s", 0.0)),
            waited_engine_s=float(pace.get("waited_engine_s", 0.0)),
            short_s=float(pace.get("short_s", 0.0)),
            replicas=int(pace.get("replicas", 0)),
            window_s=self._window_waited(),
            cpu_s=self._cpu.total(),
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

    def judged(self, *, budget_stopped: bool = False) -> Judged | None:
        """The run's bound for the summary and the sidecar; None when it asked nothing."""
        if not self.samples or not self.samples[-1].requests:
            return None
        found = self.bound(budget_stopped=budget_stopped)
        if found is None:
            return None
        seen, bound = found
        return Judged(summary_line(seen, bound, self.caps), record_fields(seen, bound, self.caps))

    def now(self) -> str | None:
        """The progress line's words: what the last quarter-minute kept in flight, against
        the limit, and what held it (None before two ticks with a request)."""
        recent = self.samples[-RECENT:]
        seen = observe(recent, steady_state=False)
        if seen is None or not recent[-1].requests:
            return None
        bound = judge(seen, self.caps)
        return (
            f"{seen.mean:.0f} in flight (peak {seen.peak}, limit {seen.limit}) · "
            f"bound: {bound.word}"
        )


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
