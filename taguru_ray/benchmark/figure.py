"""The benchmark figure: one PNG of what `benchmark compare` measured (ADR 0030).

Three panels side by side, drawn from `measurements.json` as it is:

- **throughput against latency**, one point per cell: x = the cell's
  `saturation.latency_p50_seconds` (its p50), y = its
  `saturation.completions_per_second` (p50), annotated with the model id; one
  marker shape per GPU label, named in the legend; a cell whose `bound` is on the
  client's side (CPU, window, limit, corpus: ADR 0048) is drawn hollow — its
  throughput measures taguru-ray, not the GPU;
- **volume**: `run.associations_total` (p50 over the model's runs), one bar per
  model;
- **stability**: `stability.run_pair_jaccard` (p50 over the model's run pairs),
  one bar per model, 0..1.

Figures, never a verdict: models stand in id order and cells in cell id order
(never sorted by a measured value), nothing is highlighted, no panel names a
"best" one. A metric that is missing or null leaves its point or bar out and
says so on the panel; a panel with nothing to show says "no data".

A metric value is read leniently: a Distribution's `p50`, a Count's or
Ratio's `value`, or a bare number; anything else (null, NaN, a string) is no
value. A model's GPU label comes from `gpu_of` when given, else
`measurements["gpus"][model_id]`, else the model's or the cell's `gpu`.

Drawn with matplotlib's Agg canvas on a `Figure` of our own (no pyplot, no
global backend), so it needs no display and touches no other figure.
"""

from __future__ import annotations

import math
import os
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from taguru_ray.engine.bound import CLIENT_BOUNDS

LATENCY = "saturation.latency_p50_seconds"
THROUGHPUT = "saturation.completions_per_second"
VOLUME = "run.associations_total"
STABILITY = "stability.run_pair_jaccard"
NO_GPU = "no GPU label"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
DPI = 110
NOTE_WIDTH = 60  # characters per line of a note under a panel

__all__ = ["draw", "figure"]


def draw(
    measurements: Mapping[str, Any],
    path_or_file: str | os.PathLike[str] | IO[bytes],
    gpu_of: Mapping[str, str | None] | None = None,
) -> None:
    """Write the figure of `measurements` as a PNG to a path (atomically: a temp file
    in the same folder, then a rename) or to a binary file object."""
    canvas = FigureCanvasAgg(figure(measurements, gpu_of))
    # No "Software" stamp: the same measurements give the same bytes.
    options: dict[str, Any] = {"metadata": {"Software": None}}
    if not isinstance(path_or_file, str | os.PathLike):
        canvas.print_png(path_or_file, **options)
        return
    target = Path(path_or_file)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            canvas.print_png(out, **options)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def figure(
    measurements: Mapping[str, Any], gpu_of: Mapping[str, str | None] | None = None
) -> Figure:
    """The three panels as a matplotlib `Figure` (not yet drawn to any file)."""
    cells = _mapping(measurements.get("cells"))
    models = _mapping(measurements.get("models"))
    model_ids = sorted(
        set(models) | {str(c["model_id"]) for c in _cell_values(cells) if "model_id" in c}
    )
    fig = Figure(figsize=(15.0, 4.8), dpi=DPI, layout="constrained")
    left, middle, right = fig.subplots(1, 3, width_ratios=(1.5, 1.0, 1.0))
    _throughput_panel(left, cells, lambda model: _gpu(model, measurements, cells, gpu_of))
    _bar_panel(
        middle,
        model_ids,
        {m: _figure(_mapping(models.get(m)).get(VOLUME)) for m in model_ids},
        title="Volume: associations per run (p50)",
        ylabel="associations",
        number="{:,.0f}",
    )
    _bar_panel(
        right,
        model_ids,
        {m: _figure(_mapping(models.get(m)).get(STABILITY)) for m in model_ids},
        title="Stability: run-pair Jaccard (p50)",
        ylabel="Jaccard similarity",
        number="{:.2f}",
        limits=(0.0, 1.05),
    )
    run_id = measurements.get("run_id")
    fig.suptitle(
        "taguru-ray benchmark" + (f" — {run_id}" if isinstance(run_id, str) and run_id else ""),
        fontsize=11,
    )
    return fig


