"""The driver's pacing part (engine/pacing.py) with stand-in actors: no Ray, a fake clock."""

from __future__ import annotations

import asyncio
import platform
from typing import Any

from taguru_ray.cpu import CpuReading
from taguru_ray.engine import pacing
from taguru_ray.engine.bound import Caps, Sample
from taguru_ray.engine.pacing import Pacing, record_fields, summary_line

CAPS = Caps(window=4, width=1, adaptive=False, ceiling=64)
HOST = platform.node()  # the driver's own reading names it: one host, as on one machine


class Call:
    """`actor.method.remote()` → an awaitable of `value` (an exception is raised)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def remote(self) -> Any:
        async def answer() -> Any:
            if isinstance(self.value, BaseException):
                raise self.value
            return self.value

        return answer()


class Gateway:
    def __init__(self) -> None:
        self.pace = Call({})


class Worker:
    """A segment worker: `pace` answers its CPU and its requests on the wire."""

    def __init__(self, reading: CpuReading, wire_s: float = 0.0, peak: int = 0) -> None:
        self.pace = Call({"cpu": tuple(reading), "wire_s": wire_s, "peak": peak})


class Ledger:
    def __init__(self, reading: CpuReading) -> None:
        self.cpu = Call(reading)


def pace(requests: int, wire_s: float, peak: int, cpu: float) -> dict[str, Any]:
    return {
        "requests": requests,
        "throttled": 0,
        "wire_s": wire_s,
        "peak": peak,
        "limit": 64,
        "waited_limit_s": 0.0,
        "waited_pause_s": 0.0,
        "waited_rate_s": 0.0,
        "latency": 0.2,
        "cpu": tuple(CpuReading(HOST, 1, 2, cpu)),
    }


def test_ticks_gather_the_gateway_the_actors_and_the_window() -> None:
    clock = iter([0.0, 10.0, 20.0, 30.0])
    waited = iter([0.0, 9.0, 18.0, 27.0])
    pacer = Pacing(CAPS, lambda: next(waited), lambda: False, clock=lambda: next(clock))
    gateway, worker = Gateway(), Worker(CpuReading(HOST, 2, 2, 1.0))

    async def ticks() -> list[Sample]:
        found = []
        for requests, cpu in ((0, 0.0), (100, 1.0), (200, 2.0), (300, 3.0)):
            gateway.pace = Call(pace(requests, 99.0, 9, cpu))  # permits: the workers know better
            worker.pace = Call({"cpu": (HOST, 2, 2, cpu), "wire_s": requests * 0.35, "peak": 4})
            found.append(await pacer.tick(gateway, [("worker 0", worker)]))
        return found

    samples = asyncio.run(ticks())
    assert [s.requests for s in samples] == [0, 100, 200, 300]
    assert [s.peak for s in samples] == [4, 4, 4, 4]  # the worker's, under the gateway's 9
    assert samples[-1].cores == 2  # one host, counted once
    found = pacer.bound()
    assert found is not None
    seen, bound = found
    assert seen.window_wait == 0.9 and seen.mean == 3.5
    assert bound.word == "window" and "window of 4" in bound.why
    assert "bound: window" in (pacer.now() or "")


def test_a_restarted_actor_keeps_its_predecessors_cpu() -> None:
    pacer = Pacing(CAPS, lambda: 0.0, lambda: False, clock=iter([0.0, 1.0]).__next__)
    gateway = Gateway()

    async def ticks() -> tuple[float, float]:
        first = await pacer.tick(gateway, [("worker 0", Worker(CpuReading(HOST, 7, 2, 5.0)))])
        second = await pacer.tick(gateway, [("worker 0", Worker(CpuReading(HOST, 8, 2, 0.5)))])
        return first.cpu_s or 0.0, second.cpu_s or 0.0

    first, second = asyncio.run(ticks())
    assert second - first >= 0.5  # the new process's 0.5 s on top of the old one's 5 s


def test_an_actor_that_does_not_answer_is_skipped_for_the_tick() -> None:
    pacer = Pacing(CAPS, lambda: 0.0, lambda: True, clock=lambda: 0.0)
    gateway = Gateway()
    gateway.pace = Call(TimeoutError())
    sample = asyncio.run(pacer.tick(gateway, [("ledger", Ledger(CpuReading(HOST, 3, 2, 1.0)))]))
    assert sample.requests == 0 and sample.dispatched_all


def test_samples_stay_bounded_and_keep_their_peaks(monkeypatch: Any) -> None:
    monkeypatch.setattr(pacing, "MOST_SAMPLES", 8)
    pacer = Pacing(CAPS, lambda: 0.0, lambda: False)
    for at in range(9):
        pacer._keep(Sample(at=float(at), requests=at, throttled=0, peak=50 if at == 3 else 1))
    assert len(pacer.samples) == 5
    assert pacer.samples[0].at == 0.0 and pacer.samples[-1].at == 8.0
    assert max(s.peak for s in pacer.samples) == 50  # tick 3's peak rides on tick 4


def test_the_summary_says_where_auto_settled_beside_what_was_reached() -> None:
    pacer = Pacing(CAPS, lambda: 0.0, lambda: False)
    for at, requests, wire in ((0, 0, 0.0), (10, 100, 300.0), (20, 200, 600.0)):
        pacer._keep(Sample(at=at, requests=requests, throttled=0, wire_s=wire, peak=32, limit=32))
    auto = Caps(window=256, width=1, adaptive=True, ceiling=256)
    seen = pacer.observed()
    assert seen is not None
    found = pacer.bound()
    assert found is not None
    line = summary_line(seen, found[1], auto)
    assert line.startswith("in flight 30.0 on average, 32 at most, over 20.0 s of steady state")
    assert "auto's limit settled at 32 of 256; window 256" in line
    fields = record_fields(seen, found[1], auto)
    assert (fields["window"], fields["inflight_mean"], fields["inflight_peak"]) == (256, 30.0, 32)
