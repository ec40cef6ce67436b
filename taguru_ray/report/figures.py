"""Inline SVG figures, drawn from plain numbers: no library, no font file, no URL.

Each function returns one ``<svg>`` element as text, its labels escaped, sized by
its viewBox so the page scales it. A figure with nothing to draw says so in a
``<p>`` instead of drawing empty axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 40
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
Series = tuple[str, Sequence[float], Sequence[float]]  # (label, xs, ys)


def empty(what: str) -> str:
    return f'<p class="empty">{escape(what)}</p>'


def _frame(title: str, x_label: str, y_label: str, y_max: float, x_min: float,
           x_max: float) -> list[str]:  # fmt: skip
    """The svg head, title, axes, and four y ticks."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" class="title">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" '
        'class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" class="axis"/>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text x="12" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {(TOP + HEIGHT - BOTTOM) / 2})">{escape(y_label)}</text>',
    ]
    for i in range(5):
        value = y_max * i / 4
        y = _y(value, y_max)
        parts.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" class="axis"/>')
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_short(value)}</text>'
        )
    for value in (x_min, x_max):
        x = _x(value, x_min, x_max)
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
            f"{_short(value)}</text>"
        )
    return parts


def nice(value: float) -> float:
    """The least of 1, 2, 2.5 or 5 times a power of ten at or above `value`: round ticks."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def _x(value: float, low: float, high: float) -> float:
    span = high - low or 1.0
    return LEFT + (value - low) / span * (WIDTH - LEFT - RIGHT)


def _y(value: float, high: float) -> float:
    return HEIGHT - BOTTOM - (value / (high or 1.0)) * (HEIGHT - TOP - BOTTOM)


def _short(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:.3g}k"
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def lines(title: str, series: Sequence[Series], x_label: str, y_label: str) -> str:
    """Line chart, one polyline per series, a legend when there are several."""
    drawn = [(label, xs, ys) for label, xs, ys in series if len(xs)]
    if not drawn:
        return empty(f"{title}: nothing to draw")
    x_min = min(min(xs) for _, xs, _ in drawn)
    x_max = max(max(xs) for _, xs, _ in drawn)
    y_max = nice(max(max(ys) for _, _, ys in drawn))
    parts = _frame(title, x_label, y_label, y_max, x_min, x_max)
    for i, (label, xs, ys) in enumerate(drawn):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(
            f"{_x(x, x_min, x_max):.1f},{_y(y, y_max):.1f}" for x, y in zip(xs, ys, strict=True)
        )
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                     'stroke-width="1.5"/>')  # fmt: skip
        if len(drawn) > 1:
            y = TOP + 12 * i
            parts.append(f'<text x="{LEFT + 8}" y="{y + 4}" fill="{colour}" '
                         f'class="legend">{escape(label)}</text>')  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def histogram(title: str, values: Sequence[float], x_label: str, bins: int = 20) -> str:
    """Counts of `values` in equal bins from their least to their greatest; a value that
    is not a finite number has no bin and is left out."""
    values = [value for value in values if math.isfinite(value)]
    if not values:
        return empty(f"{title}: nothing to draw")
    low, high = min(values), max(values)
    width = (high / bins - low / bins) or 1.0  # never inf: 1e308 and -1e308 are finite
    counts = [0] * bins
    for value in values:
        counts[min(int(value / width - low / width), bins - 1)] += 1
    y_max = nice(max(counts))
    parts = _frame(title, x_label, "completions", y_max, low, low + width * bins)
    step = (WIDTH - LEFT - RIGHT) / bins
    for i, n in enumerate(counts):
        y = _y(n, y_max)
        parts.append(
            f'<rect x="{LEFT + i * step + 1:.1f}" y="{y:.1f}" width="{step - 2:.1f}" '
            f'height="{HEIGHT - BOTTOM - y:.1f}" fill="{COLOURS[0]}"><title>{n}</title></rect>'
        )
    parts.append("</svg>")
    return "".join(parts)


def bars(title: str, rows: Sequence[tuple[str, float]], unit: str) -> str:
    """Horizontal bars, one per (label, value), in the order given."""
    rows = [(label, value) for label, value in rows if value == value]
    if not rows:
        return empty(f"{title}: nothing to draw")
    row_height, label_width = 20, 260
    height = TOP + row_height * len(rows) + 8
    top = max(value for _, value in rows) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" class="title">{escape(title)}</text>',
    ]
    room = WIDTH - label_width - 90
    for i, (label, value) in enumerate(rows):
        y = TOP + i * row_height
        shown = label if len(label) <= 40 else "…" + label[-39:]
        parts.append(f'<text x="{label_width - 6}" y="{y + 14}" text-anchor="end">'
                     f"<title>{escape(label)}</title>{escape(shown)}</text>")  # fmt: skip
        parts.append(
            f'<rect x="{label_width}" y="{y + 3}" width="{max(value / top * room, 1):.1f}" '
            f'height="{row_height - 6}" fill="{COLOURS[i % 2]}"/>'
        )
        parts.append(
            f'<text x="{label_width + value / top * room + 6:.1f}" y="{y + 14}">'
            f"{escape(_short(value))} {escape(unit)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
