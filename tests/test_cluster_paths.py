"""Relative paths made absolute before a run joins a cluster (--address)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from taguru_ray.engine.cluster_paths import for_the_cluster, remote_head
from taguru_ray.settings import Settings
from tests.support import CONTEXT, Cli

pytestmark = pytest.mark.filterwarnings("ignore")


def settings(**more: object) -> Settings:
    given: dict[str, object] = {"paths": ("docs/a.md",), "out": "out", "context": CONTEXT}
    return Settings.of(**{**given, "model": "m", **more})


def test_without_an_address_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    given = settings()
    assert for_the_cluster(given, None) == (given, [])


def test_with_an_address_local_relative_paths_become_absolute_and_inputs_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    given = settings(address="127.0.0.1:6379", diagnostics_out="diag.jsonl")
    settled, lines = for_the_cluster(given, None)
    assert settled.source.out == str(tmp_path / "out")
    assert settled.records.diagnostics_out == str(tmp_path / "diag.jsonl")
    assert settled.source.paths == ("docs/a.md",)  # each is its segment's source id
    assert lines == []


def test_urls_and_absolute_paths_are_left_as_written(tmp_path: Path) -> None:
    given = settings(address="h:6379", out="s3://bucket/out", diagnostics_out=str(tmp_path))
    assert for_the_cluster(given, None) == (given, [])


def test_a_local_out_with_a_head_elsewhere_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _, lines = for_the_cluster(settings(address="10.0.0.9:6379"), "10.0.0.9")
    assert lines == [
        f"--out {tmp_path / 'out'} is a folder on this machine, and the Ray head at 10.0.0.9 "
        "is not: its workers write there on their own disks — give a folder every node "
        "shares, or an s3:// URL"
    ]
    _, lines = for_the_cluster(settings(address="10.0.0.9:6379", out="s3://b/o"), "10.0.0.9")
    assert lines == []


def test_a_head_on_this_machine_is_not_remote() -> None:
    assert remote_head(None) is None
    assert remote_head("127.0.0.1:6379") is None
    assert remote_head("ray://localhost:10001") is None
    assert remote_head("[::1]:6379") in (None, "::1")  # no IPv6 here: not bindable
    assert remote_head("name.invalid:6379") == "name.invalid"


@pytest.mark.slow
def test_cli_relative_out_with_address_lands_beside_the_caller(cli: Cli, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("Ray schedules tasks on a cluster.\n")
    here = tmp_path / "caller"
    here.mkdir()
    result = subprocess.run(
        cli.command("--context", CONTEXT, "--out", "out", str(note)),
        env=cli.env(),
        cwd=here,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert [p.suffix for p in (here / "out").iterdir() if p.is_file()].count(".jsonl") == 1
    assert f"→ {here / 'out'}/" in result.stdout
