"""How far `--dry-run`'s token estimate is from what was counted (issue 39, ADR 0060).

Two yardsticks, written to ``results/estimate-error-<stamp>.json`` and
``-latest.json``:

- **the simulator**: `extract --dry-run` and then a real `extract` of the same
  corpus against `taguru-ray simulate`, which counts 4 UTF-8 bytes a token as
  the heuristic does — so the input error is the prompt builder's, and the
  output error is the output guess's (1.5x the chunk) against the
  simulator's answers. Two corpora: `examples/corpus` (English) and the
  anchor's six documents (Japanese).
- **the anchor's real answers** (`shared/data/anchor/adr/0001/results/
  attempts.jsonl`: a 12B extraction model and qwen2.5:7b on the anchor
  corpus, with the server's `prompt_tokens` and `completion_tokens`):
  (a) each untruncated answer's text counted by every counter against its
  `completion_tokens` — the counter's own error on real output; (b) each
  document's dry-run estimate against the median real prompt and completion
  of that document — the whole estimate's error. The anchor's prompts are
  the reference tool's, not taguru-ray's (the same rules, other words), so
  (b)'s input error is an approximation; (a) is exact.

Counters: the heuristic (4 bytes a token), and tiktoken's o200k_base and
cl100k_base when their BPE files load (``TIKTOKEN_CACHE_DIR``; see ADR 0060
for filling it offline). Neither is the anchor models' tokenizer (Gemma's
and Qwen's are not installable here): their figures are what a user of such
a model gets.

    .venv/bin/python -m benchmarks.estimate_error [--skip-simulator]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.results_file import write_result
from taguru_ray.llm.tokenizer import load_counter
from taguru_ray.pipeline.tokens import HEURISTIC_COUNTER, Counter
from taguru_ray.simulate.harness import SimulatorProcess

REPO = Path(__file__).resolve().parents[1]
ANCHOR = Path(os.environ.get("TAGURU_RAY_ANCHOR", REPO.parent / "shared/data/anchor"))
ATTEMPTS = ANCHOR / "adr/0001/results/attempts.jsonl"
CORPUS = ANCHOR / "adr/0001/corpus"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
CAPPED = 2048  # the anchor keeps an answer's first 2 048 characters: longer ones are cut
# A model name per counter, for the dry-run to pick that counter by.
MODELS = {"heuristic": "taguru-sim", "o200k_base": "gpt-4.1-mini", "cl100k_base": "gpt-4"}
ESTIMATE = re.compile(r"(\d+) completion\(s\), (\d+) input \+ (\d+) output tokens")
TALLY = re.compile(r"(\d+) request\(s\), (\d+) input \+ (\d+) output tokens")


def error(estimate: float, actual: float) -> float | None:
    """Signed relative error, estimate over actual less one (None when nothing counted)."""
    return round(estimate / actual - 1, 4) if actual else None


def spread(errors: list[float]) -> dict[str, float]:
    ordered = sorted(errors)
    return {
        "median": round(statistics.median(ordered), 4),
        "min": round(ordered[0], 4),
        "max": round(ordered[-1], 4),
        "mean_abs": round(statistics.fmean(abs(e) for e in ordered), 4),
    }


def env(model: str, url: str = "http://127.0.0.1:9/v1/chat/completions") -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    return {
        **base,
        "TAGURU_EXTRACT_MODEL": model,
        "TAGURU_EXTRACT_URL": url,
        "PYTHONPATH": str(REPO),
    }


def extract(docs: Path, out: Path, model: str, url: str, *extra: str) -> str:
    command = [
        sys.executable,
        "-m",
        "taguru_ray",
        "extract",
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--no-progress",
        *extra,
        str(docs),
    ]
    done = subprocess.run(command, env=env(model, url), capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"estimate_error: extract exited {done.returncode}: {done.stderr}")
    return done.stderr


def dry_run(docs: Path, model: str) -> tuple[int, int, str]:
    """(input, output) tokens the dry-run estimates for `docs` under `model`, and its line."""
    with tempfile.TemporaryDirectory() as out:
        said = extract(
            docs, Path(out), model, "http://127.0.0.1:9/v1/chat/completions", "--dry-run"
        )
    line = next(line for line in said.splitlines() if "estimate, not a measurement" in line)
    found = ESTIMATE.search(line)
    assert found is not None, line
    return int(found.group(2)), int(found.group(3)), line


def simulator_errors(work: Path) -> list[dict[str, Any]]:
    """The heuristic's estimate against the simulator's counts, per corpus."""
    rows = []
    corpora = {
        "examples/corpus (English)": REPO / "examples/corpus",
        "anchor corpus (Japanese)": CORPUS,
    }
    with SimulatorProcess() as simulator:
        for name, source in corpora.items():
            docs = work / re.sub(r"\W+", "-", name)
            shutil.copytree(source, docs)
            estimated_in, estimated_out, _ = dry_run(docs, MODELS["heuristic"])
            said = extract(docs, work / f"{docs.name}-out", MODELS["heuristic"], simulator.chat_url)
            found = TALLY.search(said)
            assert found is not None, said
            actual_in, actual_out = int(found.group(2)), int(found.group(3))
            rows.append(
                {
                    "corpus": name,
                    "counter": "heuristic",
                    "requests": int(found.group(1)),
                    "estimate": {"input": estimated_in, "output": estimated_out},
                    "actual": {"input": actual_in, "output": actual_out},
                    "error": {
                        "input": error(estimated_in, actual_in),
                        "output": error(estimated_out, actual_out),
                        "total": error(estimated_in + estimated_out, actual_in + actual_out),
                    },
                }
            )
    return rows


def anchor_records() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in ATTEMPTS.read_text("utf-8").splitlines()]
    return [
        r
        for r in rows
        if r.get("type") == "attempt"
        and r.get("http_status") == 200
        and r.get("finish_reason") == "stop"
        and r.get("completion_tokens")
    ]


def answers_tokenized(records: list[dict[str, Any]], counters: dict[str, Counter]) -> dict:
    """(a): each untruncated answer's text by each counter, against `completion_tokens`."""
    whole = [r for r in records if len(r.get("content_truncated") or "") < CAPPED]
    result: dict[str, Any] = {"answers": len(whole)}
    for name, counter in counters.items():
        by_model: dict[str, Any] = {}
        for model in sorted({r["model"] for r in whole}):
            mine = [r for r in whole if r["model"] == model]
            counted = [counter.count(r["content_truncated"]) for r in mine]
            real = [int(r["completion_tokens"]) for r in mine]
            by_model[model] = {
                "answers": len(mine),
                "total_error": error(sum(counted), sum(real)),
                "per_answer": spread([c / t - 1 for c, t in zip(counted, real, strict=True)]),
            }
        result[name] = by_model
    return result