def _throughput_panel(
    axes: Axes, cells: Mapping[str, Any], gpu: Callable[[str], str | None]
) -> None:
    """One point per cell: a colour per model (named once, at its first cell), a
    marker shape per GPU label (named in the legend)."""
    axes.set_title("Throughput against latency, per cell (p50)", fontsize=10)
    axes.set_xlabel("latency p50 (s)")
    axes.set_ylabel("completions / s")
    points: dict[str, list[tuple[float, float]]] = {}
    held: dict[str, list[bool]] = {}  # per point: the client, not the endpoint, held it
    missing = 0
    for cell_id in sorted(cells):
        cell = _mapping(cells[cell_id])
        x, y = _figure(cell.get(LATENCY)), _figure(cell.get(THROUGHPUT))
        if x is None or y is None:
            missing += 1
            continue
        model = str(cell.get("model_id", cell_id))
        points.setdefault(model, []).append((x, y))
        held.setdefault(model, []).append(cell.get("bound") in CLIENT_BOUNDS)
    if missing:
        _note(axes, f"{missing} cell(s) without saturation figures are not shown")
    if not points:
        _no_data(axes)
        return
    gpu_label = {model: gpu(model) or NO_GPU for model in points}
    labels = sorted(set(gpu_label.values()) - {NO_GPU})
    labels += [NO_GPU] if NO_GPU in gpu_label.values() else []
    marker = {label: MARKERS[i % len(MARKERS)] for i, label in enumerate(labels)}
    for i, model in enumerate(sorted(points)):
        xs, ys = zip(*points[model], strict=True)
        colour = f"C{i % 10}"
        # A cell the client held is hollow: its throughput is taguru-ray's, not the GPU's.
        faces = ["none" if hollow else colour for hollow in held[model]]
        axes.scatter(
            xs, ys, marker=marker[gpu_label[model]], facecolors=faces, edgecolors=colour, s=48
        )
        axes.annotate(
            model, points[model][0], xytext=(5, 5), textcoords="offset points", fontsize=8
        )
    legend = [
        Line2D([], [], linestyle="none", marker=marker[label], color="0.35", label=label)
        for label in labels
    ]
    if any(any(flags) for flags in held.values()):
        legend.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="o",
                markerfacecolor="none",
                color="0.35",
                label="hollow: held by the client",
            )
        )
    axes.legend(handles=legend, title="GPU", fontsize=8, title_fontsize=8, loc="best")
    top_x = max(x for xy in points.values() for x, _ in xy)
    top_y = max(y for xy in points.values() for _, y in xy)
    axes.set_xlim(0, top_x * 1.25 or 1.0)
    axes.set_ylim(0, top_y * 1.3 or 1.0)


def _bar_panel(
    axes: Axes,
    model_ids: list[str],
    values: Mapping[str, float | None],
    *,
    title: str,
    ylabel: str,
    number: str,
    limits: tuple[float, float] | None = None,
) -> None:
    axes.set_title(title, fontsize=10)
    axes.set_ylabel(ylabel)
    shown = [m for m in model_ids if values.get(m) is not None]
    if not shown:
        _no_data(axes)
        return
    positions = range(len(model_ids))
    heights = [values.get(m) or 0.0 for m in model_ids]
    bars = axes.bar(positions, heights, color="0.55", width=0.6)
    for bar, model in zip(bars, model_ids, strict=True):
        if values.get(model) is None:
            bar.set_visible(False)  # no value: no bar, and the note under the panel says so
        else:
            axes.annotate(
                number.format(values[model]),
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    axes.set_xticks(list(positions), model_ids, rotation=30 if len(model_ids) > 3 else 0)
    if limits is not None:
        axes.set_ylim(*limits)
    else:
        axes.set_ylim(bottom=0)
        axes.margins(y=0.12)
    absent = [m for m in model_ids if values.get(m) is None]
    if absent:
        _note(axes, "no value: " + ", ".join(absent))


def _no_data(axes: Axes) -> None:
    axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def _note(axes: Axes, text: str) -> None:
    """A line under the panel (below its x label), where no point or bar can hide it."""
    label, text = axes.get_xlabel(), textwrap.fill(text, NOTE_WIDTH)
    axes.set_xlabel(f"{label}\n{text}" if label else text)


def _figure(value: Any) -> float | None:
    """The number a metric value stands for: a Distribution's p50, a Count's or
    Ratio's `value`, a bare number; None when there is none."""
    if isinstance(value, Mapping):
        value = value.get("p50", value.get("value"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _gpu(
    model: str,
    measurements: Mapping[str, Any],
    cells: Mapping[str, Any],
    gpu_of: Mapping[str, str | None] | None,
) -> str | None:
    """The GPU label of a model, from the first source that names one."""
    if gpu_of is not None and model in gpu_of:
        return gpu_of[model] or None
    candidates = [
        _mapping(measurements.get("gpus")).get(model),
        _mapping(_mapping(measurements.get("models")).get(model)).get("gpu"),
        *(c.get("gpu") for c in _cell_values(cells) if c.get("model_id") == model),
    ]
    for candidate in candidates:
        if isinstance(candidate, Mapping):
            candidate = candidate.get("label", candidate.get("gpu"))
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _cell_values(cells: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in cells.values() if isinstance(c, Mapping)]
