"""``taguru-ray report``: one self-contained page per run or benchmark, rendered in headless
Chromium to check its figures are there (issue 39, point 3)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from taguru_ray.benchmark.compare.wide import render_wide_csv, render_wide_text, wide_rows
from taguru_ray.cli.benchmark_compare import main as compare_main
from taguru_ray.cli.report import main
from taguru_ray.report import figures
from taguru_ray.report.page import HEADINGS
from tests.test_benchmark_compare_artifacts import saturated

RECORDS = Path(__file__).parent / "fixtures" / "records"
CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
GATEWAY = {
    "type": "gateway", "run_id": "r", "completions": 6, "requests": 6, "outcomes": {"ok": 6},
    "inflight_limit": 32, "inflight_adaptive": True, "max_in_flight": 3, "input_tokens": 10,
    "output_tokens": 5, "window": 256, "inflight_mean": 2.5, "inflight_peak": 3,
    "bound": "endpoint", "bound_why": "latency grew with load",
}  # fmt: skip


def sidecar(tmp_path: Path, out: Path) -> Path:
    """A diagnostics sidecar whose gateway record names the run of `out`'s records."""
    log = next((out / ".extract-trace").glob("*.attempts.jsonl"))
    run_id = json.loads(log.read_text().splitlines()[0])["run_id"]
    path = tmp_path / "diagnostics.jsonl"
    path.write_text(json.dumps({"type": "run", "run_id": run_id}) + "\n"
                    + json.dumps(GATEWAY | {"run_id": run_id}) + "\n")  # fmt: skip
    return path


def report(tmp_path: Path, *args: str) -> str:
    html = tmp_path / "report.html"
    assert main([*args, "--html", str(html)]) == 0
    return html.read_text(encoding="utf-8")


def test_a_run_page_has_every_section_and_what_bounded_it(tmp_path: Path) -> None:
    out = RECORDS / "run-a"
    page = report(tmp_path, str(out), "--diagnostics", str(sidecar(tmp_path, out)))
    for heading in HEADINGS:
        assert f"<h3>{heading}</h3>" in page
    assert "latency grew with load" in page and ">endpoint<" in page
    # beta failed twice malformed: its failures are named with the segment they hit.
    assert "stop_malformed" in page and "docs/beta.md" in page
    assert "association removed" in page  # alpha's fabricated MongoDB association
    assert page.count("<svg") >= 6


def test_the_page_names_no_url_and_runs_no_script(tmp_path: Path) -> None:
    page = report(tmp_path, str(RECORDS / "run-a"), str(RECORDS / "run-b"))
    assert "<script" not in page and "<link" not in page
    # The one URL is the SVG namespace, which is a name, never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert page.count("<h2>") == 3  # the runs side by side, then a section per run
    assert "<h2>Runs</h2>" in page and "latency, cumulative share per run" in page
    assert "escalate" in page and "split" in page  # run-b's ladder moves


