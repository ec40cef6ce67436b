"""`jobs/gate.py`, the nightly gate after an extract, end to end on an embedded store:
import, evaluate with thresholds, compare with the last good run; its exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "evaluate"


def gate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    return subprocess.run(
        [sys.executable, str(REPO / "jobs" / "gate.py"), "--sources", str(FIXTURES / "corpus"),
         "--context", "sake", "--eval", str(FIXTURES / "eval.jsonl"),
         "--store", str(tmp_path / "store"), *extra],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def thresholds(tmp_path: Path, name: str, mrr_min: float) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"taguru_evaluate_thresholds": 1,
                                "aggregate": {"recall.mrr": {"min": mrr_min}}}))  # fmt: skip
    return str(path)


def test_a_passing_night_then_a_regressed_one_compared_with_it(tmp_path: Path) -> None:
    night = gate(tmp_path, "--thresholds", thresholds(tmp_path, "ok.json", 0.5),
                 "--artifacts", "night1", "--last-good", "none/evaluation.json")  # fmt: skip
    assert night.returncode == 0, night.stderr
    assert night.stderr.splitlines()[-1] == "taguru-ray gate exited 0 (evaluate)"
    assert "nothing to compare with" in night.stderr
    first = json.loads((tmp_path / "night1" / "evaluation.json").read_text())
    assert first["thresholds"]["passed"] is True and first["corpus"]["sources_count"] == 3

    # The same corpus again (a re-import replaces it), under a bound it cannot meet.
    second = gate(tmp_path, "--thresholds", thresholds(tmp_path, "strict.json", 0.9),
                  "--artifacts", "night2", "--last-good", "night1/evaluation.json")  # fmt: skip
    assert second.returncode == 3, second.stderr
    assert "recall.mrr" in second.stderr
    changes = (tmp_path / "night2" / "changes.jsonl").read_text().splitlines()
    header = json.loads(changes[0])
    assert header["kind"] == "header" and header["counts"]["unchanged"] == 5
    assert any("thresholds" in warning for warning in header["warnings"])


def test_a_refused_import_fails_the_run_not_the_gate(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.jsonl").write_text('{"taguru_batch": 1}\n')
    done = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "gate.py"), "--sources", str(bad), "--context",
         "sake", "--eval", str(FIXTURES / "eval.jsonl"), "--store", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "taguru-ray gate exited 1 (import)"
    assert not (tmp_path / "artifacts" / "evaluation.json").exists()


def test_assembly_is_gated_beside_the_baseline_at_one_budget(tmp_path: Path) -> None:
    done = gate(tmp_path, "--assembly", "--artifacts", "night")
    assert done.returncode == 0, done.stderr
    baseline = json.loads((tmp_path / "night" / "evaluation.json").read_text())
    assembly = json.loads((tmp_path / "night" / "assembly.json").read_text())
    assert baseline["inputs"]["mode"] == "baseline" and assembly["inputs"]["mode"] == "assembly"
    assert baseline["inputs"]["budget"] == assembly["inputs"]["budget"]
    lines = (tmp_path / "night" / "baseline-vs-assembly.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    assert header["kind"] == "header" and header["counts"]["cases_head"] == 5
    # The origin case loses rank 1 to the graph fact it cites (MRR 1 → 1/2).
    moved = {json.loads(line)["case_id"]: json.loads(line)["kind"] for line in lines[1:]}
    assert moved["origin"] == "regressed"