def plan_vs_real(
    records: list[dict[str, Any]], counters: dict[str, Counter], work: Path
) -> dict[str, Any]:
    """(b): each anchor document's dry-run estimate against its median real counts."""
    real: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for r in records:
        if "#" not in r["doc"]:  # "long_dense#p0": one paragraph sent alone, not the doc
            real[(r["model"], r["doc"])].append((r["prompt_tokens"], r["completion_tokens"]))
    result: dict[str, Any] = {}
    for name in counters:
        rows, sums = [], defaultdict(int)
        for doc_path in sorted(CORPUS.glob("*.md")):
            docs = work / f"plan-{name}-{doc_path.stem}"
            docs.mkdir()
            shutil.copy(doc_path, docs / doc_path.name)
            est_in, est_out, _ = dry_run(docs, MODELS[name])
            for model in sorted({m for m, d in real if d == doc_path.stem}):
                seen = real[(model, doc_path.stem)]
                real_in = statistics.median(s[0] for s in seen)
                real_out = statistics.median(s[1] for s in seen)
                rows.append(
                    {
                        "doc": doc_path.stem,
                        "model": model,
                        "answers": len(seen),
                        "estimate": {"input": est_in, "output": est_out},
                        "real_median": {"input": real_in, "output": real_out},
                        "error": {
                            "input": error(est_in, real_in),
                            "output": error(est_out, real_out),
                        },
                    }
                )
                for key, value in (
                    ("est_in", est_in),
                    ("est_out", est_out),
                    ("real_in", real_in),
                    ("real_out", real_out),
                ):
                    sums[key] += value
        result[name] = {
            "documents": rows,
            "total_error": {
                "input": error(sums["est_in"], sums["real_in"]),
                "output": error(sums["est_out"], sums["real_out"]),
                "total": error(
                    sums["est_in"] + sums["est_out"], sums["real_in"] + sums["real_out"]
                ),
            },
            "per_document": {
                "input": spread([row["error"]["input"] for row in rows]),
                "output": spread([row["error"]["output"] for row in rows]),
            },
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-simulator", action="store_true")
    parser.add_argument("--results", default=str(REPO / "benchmarks/results"))
    args = parser.parse_args(argv)
    counters: dict[str, Counter] = {"heuristic": HEURISTIC_COUNTER}
    skipped = {}
    for name, model in MODELS.items():
        if name == "heuristic":
            continue
        counter = load_counter(model)
        if counter.exact:
            counters[name] = counter
        else:
            skipped[name] = counter.why
    import tiktoken

    records = anchor_records()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        result: dict[str, Any] = {
            "what": "--dry-run's token estimate against counted tokens (ADR 0060)",
            "tiktoken": tiktoken.__version__,
            "counters": sorted(counters),
            "counters_skipped": skipped,
            "anchor": {
                "source": "shared/data/anchor/adr/0001/results/attempts.jsonl",
                "answers_tokenized": answers_tokenized(records, counters),
                "plan_vs_real": plan_vs_real(records, counters, work),
            },
        }
        if not args.skip_simulator:
            result["simulator"] = simulator_errors(work)
    print(write_result(Path(args.results), "estimate-error", result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
