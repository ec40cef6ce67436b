"""`taguru-ray benchmark extract | compare` as a user runs them: real simulators with
different capacities, the session's Ray, real child extracts (BENCHMARK.md §1, §5)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from taguru_ray.benchmark.compare import ARTIFACTS
from taguru_ray.benchmark.compare import compare as compare_results
from taguru_ray.simulate.harness import SimulatorProcess
from tests import s3 as server
from tests.s3 import S3
from tests.support import CONTEXT, REPO, assert_imports_whole

SEGMENTS = {
    "brewery.md": "Kura Brewing is a sake brewery in Fushimi.\n\nKura Brewing uses Yamada "
    "Nishiki rice.\n\nFushimi is a district of Kyoto.\n",
    "castle.md": "Himeji Castle is a castle in Hyogo.\n\nHimeji Castle was built in 1333.\n",
}


@pytest.fixture(scope="module")
def simulators() -> Iterator[tuple[SimulatorProcess, SimulatorProcess]]:
    """Two endpoints of different capacity; answers vary from run to run on the first."""
    with (
        SimulatorProcess("--slots", "4", "--latency-ms", "20", vary=0.3, vary_run="seen") as a,
        SimulatorProcess("--slots", "8", "--latency-ms", "5") as b,
    ):
        yield a, b


def write_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in SEGMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def write_models(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(
        json.dumps({"taguru_benchmark_models": 1, "models": list(entries)}), encoding="utf-8"
    )
    return path


def benchmark(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "RAY_ADDRESS"))}
    return subprocess.run(
        [sys.executable, "-m", "taguru_ray", "benchmark", *args],
        env={**base, **(env or {}), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def refuse_network(*_: Any, **__: Any) -> None:
    raise OSError("networking is refused in this test")


def test_a_matrix_runs_resumes_widens_and_refuses_a_changed_matrix(
    ray_address: str,
    simulators: tuple[SimulatorProcess, SimulatorProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = simulators
    corpus, out = tmp_path / "corpus", tmp_path / "results"
    shutil.copytree(REPO / "examples" / "corpus", corpus)
    models = write_models(
        tmp_path / "models.json",
        {"id": "sim-a", "model": "taguru-sim", "url": a.chat_url, "gpu": "h200-sim",
         "gpu_count": 2, "price_per_gpu_hour": 3.0},
        {"id": "sim-b", "model": "taguru-sim", "url": b.chat_url, "gpu": "l40s-sim",
         "max_inflight": 8},
    )  # fmt: skip
    args = ["extract", "--models", str(models), "--context", CONTEXT, "--out", str(out)]
    args += ["--address", ray_address, str(corpus)]
    first = benchmark(*args)
    assert first.returncode == 0, first.stderr
    assert "2 cell(s), 2 complete, 0 failed" in first.stdout

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["taguru_benchmark_manifest"] == 1 and manifest["finished_at"]
    assert [s["segment_id"] for s in manifest["segments"]] == [
        "01-ray-overview", "02-object-storage-operations", "03-sake-brewing"
    ]  # fmt: skip
    assert [m["gpu"] for m in manifest["models"]] == ["h200-sim", "l40s-sim"]
    assert manifest["models"][0]["provider_probe"]["ok"] is True  # the simulator's /v1/models
    lock = json.loads((out / "models.lock.json").read_text())
    assert [m["id"] for m in lock["models"]] == ["sim-a", "sim-b"]
    cells = {c["cell_id"]: c for c in manifest["cells"]}
    assert set(cells) == {"sim-a.run01", "sim-b.run01"}
    for cell in cells.values():
        assert cell["outcome"] == "complete" and cell["structured_output_resolved"] == "off"
        saturation = cell["saturation"]
        assert saturation["completions"] >= 2 and saturation["completions_per_second"] > 0
        assert saturation["http_429"] == 0 and saturation["latency_seconds"]["p50"] > 0
        runs = lines(out / cell["runs_file"])
        assert runs[0]["kind"] == "header" and runs[-1]["kind"] == "cell"
        starts = [r for r in runs if r["kind"] == "segment" and r["phase"] == "start"]
        ends = [r for r in runs if r["kind"] == "segment" and r["phase"] == "end"]
        assert len(starts) == 3 and {e["outcome"] for e in ends} == {"written"}
        for end in ends:
            assert (out / end["batch_path"]).is_file()  # relative to the results folder
        assert (out / cell["cell_dir"] / "exit_code").read_text() == "0"
        assert (out / cell["cell_dir"] / ".diagnostics.jsonl").is_file()
        assert_imports_whole(str(out / cell["cell_dir"]))  # the sidecar is hidden
    priced = cells["sim-a.run01"]["saturation"]
    assert priced["cost_per_1k_segments"] > 0 and priced["cost_per_1m_output_tokens"] > 0
    assert cells["sim-b.run01"]["saturation"]["cost_per_1k_segments"] is None  # no price

    # A rerun makes no model call; a wider --runs adds the second run's cells.
    a.reset(), b.reset()
    again = benchmark(*args)
    assert again.returncode == 0, again.stderr
    assert a.stats()["requests"] == 0 and b.stats()["requests"] == 0
    assert len(json.loads((out / "manifest.json").read_text())["cells"]) == 2
    wider = benchmark(*args[:-1], "--runs", "2", str(corpus))
    assert wider.returncode == 0, wider.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["harness"]["runs_per_model"] == 2
    assert {c["cell_id"] for c in manifest["cells"]} == {
        "sim-a.run01", "sim-a.run02", "sim-b.run01", "sim-b.run02"
    }  # fmt: skip

    # compare: measured, never ranked; the varied endpoint's runs differ, the other's not.
    compared = benchmark("compare", str(out))
    assert compared.returncode == 0, compared.stderr
    measurements = json.loads((out / "measurements.json").read_text())

    jaccard = {
        m: measurements["models"][m]["stability.run_pair_jaccard"] for m in ("sim-a", "sim-b")
    }
    assert jaccard["sim-b"]["n"] == 1 and jaccard["sim-b"]["p50"] == 1.0  # --vary 0
    for model in ("sim-a", "sim-b"):  # issue 37: its own header is not an invalid line
        invalid = measurements["models"][model]["extraction.batch_lines_invalid"]
        assert invalid["n"] >= 1 and invalid["max"] == 0, invalid
    assert jaccard["sim-a"]["n"] == 1 and 0.0 < jaccard["sim-a"]["p50"] < 1.0  # --vary 0.3
    artifacts = {name: (out / name).read_bytes() for name in ARTIFACTS}
    with monkeypatch.context() as patch:  # a pure function: no network, the same bytes
        patch.setattr(socket.socket, "connect", refuse_network)
        patch.setattr(socket, "create_connection", refuse_network)
        compare_results(str(out))
    assert {name: (out / name).read_bytes() for name in ARTIFACTS} == artifacts
    assert set(measurements["gpus"]) == {"h200-sim", "l40s-sim"}
    assert (out / "measurements.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "measurements.parquet").is_file() and (out / "differences.jsonl").is_file()

    # An edited matrix is refused before any call.
    models.write_text(models.read_text().replace("h200-sim", "h100-sim"), encoding="utf-8")
    changed = benchmark(*args)
    assert changed.returncode == 2 and "models.json has changed" in changed.stderr


def test_a_model_that_never_answers_well_is_a_failed_cell_and_exit_1(
    ray_address: str, tmp_path: Path
) -> None:
    corpus, out = write_corpus(tmp_path), tmp_path / "results"
    with SimulatorProcess("--fault-rate", "malformed=1") as broken:
        models = write_models(
            tmp_path / "models.json", {"id": "broken", "model": "m", "url": broken.chat_url}
        )
        result = benchmark(
            "extract", "--models", str(models), "--context", CONTEXT, "--out", str(out),
            "--address", ray_address, "--max-attempts", "1", str(corpus),
        )  # fmt: skip
    # The matrix ran to its end and kept the failed cell's measurements, and the exit
    # says a cell failed (issue 37): a script reading 0 would trust a broken model.
    assert result.returncode == 1, result.stderr
    assert "1 cell(s), 0 complete, 1 failed" in result.stdout
    assert "cell broken.run01 failed" in result.stderr and "stderr.log" in result.stderr
    assert "Traceback" not in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["finished_at"] is not None
    (cell,) = manifest["cells"]
    assert cell["outcome"] == "failed"
    runs = lines(out / cell["runs_file"])
    ends = [r for r in runs if r["kind"] == "segment" and r["phase"] == "end"]
    assert len(ends) == 2 and all(e["outcome"] == "failed" for e in ends)
    assert all(e["associations"] is None and e["batch_path"] is None for e in ends)
    assert runs[-1]["kind"] == "cell" and runs[-1]["outcome"] == "failed"
    assert runs[-1]["exit_code"] == 1
    assert any(r["kind"] == "attempt" and r["state"] == "stop_malformed" for r in runs)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "required"),
        (["--runs", "0"], "--runs"),
        (["--max-attempts", "11"], "--max-attempts"),
        (["--runs", "2", "--runs", "3"], "given twice"),
        (["--questions", "1", "--no-passage"], "--no-passage"),
        (["--bogus"], "unrecognized"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    base = ["--models", "m.json", "--context", CONTEXT, "--out", str(tmp_path / "r"), "corpus"]
    result = benchmark("extract", *(base if args else []), *args)
    assert result.returncode == 2
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "try 'taguru-ray benchmark extract --help'" in result.stderr


def test_a_bad_matrix_or_corpus_stops_before_any_call(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    bad = tmp_path / "models.json"
    bad.write_text('{"taguru_benchmark_models": 2, "models": []}', encoding="utf-8")
    base = ["extract", "--models", str(bad), "--context", CONTEXT, "--out", str(tmp_path / "r")]
    result = benchmark(*base, str(corpus))
    assert result.returncode == 2 and str(bad) in result.stderr
    assert "taguru_benchmark_models" in result.stderr and not (tmp_path / "r").exists()
    good = write_models(tmp_path / "ok.json", {"id": "m", "model": "m", "url": "http://h/v1"})
    base[2] = str(good)
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = benchmark(*base, str(empty))
    assert refused.returncode == 2 and "holds no .md or .txt" in refused.stderr
    missing = benchmark(*base, "--vocabulary", str(tmp_path / "nowhere"), str(corpus))
    assert missing.returncode == 1 and "--vocabulary" in missing.stderr
    assert "Traceback" not in missing.stderr and not (tmp_path / "r").exists()
    assert benchmark("extract", "--help").returncode == 0
    assert benchmark("nope").returncode == 2 and benchmark("--help").returncode == 0


s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name


def test_results_on_s3_are_written_resumed_and_compared(
    ray_address: str, simulators: tuple[SimulatorProcess, SimulatorProcess], s3_env: S3,
    tmp_path: Path,
) -> None:  # fmt: skip
    _, b = simulators
    corpus, results = write_corpus(tmp_path), s3_env.prefix("bench")
    models = write_models(
        tmp_path / "models.json", {"id": "sim-b", "model": "taguru-sim", "url": b.chat_url}
    )
    args = ["extract", "--models", str(models), "--context", CONTEXT, "--out", results]
    args += ["--address", ray_address, str(corpus)]
    first = benchmark(*args, env=s3_env.env)
    assert first.returncode == 0, first.stderr
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    manifest = json.loads(fs.cat_file(f"{results}/manifest.json"))
    (cell,) = manifest["cells"]
    assert cell["outcome"] == "complete" and manifest["finished_at"]
    runs = [json.loads(x) for x in fs.cat_file(f"{results}/{cell['runs_file']}").splitlines()]
    assert runs[0]["kind"] == "header" and runs[-1]["kind"] == "cell"
    for name in ("exit_code", "stdout.log", "stderr.log", ".diagnostics.jsonl"):
        assert fs.exists(f"{results}/{cell['cell_dir']}/{name}"), name
    ends = [r for r in runs if r["kind"] == "segment" and r["phase"] == "end"]
    assert all(fs.exists(f"{results}/{end['batch_path']}") for end in ends) and len(ends) == 2
    b.reset()
    assert benchmark(*args, env=s3_env.env).returncode == 0 and b.stats()["requests"] == 0
    compared = benchmark("compare", results, env=s3_env.env)
    assert compared.returncode == 0, compared.stderr
    fs.invalidate_cache()
    measurements = json.loads(fs.cat_file(f"{results}/measurements.json"))
    assert set(measurements["cells"]) == {"sim-b.run01"}


def six_segments(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):
        (corpus / f"s{i}.md").write_text(f"Alpha{i} uses Beta{i}.\n", encoding="utf-8")
    return corpus


def start_harness(args: list[str]) -> subprocess.Popen[str]:
    """`benchmark extract` in the background, as a user's shell starts it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    return subprocess.Popen(
        [sys.executable, "-m", "taguru_ray", "benchmark", *args],
        env={**base, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def test_a_stopped_matrix_exits_130_and_resumes_without_paying_twice(
    ray_address: str, tmp_path: Path
) -> None:
    corpus = six_segments(tmp_path)
    out = tmp_path / "results"
    with SimulatorProcess("--slots", "1", "--latency-ms", "1500") as slow:
        models = write_models(
            tmp_path / "models.json",
            {"id": "slow", "model": "m", "url": slow.chat_url, "max_inflight": 1},
        )
        args = ["extract", "--models", str(models), "--context", CONTEXT, "--out", str(out)]
        args += ["--address", ray_address, str(corpus)]
        harness = start_harness(args)
        runs = out / "runs" / "slow.run01.jsonl"
        deadline = time.monotonic() + 180
        while not (runs.is_file() and '"kind":"attempt"' in runs.read_text()):
            assert harness.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        harness.send_signal(signal.SIGINT)  # as Ctrl+C would, to the harness alone
        _, stderr = harness.communicate(timeout=180)
        assert harness.returncode == 130, stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["finished_at"] is None
        assert [c["outcome"] for c in manifest["cells"]] == ["interrupted"]
        assert (out / "cells/slow/run01/exit_code").read_text() == "130"
        assert lines(runs)[-1]["kind"] != "cell"  # its absence says interrupted
        paid = slow.stats()["requests"]
        answered = sum(1 for line in lines(runs) if line["kind"] == "attempt")
        assert 1 <= answered < 6 and paid < 6

        resumed = benchmark(*args)
        assert resumed.returncode == 0, resumed.stderr
        # Only the segments not answered before the stop are asked again.
        assert slow.stats()["requests"] - paid == 6 - answered
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["outcome"] for c in manifest["cells"]] == ["complete"] and manifest["finished_at"]
    assert lines(runs)[-1]["kind"] == "cell"


