"""The report page: one HTML file holding its figures and styles, no script, no URL.

A section per run (an extract --out, or a benchmark cell), each with the same
headings — throughput and in flight, latency, tokens and cost, what bounded the
run, failures and removals, ladder moves, slowest and costliest segments, and for an
extract --out the segments with what they hold (`segments_page`) — and,
for a benchmark, the wide table of its cells first. Every text from the records
is escaped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from html import escape
from typing import Any

from taguru_ray.measure import nearest_rank
from taguru_ray.report import figures
from taguru_ray.report.reading import Completion, ReportData, RunView
from taguru_ray.report.segments_page import FILTER_STYLE, knowledge_section

HEADINGS = (
    "Throughput and in flight",
    "Latency",
    "Tokens and cost",
    "What bounded the run",
    "Failures and removals",
    "Ladder moves",
    "Slowest and costliest segments",
    "Segments: what was extracted, and what was removed",
)
TOP = 10
LOCATED = "Where the facts came from: pages, slides, headings"
LOCATED_ROWS = 200  # a run of many documents shows its first rows and counts the rest
STYLE = (
    """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:960px;padding:0 20px;
color:#222}.kv{display:flex;flex-wrap:wrap;gap:6px 18px}.kv b{font-variant-numeric:tabular-nums}
h1{font-size:22px}h2{border-bottom:2px solid #ddd;padding-top:12px}h3{margin-bottom:4px}
svg{width:100%;max-width:720px;height:auto;display:block;margin:6px 0}
svg text{font-size:11px;fill:#333}svg .title{font-size:13px;font-weight:600}
svg .axis{stroke:#888;stroke-width:1}
svg .legend{paint-order:stroke;stroke:#fff;stroke-width:3px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:2px 8px}
td.n{text-align:right;font-variant-numeric:tabular-nums}.empty,.note{color:#777}
h4{margin:12px 0 4px}
"""
    + FILTER_STYLE
)


def render(data: ReportData) -> str:
    body = [f"<h1>taguru-ray report — {escape(data.title)}</h1>"]
    body += [f'<p class="note">{escape(note)}</p>' for note in data.notes]
    if data.wide:
        body.append(_wide(data))
    elif len(data.runs) > 1:
        body.append(_runs(data.runs))
    for number, run in enumerate(data.runs):
        body.append(_run(run, number))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>taguru-ray report — {escape(data.title)}</title>"
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _wide(data: ReportData) -> str:
    head = ["cell", "model", "GPU", "completions/s", "output tokens/s", "p50 s", "p99 s",
            "$ per 1M output", "bound"]  # fmt: skip
    rows = [
        [row.cell_id, row.model_id, row.gpu, *row.values.values(), row.bound] for row in data.wide
    ]
    throughput = [(row.cell_id, row.values["completions_per_s"] or 0.0) for row in data.wide]
    return (
        "<h2>Cells</h2>"
        + _table(head, rows)
        + figures.bars("completions per second, per cell", throughput, "/s")
    )


def _runs(runs: Sequence[RunView]) -> str:
    """Several runs side by side: their headline numbers, and latency as one CDF each."""
    head = ["run", "completions", "p50 s", "p99 s", "input tokens", "output tokens", "cost $",
            "bound"]  # fmt: skip
    rows = []
    curves = []
    for run in runs:
        seconds = sorted(c.seconds for c in run.completions)
        rows.append([
            run.label, len(seconds),
            nearest_rank(seconds, 50) if seconds else None,
            nearest_rank(seconds, 99) if seconds else None,
            sum(c.input_tokens for c in run.completions),
            sum(c.output_tokens for c in run.completions),
            run.summary.get("cost_usd"), _bound_word(run),
        ])  # fmt: skip
        shares = [(i + 1) / len(seconds) for i in range(len(seconds))]
        curves.append((run.label, seconds, shares))
    return (
        "<h2>Runs</h2>"
        + _table(head, rows)
        + figures.lines("latency, cumulative share per run", curves, "seconds", "share")
    )


def _bound_word(run: RunView) -> str | None:
    words = [str(g["bound"]) for g in run.gateways if isinstance(g.get("bound"), str)]
    return ", ".join(words) if words else run.bound


def _run(run: RunView, number: int) -> str:
    parts = [f"<h2>{escape(run.label)}</h2>", _summary(run)]
    parts += [f"<h3>{HEADINGS[0]}</h3>", _throughput(run)]
    parts += [f"<h3>{HEADINGS[1]}</h3>", _latency(run.completions)]
    parts += [f"<h3>{HEADINGS[2]}</h3>", _tokens(run)]
    parts += [f"<h3>{HEADINGS[3]}</h3>", _bound(run)]
    parts += [f"<h3>{HEADINGS[4]}</h3>", _failures(run)]
    parts += [f"<h3>{HEADINGS[5]}</h3>", _moves(run)]
    parts += [f"<h3>{HEADINGS[6]}</h3>", _slowest(run)]
    if run.located:  # a corpus of documents: each fact traced to its page (ADR 0078)
        parts += [f"<h3>{LOCATED}</h3>", _located(run)]
    if run.knowledge is not None and run.out is not None:
        parts += [f"<h3>{HEADINGS[7]}</h3>", knowledge_section(run.knowledge, run.out, number)]
    return "<section>" + "\n".join(parts) + "</section>"


def _summary(run: RunView) -> str:
    """The run's headline values (`metrics`' summary), as name-value boxes that wrap."""
    shown = [
        f"<span><b>{_number(v) if _is_number(v) else escape(str(v))}</b> {escape(k)}</span>"
        for k, v in run.summary.items()
        if v is not None
    ]
    return f'<div class="kv">{"".join(shown)}</div>' if shown else ""


def _throughput(run: RunView) -> str:
    calls = run.completions
    if not calls:
        return figures.empty("no completions")
    if run.clocked:
        return _clocked(calls)
    order = list(range(1, len(calls) + 1))
    tokens = list(_cumulative(c.output_tokens for c in calls))
    note = (
        '<p class="note">An extract run\'s records carry no clock: the axis is the order '
        "the completions were logged in, segment by segment; the gateway's in-flight "
        "figures are under “what bounded the run”.</p>"
    )
    return note + figures.lines(
        "output tokens, cumulative", [("output tokens", order, tokens)], "completion", "tokens"
    )


def _clocked(calls: Sequence[Completion]) -> str:
    """Completions per second and the mean requests in flight (each call on the wire
    from its end minus its duration to its end), in up to 60 equal bins."""
    ends = [float(c.ts or 0.0) for c in calls]
    start = min(end - c.seconds for end, c in zip(ends, calls, strict=True))
    span = max(ends) - start or 1.0
    bins = min(60, max(int(span), 1))
    width = span / bins
    done = [0] * bins
    for end in ends:
        done[min(int((end - start) / width), bins - 1)] += 1
    mids = [start + width * (i + 0.5) for i in range(bins)]
    wire = [0.0] * bins  # request-seconds on the wire within each bin
    for end, call in zip(ends, calls, strict=True):
        for i in range(bins):
            low = start + width * i
            wire[i] += max(0.0, min(end, low + width) - max(end - call.seconds, low))
    inflight = [seconds / width for seconds in wire]
    xs = [m - start for m in mids]
    return figures.lines(
        "completions per second", [("completions/s", xs, [n / width for n in done])],
        "seconds since the first request", "per second",
    ) + figures.lines(
        "requests in flight (mean per bin)", [("in flight", xs, inflight)],
        "seconds since the first request", "requests",
    )  # fmt: skip


def _cumulative(values: Any) -> Any:
    total = 0
    for value in values:
        total += value
        yield total


def _latency(calls: Sequence[Completion]) -> str:
    seconds = sorted(c.seconds for c in calls)
    if not seconds:
        return figures.empty("no completions")
    marks = ", ".join(f"p{p} {nearest_rank(seconds, p):.3f} s" for p in (50, 90, 99))
    return f"<p>{len(seconds)} completions: {marks}, max {seconds[-1]:.3f} s</p>" + (
        figures.histogram("seconds per completion", seconds, "seconds")
    )


def _tokens(run: RunView) -> str:
    calls = run.completions
    tokens_in = sum(c.input_tokens for c in calls)
    tokens_out = sum(c.output_tokens for c in calls)
    cost = run.summary.get("cost_usd")
    said = (
        "cost unknown (no price for the run's model: --prices FILE)"
        if cost is None
        else (f"${cost:.4f}")
    )
    return f"<p>{tokens_in} input + {tokens_out} output tokens · {escape(said)}</p>" + (
        figures.bars("tokens", [("input", tokens_in), ("output", tokens_out)], "tokens")
    )


def _bound(run: RunView) -> str:
    if run.gateways:
        keys = ["run_id", "window", "inflight_limit", "inflight_mean", "inflight_peak",
                "bound", "bound_why"]  # fmt: skip
        rows = [[g.get(k) for k in keys] for g in run.gateways]
        level = [
            (f"{name} ({g.get('run_id')})", float(g.get(name) or 0))
            for g in run.gateways
            for name in ("inflight_mean", "inflight_peak", "inflight_limit", "window")
            if isinstance(g.get(name), int | float)
        ]
        return _table(keys, rows) + figures.bars("requests in flight against the limits",
                                                 level, "")  # fmt: skip
    if run.bound:
        return f"<p>bound: <b>{escape(run.bound)}</b> (the cell's steady state, ADR 0048)</p>"
    return figures.empty(
        "no gateway record: give the run's diagnostics sidecar (--diagnostics FILE)"
    )


def _by_kind(title: str, kinds: dict[str, Counter[str]]) -> str:
    if not kinds:
        return ""
    rows = [(kind, float(sum(hit.values()))) for kind, hit in sorted(kinds.items())]
    listed = [
        [kind, sum(hit.values()), ", ".join(f"{s} ({n})" for s, n in hit.most_common(TOP))]
        for kind, hit in sorted(kinds.items())
    ]
    return figures.bars(title, rows, "") + _table(["kind", "count", "segments hit"], listed)


def _failures(run: RunView) -> str:
    shown = _by_kind("failed completions and segments, by kind", run.failures)
    shown += _by_kind("items removed, dropped or folded as duplicates, by kind", run.removals)
    return shown or figures.empty("no failed completion, no removed item")


def _moves(run: RunView) -> str:
    return _by_kind("ladder moves, by kind", run.move_sources) or figures.empty("no ladder move")


def _slowest(run: RunView) -> str:
    slow = sorted(run.segments, key=lambda s: -s.seconds)[:TOP]
    parts = figures.bars(
        f"slowest segments (model seconds, top {TOP})", [(s.name, s.seconds) for s in slow], "s"
    )
    priced = [s for s in run.segments if s.cost is not None]
    if priced:
        costly = sorted(priced, key=lambda s: -(s.cost or 0.0))[:TOP]
        parts += figures.bars(
            f"costliest segments (top {TOP})", [(s.name, s.cost or 0.0) for s in costly], "$"
        )
    else:
        costly_tokens = sorted(run.segments, key=lambda s: -s.output_tokens)[:TOP]
        parts += figures.bars(
            f"segments by output tokens (no price; top {TOP})",
            [(s.name, float(s.output_tokens)) for s in costly_tokens],
            "tokens",
        )
    return parts


def _located(run: RunView) -> str:
    rows = run.located[:LOCATED_ROWS]
    table = _table(("segment", "where", "paragraphs", "facts"), rows)
    more = len(run.located) - len(rows)
    return table + (f"<p>… and {more} more row(s): the traces hold them all.</p>" if more else "")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["<table><tr>", *(f"<th>{escape(str(h))}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>")
        for value in row:
            out.append(f'<td class="n">{_number(value)}</td>' if _is_number(value) else
                       f"<td>{escape('-' if value is None else str(value))}</td>")  # fmt: skip
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "-"
    return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
