"""The engine's mechanism, measured (issue 48, ADR 0080): an actor per replica, its server
a child process under a guard, requests sent straight to the server.

On a local Ray of its own (two CPUs), with the `simulate` engine — what is measured
is the mechanism around a server, not a model, so the bundled simulator stands in:

- **start**: a `Replica` actor created, placed (`where`) and its server healthy
  (`start`), STARTS times — the floor a real engine's weight loading adds to;
- **replace**: its server SIGKILLed; how long until the actor's `watch` says so,
  and until a new replica answers (what a lost replica costs besides its load);
- **reap**: the actor killed as Ray ends a dead driver's actors (`ray.kill`); how
  long until its server's process is gone (the guard's parent-death watch);
- **guard CPU**: the guard's own CPU over GUARD_S seconds of a healthy replica;
- **hop**: a bare aiohttp client keeping C requests in flight against (a) the
  replica's server directly — the path a segment worker takes — and (b) the same
  server behind a Ray Serve deployment that forwards each request — the ingress
  hop Ray Serve LLM puts in front of its engine (HTTP proxy → replica actor):
  completions/s, and the CPU of the client and of Serve's processes per
  completion. Taken only where `ray.serve` imports (not a dependency of
  taguru-ray: install ``ray[serve]`` in a scratch venv beside it).

    python -m benchmarks.engine_replicas            # writes results/engine-replicas-*.json
    python -m benchmarks.engine_replicas --quick    # fewer starts, a shorter hop

Figures are reported, never asserted; say what else the machine was doing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import ray

from benchmarks.results_file import write_result
from taguru_ray.contract.engines import ServerSpec
from taguru_ray.engine.replicas.actor import NotStarted, Replica
from taguru_ray.engine.replicas.server import free_port

RESULTS = Path(__file__).resolve().parent / "results"
MODEL = "taguru-sim"
BODY = json.dumps(
    {
        "model": MODEL,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": "Extract associations as JSON."},
            {"role": "user", "content": "Segment 'a.md':\n\n[0] Gate1 opens Valve1."},
        ],
    }
).encode()


def replica(index: int, generation: int, args: tuple[str, ...] = ()) -> Any:
    spec = ServerSpec("simulate", MODEL, 0, args)
    return Replica.options(num_gpus=0).remote(index, generation, spec, "bench", 600.0)


async def started(actor: Any) -> tuple[float, float, Any]:
    """(seconds to placed, seconds to healthy, the Started)."""
    began = time.monotonic()
    await actor.where.remote()
    placed = time.monotonic() - began
    result = await actor.start.remote()
    if isinstance(result, NotStarted):
        raise RuntimeError(f"the replica did not start: {result.why} {result.tail}")
    return placed, time.monotonic() - began, result


def server_of(guard: int) -> psutil.Process:
    return psutil.Process(guard).children()[0]


async def measure_lifecycle(starts: int, guard_s: float) -> dict[str, Any]:
    placed, healthy = [], []
    for generation in range(1, starts + 1):
        actor = replica(0, generation)
        p, h, _ = await started(actor)
        placed.append(p)
        healthy.append(h)
        await actor.stop.remote()
        ray.kill(actor)
    # Replace: the server dies; the actor says so; a new one answers.
    actor = replica(1, 1)
    await started(actor)
    guard = await actor.server_pid.remote()
    watching = actor.watch.remote()
    killed = time.monotonic()
    server_of(guard).send_signal(signal.SIGKILL)
    await watching
    detected = time.monotonic() - killed
    ray.kill(actor)
    again = replica(1, 2)
    await started(again)
    replaced = time.monotonic() - killed
    # Guard CPU over a healthy replica's life.
    guard = await again.server_pid.remote()
    process = psutil.Process(guard)
    before = sum(process.cpu_times()[:2])
    await asyncio.sleep(guard_s)
    guard_cpu = sum(process.cpu_times()[:2]) - before
    # Reap: the actor killed outright; its server must go.
    server = server_of(guard)
    ray.kill(again)
    killed = time.monotonic()
    while server.is_running() and server.status() != psutil.STATUS_ZOMBIE:
        await asyncio.sleep(0.02)
    reaped = time.monotonic() - killed
    return {
        "start_placed_s": _summary(placed),
        "start_healthy_s": _summary(healthy),
        "replace_detect_s": round(detected, 3),
        "replace_total_s": round(replaced, 3),
        "reap_after_actor_killed_s": round(reaped, 3),
        "guard_cpu_s": round(guard_cpu, 4),
        "guard_s": guard_s,
        "guard_cpu_share": round(guard_cpu / guard_s, 6),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


async def load(url: str, concurrency: int, requests: int) -> dict[str, Any]:
    """C requests in flight until `requests` are answered: completions/s, client CPU."""
    own = psutil.Process()
    cpu_before = sum(own.cpu_times()[:2])
    left = requests
    errors = 0
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), trust_env=False
    ) as http:

        async def one() -> None:
            nonlocal left, errors
            while left > 0:
                left -= 1
                async with http.post(
                    url, data=BODY, headers={"Content-Type": "application/json"}
                ) as answer:
                    await answer.read()
                    errors += answer.status != 200

        began = time.monotonic()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        seconds = time.monotonic() - began
    return {
        "completions": requests,
        "errors": errors,
        "seconds": round(seconds, 3),
        "completions_per_s": round(requests / seconds, 2),
        "client_cpu_ms_per_completion": round(
            (sum(own.cpu_times()[:2]) - cpu_before) * 1000 / requests, 3
        ),
    }


def serve_processes() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        words = " ".join(process.info["cmdline"] or [])
        if "ServeReplica" in words or "ProxyActor" in words or "ServeController" in words:
            found.append(process)
    return found


def cpu(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += sum(process.cpu_times()[:2])
    return total


async def measure_hop(slots: int, latency_ms: int, requests: int) -> dict[str, Any]:
    actor = replica(2, 1, ("--slots", str(slots), "--latency-ms", str(latency_ms)))
    _, _, result = await started(actor)
    chat = result.url + "/chat/completions"
    guard = await actor.server_pid.remote()
    figures: dict[str, Any] = {"slots": slots, "latency_ms": latency_ms}
    figures["ideal_completions_per_s"] = round(slots * 1000 / latency_ms, 1)
    await load(chat, slots, slots)  # warm
    figures["direct"] = await load(chat, slots, requests)
    try:
        from ray import serve
        from starlette.requests import Request
        from starlette.responses import Response
    except ImportError as missing:
        figures["serve"] = {"skipped": f"ray.serve does not import here ({missing})"}
    else:

        @serve.deployment(max_ongoing_requests=10_000)
        class Forward:
            def __init__(self, url: str) -> None:
                self.url = url
                self.http: aiohttp.ClientSession | None = None

            async def __call__(self, request: Request) -> Response:
                if self.http is None:
                    self.http = aiohttp.ClientSession(
                        connector=aiohttp.TCPConnector(limit=0), trust_env=False
                    )
                body = await request.body()
                async with self.http.post(
                    self.url, data=body, headers={"Content-Type": "application/json"}
                ) as answer:
                    return Response(await answer.read(), media_type="application/json")

        port = free_port("127.0.0.1")  # never a port another user of the machine holds
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(Forward.bind(chat), route_prefix="/v1/chat/completions")
        via = f"http://127.0.0.1:{port}/v1/chat/completions"
        await load(via, slots, slots)  # warm
        processes = serve_processes()
        before = cpu(processes)
        figures["serve"] = await load(via, slots, requests)
        figures["serve"]["serve_cpu_ms_per_completion"] = round(
            (cpu(processes) - before) * 1000 / requests, 3
        )
        figures["serve"]["processes"] = len(processes)
        serve.shutdown()
        figures["serve_vs_direct"] = round(
            figures["serve"]["completions_per_s"] / figures["direct"]["completions_per_s"], 3
        )
    figures["simulator_pid"] = server_of(guard).pid
    await actor.stop.remote()
    ray.kill(actor)
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_replicas")
    parser.add_argument("--quick", action="store_true", help="fewer starts, a shorter hop")
    args = parser.parse_args(argv)
    starts, guard_s, requests = (3, 10.0, 1000) if args.quick else (6, 30.0, 3000)
    ray.init(
        address="local", num_cpus=2, include_dashboard=False,
        logging_level=logging.ERROR, log_to_driver=False,
    )  # fmt: skip
    try:

        async def everything() -> dict[str, Any]:
            return {
                "lifecycle": await measure_lifecycle(starts, guard_s),
                "hop": await measure_hop(64, 200, requests),
            }

        measured = asyncio.run(everything())
    finally:
        ray.shutdown()
    result = {
        "benchmark": "engine-replicas",
        "python": sys.version.split()[0],
        "ray": ray.__version__,
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        **measured,
    }
    print(write_result(RESULTS, "engine-replicas", result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