def test_a_killed_harness_leaves_finished_cells_and_the_rerun_pays_nothing_twice(
    ray_address: str, tmp_path: Path
) -> None:
    import psutil

    corpus = six_segments(tmp_path)
    out = tmp_path / "results"
    with (
        SimulatorProcess("--slots", "8") as fast,
        SimulatorProcess("--slots", "1", "--latency-ms", "1500") as slow,
    ):
        models = write_models(
            tmp_path / "models.json",
            {"id": "fast", "model": "m", "url": fast.chat_url},
            {"id": "slow", "model": "m", "url": slow.chat_url, "max_inflight": 1},
        )
        args = ["extract", "--models", str(models), "--context", CONTEXT, "--out", str(out)]
        args += ["--address", ray_address, str(corpus)]
        harness = start_harness(args)
        runs = out / "runs" / "slow.run01.jsonl"
        manifest_path = out / "manifest.json"
        deadline = time.monotonic() + 180

        def fast_done() -> bool:
            if not manifest_path.is_file():
                return False
            cells = json.loads(manifest_path.read_text())["cells"]
            return any(c["cell_id"] == "fast.run01" for c in cells)

        while not (fast_done() and runs.is_file() and '"kind":"attempt"' in runs.read_text()):
            assert harness.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        children = psutil.Process(harness.pid).children()
        harness.kill()  # SIGKILL: no handler runs; the child learns it from the kernel
        harness.communicate()
        psutil.wait_procs(children, timeout=120)  # it stops at its checkpoint and exits
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
        paid = slow.stats()["requests"]
        # The child outlived the harness until its signal: what it answered is in its own
        # attempts logs (the dead harness transcribed only what it saw).
        answered = sum(
            1
            for log in (out / "cells/slow/run01/.extract-trace").glob("*.attempts.jsonl")
            for line in lines(log)
            if line["type"] == "attempt"
        )
        assert answered >= 1
        fast.reset()

        resumed = benchmark(*args)
        assert resumed.returncode == 0, resumed.stderr
        assert fast.stats()["requests"] == 0  # its finished cell is skipped
        assert slow.stats()["requests"] - paid == 6 - answered  # nothing answered is re-asked
    manifest = json.loads(manifest_path.read_text())
    assert {c["cell_id"]: c["outcome"] for c in manifest["cells"]} == {
        "fast.run01": "complete",
        "slow.run01": "complete",
    }
