"""What bounded a run (engine/bound.py): the steady state read from ticks, and the word."""

from dataclasses import replace

import pytest

from taguru_ray.engine.bound import Caps, Observed, Sample, judge, observe, steady

WIDE = Caps(window=256, width=1, adaptive=False, ceiling=64)
AUTO = Caps(window=256, width=1, adaptive=True, ceiling=256)

# A steady state to vary: 60 on the wire of a limit of 64, nothing waiting, cores idle.
QUIET = Observed(
    seconds=10.0,
    mean=60.0,
    peak=64,
    limit=64,
    throttled=0.0,
    limit_wait=0.0,
    pause_wait=0.0,
    rate_wait=0.0,
    window_wait=0.0,
    own_cpu=0.2,
    host_busy=0.3,
    latency_growth=1.0,
    corpus_out=False,
)


def ticks(*rows: tuple[float, int, float]) -> list[Sample]:
    """(at, requests, wire_s) rows, every other counter zero."""
    return [Sample(at=at, requests=n, throttled=0, wire_s=wire) for at, n, wire in rows]


def test_the_steady_state_leaves_out_the_ramp_and_the_drain() -> None:
    samples = ticks((0, 0, 0), (1, 5, 2), (2, 20, 10), (3, 50, 20), (4, 85, 30), (5, 100, 32))
    low, high = steady(samples) or (None, None)
    assert (low.at, high.at) == (2, 4)  # 10 % of 100 first reached; 90 % last not passed
    seen = observe(samples)
    assert seen is not None and seen.seconds == 2 and seen.mean == 10.0  # (30 - 10) / 2


def test_one_tick_is_no_steady_state_and_a_short_run_is_measured_whole() -> None:
    assert observe(ticks((0, 0, 0))) is None
    seen = observe(ticks((0, 0, 0), (2, 3, 4)))
    assert seen is not None and (seen.seconds, seen.mean) == (2, 2.0)


def test_peak_latency_growth_cpu_and_corpus_come_from_the_span() -> None:
    samples = [
        Sample(0, 0, 0, latency=0.2, cpu_s=0.0, cores=2, host_busy_s=0.0, host_cores=2),
        Sample(1, 10, 0, wire_s=8, peak=12, latency=0.3, cpu_s=1.0, cores=2,
               host_busy_s=1.5, host_cores=2),
        Sample(2, 50, 1, wire_s=16, peak=9, latency=0.6, cpu_s=2.6, cores=2, host_busy_s=3.3,
               host_cores=2, dispatched_all=True),
        Sample(3, 100, 1, wire_s=20, peak=3, latency=0.4, cpu_s=3.0, cores=2, host_busy_s=4.0,
               host_cores=2, dispatched_all=True),
    ]  # fmt: skip
    seen = observe(samples)
    assert seen is not None
    assert (seen.peak, seen.own_cpu, seen.host_busy) == (9, 0.8, pytest.approx(0.9))
    assert seen.latency_growth == pytest.approx(3.0)  # the span's 0.6 over the run's low 0.2
    assert seen.throttled == 1 / 50 and not seen.corpus_out  # from the run's start


def test_a_narrow_window_is_the_bound() -> None:
    seen = replace(QUIET, mean=3.6, peak=4, window_wait=0.9)
    bound = judge(seen, replace(WIDE, window=4))
    assert bound.word == "window" and "window of 4" in bound.why


def test_a_window_as_wide_as_the_limit_says_limit() -> None:
    seen = replace(QUIET, mean=62.0, window_wait=0.9)
    assert judge(seen, replace(WIDE, window=64)).word == "limit"


def test_a_full_fixed_limit_is_the_limit_unless_latency_rose() -> None:
    assert judge(QUIET, WIDE).word == "limit"
    queueing = judge(replace(QUIET, latency_growth=3.0), WIDE)
    assert queueing.word == "endpoint" and "3.0×" in queueing.why


def test_auto_held_below_its_ceiling_is_the_endpoint() -> None:
    bound = judge(replace(QUIET, limit=24, mean=23.0), AUTO)
    assert bound.word == "endpoint" and "auto held 24" in bound.why
    assert judge(replace(QUIET, limit=256, mean=250.0), AUTO).word == "limit"  # its ceiling


def test_429s_and_pauses_are_the_endpoint_before_anything_else() -> None:
    assert judge(replace(QUIET, throttled=0.05, own_cpu=0.95), WIDE).word == "endpoint"
    assert judge(replace(QUIET, pause_wait=0.4, mean=10.0), WIDE).word == "endpoint"


def test_rate_ceilings_and_budgets() -> None:
    assert judge(replace(QUIET, rate_wait=0.5, mean=5.0), WIDE).word == "rate"
    assert judge(QUIET, WIDE, budget_stopped=True).word == "budget"


def test_a_client_starved_of_cpu_is_client_bound() -> None:
    bound = judge(replace(QUIET, own_cpu=0.93, mean=30.0), WIDE)
    assert bound.word == "client" and "93 %" in bound.why
    # A busy host alone does not hide a cap that held: the window still says window.
    assert judge(replace(QUIET, host_busy=0.97, mean=3.8, window_wait=0.9),
                 replace(WIDE, window=4)).word == "window"  # fmt: skip
    assert judge(replace(QUIET, host_busy=0.97, mean=30.0), WIDE).word == "client"


def test_a_corpus_smaller_than_the_caps_says_corpus() -> None:
    seen = replace(QUIET, mean=9.5, corpus_out=True)
    assert judge(seen, WIDE).word == "corpus"
    assert judge(replace(seen, corpus_out=False), WIDE).word == "client"


def test_a_full_window_whose_segments_wait_off_the_wire_is_the_client() -> None:
    """256 segments out, 60 of them on the wire: the worker's queues held them, not W;
    4 out and 2.7 on the wire on a busy host: the window held them."""
    seen = replace(QUIET, mean=60.0, limit=128, window_wait=0.95, host_busy=0.85)
    assert judge(seen, AUTO).word == "client"
    busy = replace(QUIET, mean=2.7, limit=32, window_wait=0.95, host_busy=0.97)
    assert judge(busy, replace(AUTO, window=4)).word == "window"


def test_a_server_queueing_below_every_cap_is_the_endpoint() -> None:
    """27 of 60 segments on the wire of an 8-slot server, the host idle: latency 3.4×."""
    seen = replace(QUIET, mean=27.0, corpus_out=True, latency_growth=3.4, host_busy=0.4)
    bound = judge(seen, AUTO)
    assert bound.word == "endpoint" and "queued" in bound.why
    assert judge(replace(seen, host_busy=0.95), AUTO).word == "client"  # the client queued
    assert judge(replace(seen, latency_growth=1.1), AUTO).word == "corpus"
