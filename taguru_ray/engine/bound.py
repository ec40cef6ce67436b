"""What bounded a run: the in-flight it kept, and what held it there (ADR 0048).

Pure. The driver samples the run's cumulative counters every tick (`Sample`:
requests on the wire integrated over time, time spent waiting for a permit and
why, time the dispatch loop waited on the segment window, CPU of the run's own
processes and of the host); `observe` reads the steady state out of them — the
span between the ticks at 10 % and 90 % of the run's completions, as the
benchmark's saturation block does, so start-up and drain stay out — and `judge`
names the one thing that held the in-flight level, in a fixed order:

1. **budget** — a budget stopped the run;
   **engine** — the run's own replicas (`--engine`, ADR 0080) held it: requests
   waited with none up, or some were down or starting for a share of the span
   while the run was held on the server's side (what would be **endpoint** or
   **limit** below);
2. **endpoint** — it answered 429/503 or timed out for a share of the requests
   (those before the steady state included: they set where `auto` held it), or
   its Retry-After pauses held requests back;
3. **rate** — `--rpm`/`--tpm` or a provider's quota held requests back;
4. **client** — taguru-ray's own processes used most of the cores they had;
5. **window** — the dispatch loop waited on the segment window while permits
   were free and the window's segments were on the wire (its capacity below the
   limit); a full window whose segments wait off the wire — in a worker's queue,
   its files, its commit turn — is the client's;
6. **limit** / **endpoint** — requests waited for a permit, or the limit stayed
   full: `auto` holding below its ceiling is where the endpoint stopped giving
   more completions per second, and a fixed limit with latency risen well
   above its low is an endpoint queueing — either is the endpoint; otherwise
   the limit;
7. **endpoint** — below every cap, with the host idle, latency rose well above
   its low: the server queued what it was sent;
8. **client** — nothing waited but the host's cores were busy;
9. **corpus** — every segment was handed out before the steady state began;
10. **client** — nothing waited, yet the permits were not kept busy.

A word is a plain description, never a verdict on the model or the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

BOUNDS = ("budget", "engine", "endpoint", "rate", "client", "window", "limit", "corpus")
# Bounds on the client's side: taguru-ray's CPU, window, in-flight limit or the corpus held
# the run, so its throughput measures the client, not the endpoint or its GPU.
CLIENT_BOUNDS = frozenset({"client", "window", "limit", "corpus"})
STEADY_LOW, STEADY_HIGH = 0.10, 0.90  # the steady state: completions between these shares
THROTTLED = 0.01  # this share of requests answered 429/503 or timed out: the endpoint's say
WAITED = 0.2  # requests waited for a permit this share of the span: that cap was reached
WINDOW_WAITED = 0.5  # the dispatch loop waited on the window this share of the span
WINDOW_FULL = 0.5  # ... with at least this share of its segments on the wire: it held them
FULL = 0.9  # in-flight this close to a cap on average: the cap held it
QUEUEING = 1.5  # latency this far above its low with the limit full: the endpoint queues
OWN_CPU = 0.8  # the run's own processes used this share of their cores: the client
HOST_BUSY = 0.9  # the host's cores were this busy


@dataclass(frozen=True, slots=True)
class Sample:
    """The run's counters at one tick: cumulative, except `peak`, `limit` and `latency`."""

    at: float  # seconds (the driver's monotonic clock)
    requests: int  # finished requests, every outcome
    throttled: int  # of them 429, 503 or timed out
    wire_s: float = 0.0  # requests on the wire, integrated over time (request-seconds)
    peak: int = 0  # the most on the wire since the previous tick
    limit: int = 0  # the in-flight limit at the tick (auto's level)
    waited_limit_s: float = 0.0  # requests queued for a permit with the limit reached
    waited_pause_s: float = 0.0  # ... with an endpoint paused or rested
    waited_rate_s: float = 0.0  # ... held by --rpm/--tpm or a provider's quota
    waited_engine_s: float = 0.0  # ... with no replica of the run's engine up
    short_s: float = 0.0  # replicas of the engine asked for and not up (replica-seconds)
    replicas: int = 0  # the engine's replicas asked for (0: no --engine)
    window_s: float = 0.0  # the dispatch loop waiting on the segment window
    cpu_s: float | None = None  # CPU of the run's own processes (None: not read)
    cores: int = 0  # the cores of the nodes they run on
    host_busy_s: float | None = None  # busy CPU of the driver's host
    host_cores: int = 0
    latency: float | None = None  # median latency of the requests finished since the last tick
    dispatched_all: bool = False  # every segment had been handed out by this tick


