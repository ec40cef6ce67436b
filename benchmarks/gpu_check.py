"""The model on a real GPU, through taguru-ray's own engine (issue 48): `gpu_check.sh`'s run.

One `taguru-ray extract --engine vllm` (one replica, one GPU) of the anchor corpus
with structured output (`json-schema`), a local Ray of its own; while it runs,
`nvidia-smi` is sampled every second for the GPU's memory. Written to
``benchmarks/results/gpu-check-<stamp>.json`` (and ``gpu-check-latest.json``):
the engine and version the run started and the GPU type Ray read from the node
(the sidecar's `engine` record), completions and tokens per second of the run's
wall time, what bounded the run (its `gateway` record), the GPU memory at its peak,
the exit code and the stderr's last lines.

    sh benchmarks/gpu_check.sh                  # builds .venv-gpu with vLLM, then this
    python -m benchmarks.gpu_check --model M    # with vLLM already on PATH

A figure is evidence from one run on one host, never a gate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "fixtures" / "anchor" / "adr" / "0001" / "corpus"
RESULTS = REPO / "benchmarks" / "results"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
SMI = ["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total"]
SMI += ["--format=csv,noheader,nounits"]


def smi_sample(line: str) -> dict[str, Any] | None:
    """One line of `nvidia-smi --query-gpu=index,name,memory.used,memory.total` (MiB)."""
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != 4:
        return None
    try:
        return {"gpu": int(fields[0]), "name": fields[1], "used_mib": int(fields[2]),
                "total_mib": int(fields[3])}  # fmt: skip
    except ValueError:
        return None


class Sampler:
    """`nvidia-smi` every second, on a thread, until stopped."""

    def __init__(self) -> None:
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                done = subprocess.run(SMI, capture_output=True, text=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                return
            at = time.monotonic()
            for line in done.stdout.splitlines():
                found = smi_sample(line)
                if found is not None:
                    self.samples.append({**found, "at": at})
            self._stop.wait(1.0)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def summarise(
    records: list[dict[str, Any]],
    samples: list[dict[str, Any]],
    wall_s: float,
    exit_code: int,
    stderr: list[str],
) -> dict[str, Any]:
    """The result JSON from the run's sidecar records and the GPU samples. Pure."""
    engine = next((r for r in records if r.get("type") == "engine"), None)
    gateway = next((r for r in records if r.get("type") == "gateway"), None) or {}
    completions = int(gateway.get("completions") or 0)
    tokens = int(gateway.get("output_tokens") or 0)
    peak = max(samples, key=lambda s: s["used_mib"], default=None)
    ran = None
    if engine is not None:
        keys = ("engine", "version", "model", "gpus", "accelerators")
        ran = {key: engine.get(key) for key in keys}
    gpu = None
    if peak is not None:
        gpu = {"name": peak["name"], "peak_used_mib": peak["used_mib"]}
        gpu |= {"total_mib": peak["total_mib"], "samples": len(samples)}
    return {
        "benchmark": "gpu-check",
        "exit_code": exit_code,
        "engine": ran,
        "gpu": gpu,
        "wall_s": round(wall_s, 3),
        "completions": completions,
        "completions_per_s": round(completions / wall_s, 3) if wall_s > 0 else None,
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / wall_s, 2) if wall_s > 0 else None,
        "outcomes": gateway.get("outcomes"),
        "inflight_mean": gateway.get("inflight_mean"),
        "bound": gateway.get("bound"),
        "bound_why": gateway.get("bound_why"),
        "stderr_tail": stderr[-12:],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check")
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--engine", default="vllm", choices=("vllm", "sglang"))
    parser.add_argument("--engine-args", default="", help="more words for the server")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args(argv)
    if shutil.which("nvidia-smi") is None:
        print("gpu_check: nvidia-smi is not on PATH — this needs an NVIDIA GPU", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="taguru-ray-gpu-check-"))
    sidecar = folder / "diagnostics.jsonl"
    command = [
        sys.executable, "-m", "taguru_ray", "extract", "--context", CONTEXT,
        "--out", str(folder / "out"), "--engine", args.engine, "--engine-gpus", "1",
        "--structured-output", "json-schema", "--diagnostics-out", str(sidecar),
        "--progress", "lines", args.corpus,
    ]  # fmt: skip
    if args.engine_args:
        command.insert(-1, f"--engine-args={args.engine_args}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    env["TAGURU_EXTRACT_MODEL"] = args.model  # the weights the replica loads
    stderr: list[str] = []
    began = time.monotonic()
    with Sampler() as sampler:
        run = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, cwd=REPO)
        assert run.stderr is not None
        for line in run.stderr:
            sys.stderr.write(line)
            stderr.append(line.rstrip("\n"))
        code = run.wait()
    wall = time.monotonic() - began
    records = []
    if sidecar.exists():
        records = [json.loads(line) for line in sidecar.read_text().splitlines() if line.strip()]
    result = {"model": args.model, **summarise(records, sampler.samples, wall, code, stderr)}
    print(write_result(Path(args.results), "gpu-check", result))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
