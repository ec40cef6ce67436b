"""The benchmark figure (`benchmark/figure.py`): a PNG from a literal measurements dict,
figures and no verdict, and missing metrics drawn as "no data" instead of failing."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.benchmark.figure import draw, figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VERDICT_WORDS = ("best", "winner", "recommended", "overall", "rank", "fastest", "better")


def dist(p50: float | None, n: int = 1) -> dict[str, Any]:
    """A Distribution of one repeated sample (null everywhere when there is none)."""
    if p50 is None:
        return dict.fromkeys(("min", "p50", "p90", "p99", "max", "mean", "sum"), None) | {"n": 0}
    return {
        "n": n,
        "min": p50,
        "p50": p50,
        "p90": p50,
        "p99": p50,
        "max": p50,
        "mean": p50,
        "sum": p50 * n,
    }


def cell(model: str, run: int, latency: float | None, rate: float | None) -> dict[str, Any]:
    return {
        "model_id": model,
        "run_index": run,
        "saturation.latency_p50_seconds": dist(latency),
        "saturation.completions_per_second": dist(rate),
        "latency.attempt_seconds": dist(1.5),
    }


MEASUREMENTS: dict[str, Any] = {
    "taguru_benchmark_measurements": 1,
    "run_id": "20260726T091422Z-3f7a1c",
    "gpus": {"qwen-7b": "L4", "qwen-7b-a100": "A100 80GB"},
    "cells": {
        "llama-8b.run01": cell("llama-8b", 1, 2.4, 3.1),
        "qwen-7b-a100.run01": cell("qwen-7b-a100", 1, 0.8, 12.5),
        "qwen-7b-a100.run02": cell("qwen-7b-a100", 2, 0.9, 12.1),
        "qwen-7b.run01": cell("qwen-7b", 1, 1.9, 4.2),
        "qwen-7b.run02": cell("qwen-7b", 2, None, None),  # failed: no saturation figures
    },
    "models": {
        "llama-8b": {
            "run.associations_total": dist(410.0),
            "stability.run_pair_jaccard": dist(None),
        },
        "qwen-7b": {
            "run.associations_total": dist(388.0, 2),
            "stability.run_pair_jaccard": dist(0.71),
        },
        "qwen-7b-a100": {
            "run.associations_total": dist(392.0, 2),
            "stability.run_pair_jaccard": dist(0.74),
        },
    },
}


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which a PNG must open with."""
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def texts(measurements: dict[str, Any], **kwargs: Any) -> list[str]:
    """Every piece of text the figure holds: titles, labels, notes, annotations, legend."""
    fig = figure(measurements, **kwargs)
    found = [t.get_text() for t in fig.findobj() if hasattr(t, "get_text")]
    return [t for t in found if t]


def test_the_figure_is_a_png_of_readable_size(tmp_path: Path) -> None:
    path = tmp_path / "measurements.png"
    draw(MEASUREMENTS, path)
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and data.rstrip().endswith(b"IEND\xaeB`\x82")
    assert len(data) > 20_000  # three panels of axes, points, bars and text
    width, height = png_size(data)
    assert (width, height) == (1650, 528)  # 15 x 4.8 inches at 110 dpi
    assert list(tmp_path.iterdir()) == [path]  # no temp file left beside it


def test_a_file_object_gets_the_same_bytes_as_a_path(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    draw(MEASUREMENTS, buffer)
    draw(MEASUREMENTS, tmp_path / "f.png")
    assert buffer.getvalue() == (tmp_path / "f.png").read_bytes()  # and it is deterministic


def test_points_are_named_by_model_and_gpus_by_the_legend() -> None:
    shown = texts(MEASUREMENTS)
    assert shown.count("qwen-7b-a100") >= 2  # one annotation per cell, plus its tick label
    assert {"A100 80GB", "L4", "no GPU label", "GPU"} <= set(shown)
    notes = "\n".join(shown)
    assert "1 cell(s) without saturation figures are not shown" in notes
    assert "no value: llama-8b" in notes  # stability missing: no bar, a note


def test_gpu_of_names_the_gpu_labels() -> None:
    shown = texts(MEASUREMENTS, gpu_of={"llama-8b": "H100", "qwen-7b": None})
    assert "H100" in shown and "L4" not in shown and "no GPU label" in shown


def test_no_text_in_the_figure_is_a_verdict() -> None:
    for text in texts(MEASUREMENTS):
        assert not any(word in text.lower() for word in VERDICT_WORDS), text


def test_bars_stand_in_model_id_order_not_by_value() -> None:
    fig = figure(MEASUREMENTS)
    volume = fig.axes[1]
    assert [t.get_text() for t in volume.get_xticklabels()] == [
        "llama-8b",
        "qwen-7b",
        "qwen-7b-a100",
    ]
    assert [bar.get_height() for bar in volume.patches] == [410.0, 388.0, 392.0]


@pytest.mark.parametrize(
    "measurements",
    [
        {"cells": {"m.run01": {"model_id": "m", "run_index": 1}}, "models": {"m": {}}},
        {"cells": {}, "models": {}},
        {},
        {"cells": {"m.run01": {"model_id": "m", "saturation.latency_p50_seconds": "x"}}},
    ],
)
def test_measurements_without_saturation_figures_still_draw(
    measurements: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "figure.png"
    draw(measurements, path)
    width, height = png_size(path.read_bytes())
    assert width > 100 and height > 100
    assert texts(measurements).count("no data") == 3


def test_a_cell_the_client_held_is_hollow() -> None:
    """ADR 0048: a window- or CPU-bound cell never looks like the GPU's throughput."""
    held = {**MEASUREMENTS, "cells": dict(MEASUREMENTS["cells"])}
    held["cells"]["qwen-7b-a100.run02"] = {**held["cells"]["qwen-7b-a100.run02"], "bound": "window"}
    held["cells"]["qwen-7b-a100.run01"] = {
        **held["cells"]["qwen-7b-a100.run01"],
        "bound": "endpoint",
    }
    axes = figure(held).axes[0]
    faces = [tuple(f) for c in axes.collections for f in c.get_facecolors()]
    assert sum(1 for f in faces if f[3] == 0) == 1  # one point without a fill
    assert "hollow: held by the client" in texts(held)
    assert "hollow: held by the client" not in texts(MEASUREMENTS)
