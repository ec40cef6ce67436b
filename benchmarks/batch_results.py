"""What reading a large batch output file costs the driver's memory (issue 49 item 5).

A provider's output file for a round of 50 000 requests runs to hundreds of MB.
This benchmark writes an OpenAI-shaped output file of `--megabytes` (200 by
default: one line a request, each a chat completion of about `--answer-bytes`),
serves it from a plain static HTTP server in a subprocess (its memory is not the
driver's), and reads it in a fresh interpreter each way, interleaved A/B/A/B:

- `streamed`: the wire's own `OpenAIWire.results` — the body read in 64 KiB
  chunks, a line at a time through `ResultsReader` (`llm/batch_results.py`);
- `whole`: the way before issue 49 — the body read whole, decoded, split into
  lines, each parsed (what `results` did, with the same per-line parse).

Each reader's figure is its peak RSS (`ru_maxrss`) minus its RSS just before the
read, so the interpreter and imports are left out; what stays in both is the
answers themselves (each Completion's text: the run needs them). The answers
held are reported beside (`answers_mb`: the sum of the texts' lengths).

    python -m benchmarks.batch_results [--megabytes 200] [--rounds 2]

Writes `results/batch-results-<stamp>.json` and `-latest.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result

RESULTS = Path(__file__).resolve().parent / "results"
PATH = "files/output/content"  # where the wire asks for it, under the base URL


def write_output(folder: Path, megabytes: int, answer_bytes: int) -> tuple[Path, int]:
    """An output file of about `megabytes` MB; its path and line count."""
    target = folder / PATH
    target.parent.mkdir(parents=True)
    rng = random.Random(49)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(500)]
    limit, lines = megabytes * 1_000_000, 0
    with target.open("w", encoding="utf-8") as out:
        written = 0
        while written < limit:
            text = " ".join(rng.choices(words, k=answer_bytes // 6))[:answer_bytes]
            body = {
                "id": f"chatcmpl-{lines}",
                "object": "chat.completion",
                "model": "taguru-sim",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 900, "completion_tokens": 300, "total_tokens": 1200},
            }
            line = {
                "id": f"batch_req_{lines}",
                "custom_id": f"{lines:016x}-{'0' * 40}-1",
                "response": {"status_code": 200, "request_id": f"req_{lines}", "body": body},
                "error": None,
            }
            data = json.dumps(line) + "\n"
            out.write(data)
            written += len(data)
            lines += 1
    return target, lines


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


READER = r"""
import asyncio, json, resource, sys
from pathlib import Path

import aiohttp

from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_wire import OpenAIWire, Snapshot, completion_of
from taguru_ray.llm.scrub import Scrubber

way, base, path = sys.argv[1], sys.argv[2], sys.argv[3]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def main() -> None:
    async with aiohttp.ClientSession() as http:
        transport = Transport(model="m", endpoints=(base + "/v1",), batch_api="openai")
        wire = OpenAIWire(http, transport)
        before = rss_mb()
        if way == "streamed":
            snapshot = Snapshot("b", "completed", True, True, results_at=("/" + path,))
            found = (await wire.results(snapshot)).found
        else:  # the read before issue 49: the whole body, decoded, split, parsed
            async with http.get(f"{base}/v1/{path}") as response:
                data = await response.read()
            found = {}
            scrub = Scrubber.of(None)
            for text in data.decode("utf-8").splitlines():
                if text.strip():
                    line = json.loads(text)
                    body = line["response"]["body"]
                    found[line["custom_id"]] = completion_of(body, scrub)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        held = sum(len(c.text or "") for c in found.values()) / 1e6
        print(json.dumps({"way": way, "lines": len(found), "before_mb": before,
                          "peak_mb": peak, "read_mb": peak - before, "answers_mb": held}))


asyncio.run(main())
"""


def read_once(way: str, base: str) -> dict[str, Any]:
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run(
        [sys.executable, "-c", READER, way, base, PATH],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--answer-bytes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="A/B pairs, interleaved")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        served = root / "v1"
        started = time.monotonic()
        target, lines = write_output(served, args.megabytes, args.answer_bytes)
        wrote_s = time.monotonic() - started
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the static server did not start"
                    time.sleep(0.1)
            runs = []
            for _ in range(args.rounds):
                for way in ("streamed", "whole"):
                    runs.append(read_once(way, base))
        finally:
            server.terminate()
            server.wait()
        size_mb = target.stat().st_size / 1e6

    def best(way: str) -> dict[str, Any]:
        return min((r for r in runs if r["way"] == way), key=lambda r: r["read_mb"])

    streamed, whole = best("streamed"), best("whole")
    result = {
        "benchmark": "batch-results",
        "platform": platform.platform(),
        "load_average": os.getloadavg(),
        "file_mb": round(size_mb, 1),
        "lines": lines,
        "write_s": round(wrote_s, 1),
        "runs": runs,
        "streamed_read_mb": round(streamed["read_mb"], 1),
        "whole_read_mb": round(whole["read_mb"], 1),
        "streamed_peak_mb": round(streamed["peak_mb"], 1),
        "whole_peak_mb": round(whole["peak_mb"], 1),
        "answers_mb": round(streamed["answers_mb"], 1),
        "ratios": {
            "streamed_vs_whole_read": round(streamed["read_mb"] / whole["read_mb"], 3),
            "streamed_read_vs_file": round(streamed["read_mb"] / size_mb, 3),
            "whole_read_vs_file": round(whole["read_mb"] / size_mb, 3),
        },
    }
    print(write_result(args.results_dir, "batch-results", result))


if __name__ == "__main__":
    main()
