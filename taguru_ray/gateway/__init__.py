"""The permit protocol: every request on the wire holds a permit the gateway granted.

- `pool` — the pure permit pool: in-flight cap, rate ceilings, endpoint
  health and balancing, fair shares of kept permits (asyncio, no Ray).
- `limits` — the adaptive in-flight controller (`--max-inflight auto`).
- `numbering` — the run-wide attempt counter.
- `actor` — the Ray actor holding the pool, the counter and the rung.
- `kept` — a worker's side: permits kept between its requests, swaps, reports.
- `wire` — what crosses between the two, as named types.
"""
