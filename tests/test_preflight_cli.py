"""Preflight and fail-fast end to end (ADR 0037): the real CLI against a simulator that
wants a key and serves one model, a URL without its /v1, a port nobody listens on.

A start the preflight refuses asks each endpoint one question, prints one line naming
the setting to fix, exits 1 and leaves --out as it found it; a key revoked mid-run
stops the run after a few refusals instead of failing every segment.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, Cli

pytestmark = pytest.mark.slow

KEY = "sk-right-key-0123456789"
PREFIX = "taguru: extract: "


@pytest.fixture(scope="module")
def guarded_process() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--require-key", KEY, "--served-model", "taguru-sim") as process:
        yield process


@pytest.fixture
def guarded(guarded_process: SimulatorProcess, ray_address: str) -> Cli:
    guarded_process.set_script([])
    guarded_process.reset()
    return Cli(ray_address, guarded_process)


def corpus(folder: Path, segments: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(segments):
        (folder / f"{s:03d}.md").write_text(
            f"Segment{s}: the Gateway{s} forwards calls to the Backend{s} service.\n"
        )
    return folder


def args(out: Path, docs: Path, *extra: str) -> list[str]:
    return ["--context", CONTEXT, "--out", str(out), *extra, str(docs)]


def asked(simulator: SimulatorProcess) -> tuple[int, int]:
    """(completions, model lists) the simulator was asked since its last reset."""
    stats = simulator.stats()
    return stats["requests"], stats["models"]["requests"]


def the_one_line(stderr: str) -> str:
    [line] = stderr.splitlines()
    assert line.startswith(PREFIX)
    return line.removeprefix(PREFIX)


def test_a_wrong_key_is_one_line_naming_the_key_one_request_and_nothing_written(
    guarded: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = guarded.extract(
        *args(out, corpus(tmp_path / "docs")), env=guarded.env(TAGURU_EXTRACT_API_KEY="sk-wrong")
    )
    assert result.returncode == 1, result.stderr
    line = the_one_line(result.stderr)
    assert line == (
        f"{guarded.simulator.root_url}: the API key was refused (HTTP 401 on GET /models) — "
        "set TAGURU_EXTRACT_API_KEY to a key this endpoint accepts"
    )
    assert "sk-wrong" not in result.stderr + result.stdout
    assert result.stdout == ""
    assert asked(guarded.simulator) == (0, 1)
    assert not out.exists()


def test_no_key_at_all_asks_for_one(guarded: Cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = guarded.extract(*args(out, corpus(tmp_path / "docs")))
    assert result.returncode == 1, result.stderr
    assert the_one_line(result.stderr).endswith(
        "(HTTP 401 on GET /models) and none is set — export TAGURU_EXTRACT_API_KEY"
    )
    assert asked(guarded.simulator) == (0, 1)
    assert not out.exists()


def test_a_model_the_server_does_not_serve_names_the_model_and_what_it_serves(
    guarded: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    env = guarded.env(TAGURU_EXTRACT_API_KEY=KEY, TAGURU_EXTRACT_MODEL="qwen3:8b")
    result = guarded.extract(*args(out, corpus(tmp_path / "docs")), env=env)
    assert result.returncode == 1, result.stderr
    assert the_one_line(result.stderr) == (
        f"{guarded.simulator.root_url} does not serve the model 'qwen3:8b' — set "
        "TAGURU_EXTRACT_MODEL to one it lists: taguru-sim"
    )
    assert asked(guarded.simulator) == (0, 1)
    assert not out.exists()


def test_a_url_without_its_v1_is_a_404_naming_the_url(guarded: Cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = guarded.env(TAGURU_EXTRACT_API_KEY=KEY, TAGURU_EXTRACT_URL=guarded.simulator.root_url)
    result = guarded.extract(*args(out, corpus(tmp_path / "docs")), env=env)
    assert result.returncode == 1, result.stderr
    line = the_one_line(result.stderr)
    assert (
        "no OpenAI-compatible API at this URL (HTTP 404 on GET /models; its path has no /v1)"
        in (line)
    )
    assert "fix TAGURU_EXTRACT_URL" in line
    assert asked(guarded.simulator) == (0, 0)  # /models without /v1 is no route it counts
    assert not out.exists()


def test_a_port_nobody_listens_on_says_start_the_server(cli: Cli, tmp_path: Path) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    out, nowhere = tmp_path / "deep" / "out", f"http://127.0.0.1:{port}/v1"
    result = cli.extract(*args(out, corpus(tmp_path / "docs"), "--endpoint", nowhere))
    assert result.returncode == 1, result.stderr
    assert the_one_line(result.stderr) == (
        f"http://127.0.0.1:{port}: connection refused — start the server, or fix --endpoint"
    )
    assert not (tmp_path / "deep").exists()  # the parent it made goes too


def test_one_bad_endpoint_of_two_refuses_the_run_naming_it_one_request_each(
    guarded: Cli, cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    both = ("--endpoint", cli.simulator.chat_url, "--endpoint", guarded.simulator.chat_url)
    result = cli.extract(*args(out, corpus(tmp_path / "docs"), *both))
    assert result.returncode == 1, result.stderr
    assert the_one_line(result.stderr).startswith(
        f"{guarded.simulator.root_url}: the endpoint wants an API key (HTTP 401 on GET /models)"
    )
    assert asked(cli.simulator) == (0, 1) and asked(guarded.simulator) == (0, 1)
    assert not out.exists()


def test_a_malformed_url_is_a_usage_error_naming_its_setting(cli: Cli, tmp_path: Path) -> None:
    out, docs = tmp_path / "out", corpus(tmp_path / "docs")
    env = cli.env(TAGURU_EXTRACT_URL="localhost:8000/v1")
    result = cli.extract(*args(out, docs), env=env)
    assert result.returncode == 2, result.stderr
    assert the_one_line(result.stderr).startswith(
        "TAGURU_EXTRACT_URL: has no http:// or https:// in front"
    )
    flagged = cli.extract(*args(out, docs, "--endpoint", "http://h:port/v1"))
    assert flagged.returncode == 2, flagged.stderr
    assert the_one_line(flagged.stderr).startswith("--endpoint: its port is not a number")
    assert not out.exists()
    assert cli.simulator.stats()["models"]["requests"] == 0


def test_an_out_folder_that_existed_is_left_exactly_as_it_was(guarded: Cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    result = guarded.extract(*args(out, corpus(tmp_path / "docs")))
    assert result.returncode == 1, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_good_key_and_model_run_after_one_model_list_and_a_rerun_asks_nothing(
    guarded: Cli, tmp_path: Path
) -> None:
    out, docs = tmp_path / "out", corpus(tmp_path / "docs")
    env = guarded.env(TAGURU_EXTRACT_API_KEY=KEY)
    result = guarded.extract(*args(out, docs), env=env)
    assert result.returncode == 0, result.stderr
    assert asked(guarded.simulator) == (2, 1)
    guarded.simulator.reset()
    rerun = guarded.extract(*args(out, docs), env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "extract: 0 written, 2 unchanged, 0 failed of 2 segment(s)" in rerun.stdout
    assert asked(guarded.simulator) == (0, 0)


def test_a_key_revoked_mid_run_stops_it_with_one_line_and_a_rerun_resumes(
    guarded: Cli, tmp_path: Path
) -> None:
    out, docs = tmp_path / "out", corpus(tmp_path / "docs", 60)
    env = guarded.env(TAGURU_EXTRACT_API_KEY=KEY)
    run = args(out, docs, "--max-inflight", "2", "--segment-window", "4")
    guarded.simulator.set_script([{"fault": "401", "after": 4}])  # the key dies after four
    result = guarded.extract(*run, env=env)
    assert result.returncode == 1, result.stderr
    fix = "the API key was refused (HTTP 401 on 3 requests in a row, none succeeded since)"
    assert result.stderr.count(fix) == 1, result.stderr
    last = result.stderr.splitlines()[-1]  # said once, last: below each failed segment's line
    assert last.startswith(f"{PREFIX}{guarded.simulator.root_url}: {fix}")
    assert "set TAGURU_EXTRACT_API_KEY to a key this endpoint accepts" in last
    assert "stopped early, chunk checkpoints saved; rerun to resume" in result.stdout
    stats = guarded.simulator.stats()
    refused = stats["by_outcome"]["401"]
    assert 3 <= refused <= 8 and stats["requests"] < 20  # of 60 segments
    assert stats["models"]["requests"] == 1

    guarded.simulator.set_script([])  # a new key
    guarded.simulator.reset()
    rerun = guarded.extract(*run, env=env)
    assert rerun.returncode == 0, rerun.stderr
    written = 60 - stats["by_outcome"].get("ok", 0)
    assert f"extract: {written} written, {60 - written} unchanged, 0 failed" in rerun.stdout


def test_a_wrong_key_ends_before_any_ray_process_starts(
    guarded: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --address: the run would start a local Ray — but the preflight goes first
    (ADR 0054), so a refused start leaves no Ray session behind it: Ray's temp folder,
    where every local Ray writes its session (sockets, logs, the raylet's), stays empty."""
    import subprocess
    import sys
    import tempfile

    from ray._common.utils import get_default_ray_temp_dir

    from tests.support import REPO

    ray_tmp = Path(tempfile.mkdtemp(prefix="trp-", dir="/tmp"))  # short: Ray's socket paths
    try:
        monkeypatch.setenv("RAY_TMPDIR", str(ray_tmp))
        assert Path(get_default_ray_temp_dir()).is_relative_to(ray_tmp)  # where Ray would go
        env = guarded.env(TAGURU_EXTRACT_API_KEY="sk-wrong", RAY_TMPDIR=str(ray_tmp),
                          TMPDIR=str(ray_tmp))  # fmt: skip
        env.pop("RAY_ADDRESS", None)
        out = tmp_path / "out"
        command = [sys.executable, "-m", "taguru_ray", "extract"]
        result = subprocess.run(
            [*command, *args(out, corpus(tmp_path / "docs"))],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert result.returncode == 1, result.stderr
        assert "the API key was refused" in the_one_line(result.stderr)
        assert "Started a local Ray instance" not in result.stderr + result.stdout
        assert asked(guarded.simulator) == (0, 1)
        assert not out.exists()
        assert sorted(p.name for p in ray_tmp.iterdir()) == []  # no ray/session_* at all
    finally:
        import shutil

        shutil.rmtree(ray_tmp, ignore_errors=True)