def test_a_missing_out_or_sidecar_is_a_usage_error(tmp_path: Path) -> None:
    assert main([str(tmp_path / "nowhere"), "--html", str(tmp_path / "r.html")]) == 2
    missing = ["--diagnostics", str(tmp_path / "nowhere.jsonl")]
    assert main([str(RECORDS / "run-a"), *missing, "--html", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def test_a_label_from_the_records_is_text_never_markup() -> None:
    drawn = figures.bars("t", [("<script>alert(1)</script>", 1.0)], "s")
    assert "<script>" not in drawn and "&lt;script&gt;" in drawn


def test_a_benchmark_page_shows_its_cells_wide(tmp_path: Path) -> None:
    results = saturated(tmp_path / "results")
    results.write()
    page = report(tmp_path, str(results.root))
    assert "<h2>Cells</h2>" in page and "completions/s" in page
    assert page.count("<h3>Latency</h3>") == len(list((results.root / "runs").glob("*.jsonl")))


def test_compare_prints_and_writes_the_wide_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = saturated(tmp_path)
    results.write()
    assert compare_main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split()[:4] == ["cell", "model", "GPU", "compl/s"]
    wide = (tmp_path / "measurements-wide.csv").read_text().splitlines()
    assert wide[0] == ("cell_id,model_id,gpu,completions_per_s,output_tokens_per_s,"
                       "latency_p50_s,latency_p99_s,cost_per_1m_output_tokens,bound")  # fmt: skip
    assert len(wide) == len(printed.splitlines())  # a row per cell in both


def test_a_wide_row_is_the_cells_own_values() -> None:
    one = {"n": 1, "mean": 3.0}
    measurements = {"cells": {"m.run01": {
        "model_id": "m", "bound": "endpoint", "saturation.completions_per_second": one,
        "saturation.latency_p99_seconds": {"n": 1, "mean": 0.25},
    }}}  # fmt: skip
    rows = wide_rows(measurements, {"m": "L4"})
    assert render_wide_csv(rows).splitlines()[1] == "m.run01,m,L4,3,,,0.25,,endpoint"
    assert render_wide_text(rows).splitlines()[1].split() == [
        "m.run01", "m", "L4", "3.00", "-", "-", "0.250", "-", "endpoint"
    ]  # fmt: skip


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with a fresh profile, ended by its own exit or the timeout."""
    profile = tempfile.mkdtemp(prefix="taguru-report-chromium-")
    try:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)


needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"{CHROMIUM} is not installed (apt-get install -y chromium; .ci/run does)",
)


@needs_chromium
def test_the_page_renders_in_headless_chromium_with_its_figures(tmp_path: Path) -> None:
    out = RECORDS / "run-a"
    report(tmp_path, str(out), "--diagnostics", str(sidecar(tmp_path, out)))
    html = tmp_path / "report.html"
    dom = rendered(html)
    assert dom.count("<svg") >= 6 and dom.count("<polyline") >= 1 and "<rect" in dom
    for heading in HEADINGS:
        assert f"<h3>{heading}</h3>" in dom
    shot = tmp_path / "report.png"
    taken = chromium("--window-size=1000,1400", f"--screenshot={shot}", html.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000


@needs_chromium
def test_a_benchmark_page_renders_with_a_time_series_per_cell(tmp_path: Path) -> None:
    results = saturated(tmp_path / "results")
    results.write()
    report(tmp_path, str(results.root))
    dom = rendered(tmp_path / "report.html")
    cells = len(list((results.root / "runs").glob("*.jsonl")))
    assert "<h2>Cells</h2>" in dom and dom.count("<h3>Throughput and in flight</h3>") == cells


def rendered(html: Path) -> str:
    """The DOM Chromium built from `html`."""
    dumped = chromium("--dump-dom", html.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    return dumped.stdout


@pytest.mark.parametrize("field", ["elapsed_seconds", "input_tokens", "output_tokens"])
def test_a_non_finite_figure_in_an_attempts_log_is_an_unreadable_line_to_report_and_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    """Issue 49 item 11: `1e999` seconds or tokens (Python's json reads it as infinity)
    crashed `report`; `metrics`, reading the same folder, dropped it silently. Both now
    skip the line and say so, as for a torn one."""
    from taguru_ray.cli.metrics import main as metrics_main

    out = tmp_path / "run"
    shutil.copytree(RECORDS / "run-a", out)
    log = next((out / ".extract-trace").glob("*alpha*.attempts.jsonl"))
    lines = log.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if '"type":"attempt"' in line)
    lines[at] = re.sub(rf'"{field}":[0-9.]+', f'"{field}":1e999', lines[at], count=1)
    assert "1e999" in lines[at]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    page = report(tmp_path, str(out))
    assert "1 unreadable line(s) skipped" in page  # the page's note, as metrics says it
    assert "inf" not in re.sub(r"<[^>]+>", " ", page).split()
    assert metrics_main([str(out)]) == 0
    assert "1 unreadable line(s) skipped" in capsys.readouterr().err


def test_a_histogram_draws_only_finite_values() -> None:
    svg = figures.histogram("seconds", [0.5, float("inf"), 1e308, float("nan"), 2.0], "s")
    assert svg.startswith("<svg") and "nan" not in svg and "inf" not in svg
