"""What a segment's label vocabulary costs on the way to its worker.

Each `SegmentJob` carries the vocabulary folded for it (up to VOCABULARY_CAP
labels) and the driver pickles a turn's jobs into one actor call. The bench
corpus's simulator answers with four labels, so `make bench` never sees a full
vocabulary; a real model's corpus fills all 200. This benchmark drives the
engine's own `SegmentWindow` through a steady state — segments finishing in
order, each folded before the next is dispatched — and pickles each batch of
jobs as Ray does (cloudpickle, protocol 5), then unpickles it as the worker does.

    python -m benchmarks.vocabulary_wire [--results-dir DIR]

Writes `results/vocabulary-wire-<stamp>.json` and `-latest.json`: CPU µs per
segment to pickle and to unpickle, and bytes per segment, per batch size.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import random
import time
from pathlib import Path
from typing import Any

from ray import cloudpickle

from benchmarks.results_file import write_result
from taguru_ray.engine.window import SegmentWindow
from taguru_ray.pipeline.segment_job import SegmentJob
from taguru_ray.pipeline.steer import VOCABULARY_CAP, Contribution, LabelUse

LABELS = 2_000  # distinct labels a long run's model settles on, Zipf-distributed
LABELS_PER_SEGMENT = 12
WIDTH = 256  # the default --segment-window
WARM = 2_000  # segments folded before measuring: the vocabulary is full
BATCHES = (1, 14, 64)  # segments per actor call: 14 is the saturation run's mean
ROUNDS = 40


def _contribution(rng: random.Random) -> Contribution:
    picked = rng.choices(range(LABELS), weights=[1 / (k + 1) for k in range(LABELS)], k=24)
    labels = list(dict.fromkeys(f"relation label {k}" for k in picked))[:LABELS_PER_SEGMENT]
    return Contribution(labels=tuple(LabelUse(label, rng.randint(1, 3)) for label in labels))


def _jobs(window: SegmentWindow, start: int, count: int, rng: random.Random) -> list[SegmentJob]:
    """The next `count` dispatches, each after the segment W before it finished."""
    jobs = []
    for index in range(start, start + count):
        window.dispatched(index)
        if index >= WIDTH:
            window.finish(index - WIDTH, _contribution(rng))
        vocabulary = window.vocabulary_for(index)
        jobs.append(SegmentJob(index, f"docs/{index:07d}.md", b"x" * 1024, "", vocabulary))
    return jobs


def measure(batch: int) -> dict[str, Any]:
    rng = random.Random(batch)
    window = SegmentWindow(WIDTH)
    index = 0
    while index < WARM:
        _jobs(window, index, 64, rng)
        index += 64
    pickle_s = unpickle_s = 0.0
    size = segments = 0
    for _ in range(ROUNDS):
        jobs = _jobs(window, index, batch, rng)
        index += batch
        started = time.process_time()
        data = cloudpickle.dumps(jobs, protocol=5)
        middle = time.process_time()
        pickle.loads(data)
        unpickle_s += time.process_time() - middle
        pickle_s += middle - started
        size += len(data)
        segments += batch
    vocabulary = window.vocabulary_for(index - 1)
    return {
        "segments_per_call": batch,
        "vocabulary_labels": len(vocabulary),
        "pickle_us_per_segment": round(1e6 * pickle_s / segments, 1),
        "unpickle_us_per_segment": round(1e6 * unpickle_s / segments, 1),
        "bytes_per_segment": size // segments,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vocabulary_wire")
    parser.add_argument("--results-dir", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    result = {
        "name": "vocabulary-wire",
        "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
        "parameters": {
            "labels": LABELS,
            "labels_per_segment": LABELS_PER_SEGMENT,
            "vocabulary_cap": VOCABULARY_CAP,
            "segment_window": WIDTH,
            "rounds": ROUNDS,
        },
        "batches": [measure(batch) for batch in BATCHES],
    }
    print(write_result(args.results_dir, "vocabulary-wire", result), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
