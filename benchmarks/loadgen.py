"""The bare load generator: asyncio + aiohttp, K requests in flight, nothing else.

It is the yardstick for taguru-ray's own throughput. It sends the request
body a one-chunk segment's first attempt sends (the system prompt without a
vocabulary, the user turn naming the segment), built with taguru-ray's own
prompt and plan steps, one per segment of the corpus, K at a time from one
process, and reads each answer's JSON. No retries, no records, no Ray: what
is left is the cost of HTTP itself, on the same machine, against the same
simulator.

    python -m benchmarks.loadgen --url URL --model M --concurrency 64 CORPUS_DIR

Prints one JSON object on stdout: completions, errors, seconds (first send to
last answer, by this process's clock), completions_per_s and cpu_s (this
process's own CPU over the sending, for CPU per request).

aiohttp, not httpx: the issue's yardstick is a bare aiohttp client, and on this
machine httpx's pool turned fewer requests a second than the server took (the
bench of record measured it at 0.23 of C/L, aiohttp at 0.93).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES
from taguru_ray.llm.client import endpoint_url
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.prompt import Conversation, system_prompt, user_turn
from taguru_ray.pipeline.read import read_segment
from taguru_ray.pipeline.steer import Steering


def request_bodies(
    sources: list[str], model: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> list[bytes]:
    """One serialized body per segment: its first chunk's first attempt.

    Serialized once up front so the timed loop measures the wire, not json.dumps;
    that makes this the best case a client could reach.
    """
    system = system_prompt(Steering())
    bodies: list[bytes] = []
    for source in sources:
        segment = read_segment(source, Path(source).read_bytes())
        chunks = plan_chunks(segment.paragraphs, chunk_bytes)
        turn = user_turn(source, 0, len(chunks), chunks[0].text)
        body = {"model": model, "temperature": 0, "messages": Conversation(system, turn).base()}
        bodies.append(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    return bodies


async def drive(url: str, bodies: list[bytes], concurrency: int) -> dict[str, Any]:
    """Send every body with `concurrency` requests in flight; count the answers."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    headers = {"content-type": "application/json"}
    queue = iter(bodies)  # shared by the senders; next() never yields to the loop
    done = errors = 0

    async def sender(session: aiohttp.ClientSession) -> None:
        nonlocal done, errors
        for body in queue:
            async with session.post(url, data=body, headers=headers) as response:
                answer = await response.read()
            if response.status == 200 and json.loads(answer).get("choices"):
                done += 1
            else:
                errors += 1

    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(sender(session) for _ in range(concurrency)))
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    return {
        "completions": done,
        "errors": errors,
        "seconds": seconds,
        "completions_per_s": done / seconds if seconds > 0 else 0.0,
        "cpu_s": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bare asyncio+aiohttp load generator")
    parser.add_argument("corpus", type=Path, help="a folder of .md segments")
    parser.add_argument("--url", required=True, help="the /chat/completions URL (or a /v1 base)")
    parser.add_argument("--model", default="taguru-sim")
    parser.add_argument("--concurrency", type=int, required=True, help="requests in flight")
    parser.add_argument("--chunk-bytes", type=int, default=DEFAULT_CHUNK_BYTES)
    args = parser.parse_args(argv)
    sources = [str(path) for path in sorted(args.corpus.glob("*.md"))]
    bodies = request_bodies(sources, args.model, args.chunk_bytes)
    result = asyncio.run(drive(endpoint_url(args.url), bodies, args.concurrency))
    print(json.dumps(result), flush=True)
    return 0 if result["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