@dataclass(frozen=True, slots=True)
class Observed:
    """The steady state: what the run kept in flight, and what waited."""

    seconds: float
    mean: float  # requests on the wire, on average
    peak: int
    limit: int  # the in-flight limit as the span ended (where auto settled)
    throttled: float  # share of the requests up to the span's end (the ramp's included)
    limit_wait: float  # shares of the span
    pause_wait: float
    rate_wait: float
    window_wait: float
    own_cpu: float | None  # share of the run's cores
    host_busy: float | None  # share of the host's cores
    latency_growth: float | None  # the span's median latency over the run's lowest
    corpus_out: bool  # every segment was handed out before the span began
    engine_wait: float = 0.0  # share of the span requests waited with no replica up
    short: float = 0.0  # share of the replicas' time they were down or starting


@dataclass(frozen=True, slots=True)
class Caps:
    """What the settings allowed: the window's capacity and the in-flight ceiling."""

    window: int  # W
    width: int  # completions one segment may have in flight (1 under carryover)
    adaptive: bool  # --max-inflight auto
    ceiling: int  # the most the limit may be (N, or auto's ceiling)


@dataclass(frozen=True, slots=True)
class Bound:
    word: str  # one of BOUNDS
    why: str  # a short clause a person reads after the word

    def line(self) -> str:
        return f"{self.word} ({self.why})"


def steady(samples: list[Sample]) -> tuple[Sample, Sample] | None:
    """The ticks opening and closing the steady state, or None with fewer than two."""
    if len(samples) < 2:
        return None
    total = samples[-1].requests
    low = next((s for s in samples if s.requests >= STEADY_LOW * total), samples[0])
    high = next((s for s in reversed(samples) if s.requests <= STEADY_HIGH * total), samples[-1])
    if high.at <= low.at:  # too few ticks between the marks: the whole run
        low, high = samples[0], samples[-1]
    return (low, high) if high.at > low.at else None


