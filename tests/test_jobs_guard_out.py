"""jobs/extract.py refuses a relative --out inside a Ray job: it would resolve in the job's
working dir, the copy of the repository Ray unpacks into its temporary folder and deletes.

The fast tests set the variable Ray's job supervisor gives every entrypoint; the slow one
submits a real job to a real Ray head, so a Ray that stopped setting it would show here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import CONTEXT, REPO
from tests.test_jobs import (  # noqa: F401 — ray_head is a fixture
    RAY,
    RayHead,
    client_env,
    job_log,
    job_status,
    ray_head,
)

ENTRYPOINT = REPO / "jobs" / "extract.py"
IN_A_JOB = {"RAY_JOB_CONFIG_JSON_ENV_VAR": '{"runtime_env": {}, "metadata": {}}'}
REFUSAL = "taguru: extract: --out {out}: a relative path inside a Ray job lands in the job's"


def entrypoint_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jobs_extract", ENTRYPOINT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_entrypoint(
    tmp_path: Path, extra_env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAGURU_", "RAY_"))}
    env.update(TAGURU_EXTRACT_URL="http://127.0.0.1:9/v1", TAGURU_EXTRACT_MODEL="m", **extra_env)
    env.pop("PYTHONPATH", None)
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "a.md").write_text("Ray runs on Kubernetes.\n")
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), "extract", "--context", CONTEXT, *args, "docs"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_relative_out_inside_a_ray_job_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path,
) -> None:
    result = run_entrypoint(tmp_path, IN_A_JOB, "--out", "sources")
    assert result.returncode == 2, result.stderr
    header, refusal, last = result.stderr.splitlines()
    assert header.startswith("taguru-ray 0.1.0 from ")
    assert refusal.startswith(REFUSAL.format(out="sources"))
    assert "s3://" in refusal and "absolute path" in refusal  # the fix, named
    assert last == "taguru-ray exited 2"
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


def test_the_same_relative_out_outside_a_ray_job_is_the_current_folder(tmp_path: Path) -> None:
    result = run_entrypoint(tmp_path, {}, "--out", "sources", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "a relative path inside a Ray job" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["extract", "--out", "out/"], "out/"),
        (["extract", "--out=./out"], "./out"),
        (["sessions", "extract", "--out", "o"], "o"),
        (["extract", "--out", "s3://my-bucket/taguru/sources/"], None),
        (["extract", "--out", "/mnt/shared/taguru"], None),
        (["extract", "--out=file:///mnt/shared/taguru"], None),
        (["extract", "--context", "--out"], None),  # a flag's value, not --out's
    ],
)
def test_which_outs_are_refused_in_a_job(argv: list[str], refused: str | None) -> None:
    line = entrypoint_module().relative_out_refusal(argv, IN_A_JOB)
    if refused is None:
        assert line is None
    else:
        assert line is not None and line.startswith(f"--out {refused}: ")


def test_nothing_is_refused_outside_a_job() -> None:
    assert entrypoint_module().relative_out_refusal(["extract", "--out", "out/"], {}) is None


@pytest.mark.slow
def test_a_real_ray_job_with_a_relative_out_fails_with_the_line(
    ray_head: RayHead,  # noqa: F811 — the fixture imported above
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Ray runs on Kubernetes.\n")
    result = subprocess.run(
        [
            RAY,
            "job",
            "submit",
            "--address",
            ray_head.dashboard_url,
            "--submission-id",
            "relative-out",
            "--runtime-env",
            "jobs/runtime_env.yaml",
            "--working-dir",
            str(REPO),
            "--",
            "python",
            "jobs/extract.py",
            "extract",
            "--context",
            CONTEXT,
            "--out",
            "sources",
            str(docs),
        ],
        env=client_env(ray_head),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the job FAILED
    assert job_status(ray_head, "relative-out") == ("FAILED", 2)
    log = job_log(ray_head, "relative-out")
    assert REFUSAL.format(out="sources") in log, log
    assert log.rstrip().endswith("taguru-ray exited 2"), log
