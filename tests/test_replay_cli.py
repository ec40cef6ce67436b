"""Replaying a recorded run (taguru ADR 0031) and --resume-from, end to end against the
simulator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.names import attempts_name, output_name
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "examples" / "corpus", folder)
    return folder


def extract(
    cli: Cli,
    out: Path,
    docs: Path | str,
    *extra: str,
    env: dict[str, str] | None = None,
) -> Any:
    return cli.extract(
        "--context",
        CONTEXT,
        "--out",
        str(out),
        "--chunk-bytes",
        "1024",
        "--segment-window",
        "1",
        *extra,
        str(docs),
        env=env or cli.env(),
    )


def offline(cli: Cli) -> dict[str, str]:
    env = cli.env()
    del env["TAGURU_EXTRACT_URL"]  # strict replay needs no endpoint, only the model name
    return env


def sources(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.glob("*.jsonl")}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_strict_replay_elsewhere_writes_the_same_bytes_with_no_request(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path)
    recorded = tmp_path / "recorded"
    assert extract(cli, recorded, docs).returncode == 0
    cli.simulator.reset()
    replayed = tmp_path / "replayed"
    result = extract(
        cli,
        replayed,
        docs,
        "--replay",
        "strict",
        "--replay-from",
        str(recorded / ".extract-trace"),
        env=offline(cli),
    )
    assert result.returncode == 0, result.stderr
    assert cli.simulator.stats()["requests"] == 0
    assert sources(replayed) == sources(recorded)
    lines = [x for x in result.stderr.splitlines() if ": replayed " in x]
    assert len(lines) == 3 and all("(0 live)" in x for x in lines)
    long = str(docs / "02-object-storage-operations.md")
    log = records(replayed / ".extract-trace" / attempts_name(long))
    kinds = [r["type"] for r in log]
    assert kinds[:3] == ["segment", "settings", "replay"] and kinds[-1] == "replay_summary"
    assert all(r.get("replayed_from") for r in log if r["type"] == "attempt")
    summary = log[-1]
    assert summary["live"] == 0 and summary["replayed"] == kinds.count("attempt")


def test_replay_auto_after_a_change_pays_only_for_the_changed_conversations(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path)
    out = tmp_path / "out"
    cli.simulator.set_script([{"match": "Ray is an open source", "fault": "malformed", "times": 1}])
    assert extract(cli, out, docs).returncode == 0  # one segment needed a corrective turn
    cli.simulator.set_script([])
    cli.simulator.reset()
    # A shorter replay of the bad answer changes only the corrective turn's conversation.
    env = cli.env(TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES="8")
    result = extract(cli, out, docs, "--replay", "auto", env=env)
    assert result.returncode == 0, result.stderr
    ray_doc = str(docs / "01-ray-overview.md")
    # The recorded malformed answer is replayed; only the changed corrective ask goes live.
    assert f"{ray_doc}: replayed 1/2 completions (1 live)" in result.stderr
    assert cli.simulator.stats()["requests"] == 1
    log = records(out / ".extract-trace" / attempts_name(ray_doc))
    assert [r["type"] for r in log].count("segment") == 2  # appended, never truncated


def test_replay_pins_the_recorded_system_prompt_of_a_segment(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    recorded = tmp_path / "recorded"
    assert extract(cli, recorded, docs).returncode == 0  # the third segment saw two earlier ones
    sake = docs / "03-sake-brewing.md"
    cli.simulator.reset()
    result = extract(
        cli,
        tmp_path / "alone",
        sake,
        "--replay",
        "strict",
        "--replay-from",
        str(recorded / ".extract-trace"),
        env=offline(cli),
    )
    assert result.returncode == 0, result.stderr
    assert (
        "the recorded system prompt differs from this run's — replaying with the "
        "recorded one" in result.stderr
    )
    assert cli.simulator.stats()["requests"] == 0
    trace = records(tmp_path / "alone" / ".extract-trace" / output_name(str(sake)))
    steering = next(r for r in trace if r["type"] == "steering")
    assert steering["pinned_from"]


def test_replay_pins_each_pieces_system_prompt_when_the_log_names_several(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path)
    recorded = tmp_path / "recorded"
    flags = ("--carryover", "8", "--chunk-context", "overview")
    assert extract(cli, recorded, docs, *flags).returncode == 0
    # Several chunks, and the recording offered it segment 1's labels: replayed alone, its
    # prompts as this run would compute them differ from every recorded one.
    long = docs / "02-object-storage-operations.md"
    log = records(recorded / ".extract-trace" / attempts_name(str(long)))
    assert sum(r["type"] == "system" for r in log) > 2  # overview + a prompt per chunk
    cli.simulator.reset()
    alone = tmp_path / "alone"
    result = extract(
        cli,
        alone,
        long,
        *flags,
        "--replay",
        "strict",
        "--replay-from",
        str(recorded / ".extract-trace"),
        env=offline(cli),
    )
    assert result.returncode == 0, result.stderr
    assert cli.simulator.stats()["requests"] == 0
    name = output_name(str(long))
    assert (alone / name).read_bytes() == (recorded / name).read_bytes()


def test_resume_from_folds_onto_replay_and_bypasses_the_manifest(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    out = tmp_path / "out"
    assert extract(cli, out, docs).returncode == 0
    cli.simulator.reset()
    result = extract(cli, out, docs, "--resume-from", "validate")
    assert result.returncode == 0, result.stderr
    assert "extract: 3 written" in result.stdout  # no manifest skip
    assert cli.simulator.stats()["requests"] == 0  # every call satisfied from the log
    cli.simulator.reset()
    fresh = extract(cli, out, docs, "--resume-from", "plan")  # before any recorded step
    assert fresh.returncode == 0 and cli.simulator.stats()["requests"] > 0


def test_replay_usage_errors_name_the_problem(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    both = extract(cli, tmp_path / "o", docs, "--replay", "auto", "--resume-from", "call")
    assert both.returncode == 2 and "--resume-from and --replay cannot both be given" in both.stderr
    unknown = extract(cli, tmp_path / "o", docs, "--resume-from", "nowhere")
    assert unknown.returncode == 2
    assert (
        "takes one of: read, structure, plan, overview, annotate, steer, prompt" in unknown.stderr
    )
    auto = extract(
        cli,
        tmp_path / "o",
        docs,
        "--replay",
        "strict",
        "--structured-output",
        "auto",
        env=offline(cli),
    )
    assert auto.returncode == 2 and "the auto probe needs a live call" in auto.stderr
    assert not (tmp_path / "o").exists()


def test_steps_prints_the_step_table(cli: Cli) -> None:
    result = cli.extract("--steps")
    assert result.returncode == 0
    rows = result.stdout.splitlines()
    assert rows[0].split()[:3] == ["step", "scope", "model"]
    assert [row.split()[0] for row in rows[1:]] == [
        "read",
        "structure",
        "plan",
        "overview",
        "annotate",
        "steer",
        "prompt",
        "call",
        "parse",
        "validate",
        "reconcile",
        "merge",
        "render",
        "verify",
    ]