def observe(samples: list[Sample], *, steady_state: bool = True) -> Observed | None:
    """The steady state's figures (or, `steady_state` False, those of every tick given: the
    progress line's recent ticks), or None when there is no span to measure."""
    span = steady(samples) if steady_state else _whole(samples)
    if span is None:
        return None
    low, high = span
    seconds = high.at - low.at
    inside = [s for s in samples if low.at < s.at <= high.at]
    # 429s before the steady state count too: they set where `auto` held it.
    first = samples[0]
    asked = high.requests - first.requests
    latencies = [s.latency for s in samples if s.latency is not None]
    during = sorted(s.latency for s in inside if s.latency is not None)
    growth = (
        during[len(during) // 2] / min(latencies)
        if during and latencies and min(latencies) > 0
        else None
    )
    return Observed(
        seconds=seconds,
        mean=(high.wire_s - low.wire_s) / seconds,
        peak=max((s.peak for s in inside), default=0),
        limit=high.limit,
        throttled=(high.throttled - first.throttled) / asked if asked > 0 else 0.0,
        limit_wait=(high.waited_limit_s - low.waited_limit_s) / seconds,
        pause_wait=(high.waited_pause_s - low.waited_pause_s) / seconds,
        rate_wait=(high.waited_rate_s - low.waited_rate_s) / seconds,
        window_wait=(high.window_s - low.window_s) / seconds,
        engine_wait=(high.waited_engine_s - low.waited_engine_s) / seconds,
        short=((high.short_s - low.short_s) / (seconds * high.replicas) if high.replicas else 0.0),
        own_cpu=_share(low.cpu_s, high.cpu_s, high.cores, seconds),
        host_busy=_share(low.host_busy_s, high.host_busy_s, high.host_cores, seconds),
        latency_growth=growth,
        corpus_out=low.dispatched_all,
    )


def _whole(samples: list[Sample]) -> tuple[Sample, Sample] | None:
    if len(samples) < 2 or samples[-1].at <= samples[0].at:
        return None
    return samples[0], samples[-1]


def _share(before: float | None, after: float | None, cores: int, seconds: float) -> float | None:
    if before is None or after is None or cores <= 0:
        return None
    return max(after - before, 0.0) / (cores * seconds)


def judge(seen: Observed, caps: Caps, *, budget_stopped: bool = False) -> Bound:
    """The one thing that held the run's in-flight level (the module's order)."""
    if budget_stopped:
        return Bound("budget", "a budget stopped the run")
    if seen.engine_wait >= WAITED:
        held = _pct(seen.engine_wait)
        return Bound("engine", f"no replica was up, and requests waited, {held} of the time")
    found = _judged(seen, caps)
    if seen.short >= WAITED and found.word in ("endpoint", "limit"):
        why = f"replicas were down or starting {_pct(seen.short)} of the time; then {found.line()}"
        return Bound("engine", why)
    return found


def _judged(seen: Observed, caps: Caps) -> Bound:
    """`judge` past the budget and the engine."""
    if seen.throttled >= THROTTLED:
        return Bound(
            "endpoint", f"{_pct(seen.throttled)} of requests answered 429/503 or timed out"
        )
    if seen.pause_wait >= WAITED:
        held = _pct(seen.pause_wait)
        return Bound("endpoint", f"its Retry-After pauses held requests back {held} of the time")
    if seen.rate_wait >= WAITED:
        held = _pct(seen.rate_wait)
        return Bound("rate", f"--rpm/--tpm or the provider's quota held requests back {held}")
    if seen.own_cpu is not None and seen.own_cpu >= OWN_CPU:
        return Bound("client", f"taguru-ray's processes used {_pct(seen.own_cpu)} of their cores")
    window_cap = caps.window * caps.width
    # A full window whose segments are mostly off the wire (in the worker's queues, its
    # files, its commit turn) is held by the client, not by the window.
    window_held = seen.mean >= FULL * window_cap or (
        seen.window_wait >= WINDOW_WAITED
        and seen.limit_wait < WAITED
        and seen.mean >= WINDOW_FULL * window_cap
    )
    if window_held and window_cap < seen.limit:
        return _window(caps)
    if seen.limit_wait >= WAITED or seen.mean >= FULL * seen.limit:
        if caps.adaptive and seen.limit < caps.ceiling:
            why = f"auto held {seen.limit} in flight, where completions per second stopped rising"
            return Bound("endpoint", why)
        if seen.latency_growth is not None and seen.latency_growth >= QUEUEING:
            rose = f"{seen.latency_growth:.1f}×"
            why = f"the limit of {seen.limit} was full and latency rose to {rose} its low"
            return Bound("endpoint", why)
        return Bound("limit", f"the in-flight limit of {seen.limit} was full")
    if window_held:
        return _window(caps)
    host_busy = seen.host_busy is not None and seen.host_busy >= HOST_BUSY
    if not host_busy and seen.latency_growth is not None and seen.latency_growth >= QUEUEING:
        # Below every cap, with the client's host idle: what made each request slower as
        # more went out was a queue at the server — its slots were full.
        rose = f"{seen.latency_growth:.1f}×"
        return Bound("endpoint", f"its latency rose to {rose} its low: it queued requests")
    if host_busy:
        return Bound("client", f"the host's cores were {_pct(seen.host_busy)} busy")
    if seen.corpus_out:
        return Bound("corpus", "every segment was in flight: fewer than the run could keep busy")
    return Bound("client", "nothing waited, yet the permits were not kept busy")


def _window(caps: Caps) -> Bound:
    why = f"the segment window of {caps.window} held segments back while permits were free"
    return Bound("window", why)


def _pct(share: float) -> str:
    return f"{share * 100:.0f} %"
