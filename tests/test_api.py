"""`taguru_ray.extract` from Python — inside a running event loop, from a thread, inside a
Ray task — gives the CLI's outcome on the same corpus, as a `RunResult`."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import ray

import taguru_ray
from taguru_ray.errors import UsageError
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, Cli

CORPUS = REPO / "examples" / "corpus"


def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("01-ray-overview.md", "03-sake-brewing.md"):
        shutil.copy(CORPUS / name, folder / name)
    return folder


def outcome(result: taguru_ray.RunResult) -> list[tuple[str, str]]:
    return [(Path(s.source).name, s.status) for s in result.segments]


def files(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


@pytest.fixture
def endpoint(simulator: SimulatorProcess, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"TAGURU_EXTRACT_URL": simulator.chat_url, "TAGURU_EXTRACT_MODEL": "taguru-sim"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def test_from_a_running_loop_a_thread_and_a_ray_task_as_the_cli_does(
    cli: Cli, endpoint: dict[str, str], tmp_path: Path
) -> None:
    docs = corpus(tmp_path)
    by_cli = tmp_path / "cli"
    done = cli.extract("--context", CONTEXT, "--out", str(by_cli), str(docs))
    assert done.returncode == 0, done.stderr
    expected = files(by_cli)

    async def in_a_loop() -> taguru_ray.RunResult:
        return taguru_ray.extract(str(docs), out=str(tmp_path / "loop"), context=CONTEXT,
                                  address=cli.address)  # fmt: skip

    from_loop = asyncio.run(in_a_loop())

    found: dict[str, Any] = {}

    def in_a_thread() -> None:
        found["result"] = taguru_ray.extract([str(docs)], out=str(tmp_path / "thread"),
                                             context=CONTEXT, address=cli.address)  # fmt: skip

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join(300)
    from_thread = found["result"]

    @ray.remote(runtime_env={"env_vars": endpoint})
    def in_a_task(docs: str, out: str) -> taguru_ray.RunResult:
        return taguru_ray.extract(docs, out=out, context=CONTEXT)

    from_task = ray.get(in_a_task.remote(str(docs), str(tmp_path / "task")), timeout=300)
    assert ray.is_initialized()  # the task joined the test's Ray and left it running

    for name, result in (("loop", from_loop), ("thread", from_thread), ("task", from_task)):
        assert result.exit_code == 0, result.lines
        assert outcome(result) == [("01-ray-overview.md", "written"),
                                   ("03-sake-brewing.md", "written")]  # fmt: skip
        assert result.written == 2 and result.failed == 0 and not result.stopped
        assert result.completions > 0 and result.output_tokens > 0
        assert files(tmp_path / name) == expected
        assert all(Path(s.output).exists() for s in result.segments)
        assert any(line.startswith("extract: 2 written") for line in result.lines)

        assert result.cost_usd is None and "no price for model 'taguru-sim'" in result.cost_basis

    prices = tmp_path / "prices.json"
    prices.write_text('{"taguru-sim": {"input": 2.0, "output": 8.0}}')
    again = taguru_ray.extract(str(docs), out=str(tmp_path / "loop"), context=CONTEXT,
                               address=cli.address, prices=str(prices))  # fmt: skip
    assert again.unchanged == 2 and again.completions == 0
    assert again.cost_usd == 0.0  # priced, and nothing asked
    assert again.cost_basis.startswith("$2 in / $8 out per 1M tokens")
    # The caller's Ray lives on; the runs' actors do not (their processes end).
    from tests.test_scale_cli import no_segment_workers_left

    no_segment_workers_left()


def test_an_unknown_setting_is_named_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="modle"):
        taguru_ray.extract("docs", out=str(tmp_path / "o"), context=CONTEXT, modle="x")
    assert not (tmp_path / "o").exists()
    assert set(taguru_ray.__all__) >= {"extract", "RunResult", "SegmentResult"}


def test_a_rerun_hashed_by_the_helper_process_writes_what_a_rerun_without_it_writes(
    cli: Cli, endpoint: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from taguru_ray.engine import digest_helper

    docs = corpus(tmp_path)
    by_helper, by_driver = tmp_path / "helper", tmp_path / "driver"
    for out in (by_helper, by_driver):
        first = taguru_ray.extract(str(docs), out=str(out), context=CONTEXT, address=cli.address)
        assert first.written == 2, first.lines
    changed = docs / "03-sake-brewing.md"
    changed.write_text(changed.read_text() + "\nKoji mold turns the rice starch into sugar.\n")

    started: list[digest_helper.DigestHelper | None] = []
    start = digest_helper.DigestHelper.start
    monkeypatch.setattr(
        digest_helper.DigestHelper,
        "start",
        classmethod(lambda cls: started.append(start()) or started[-1]),
    )
    answers: list[str | None] = []
    digests = digest_helper.DigestHelper.digests
    monkeypatch.setattr(
        digest_helper.DigestHelper,
        "digests",
        lambda self, paths: answers.extend(digests(self, paths)) or answers[-len(paths) :],
    )
    monkeypatch.setattr(digest_helper, "HELPER_FROM", 1)  # two segments are "many" here
    with_helper = taguru_ray.extract(str(docs), out=str(by_helper), context=CONTEXT,
                                     address=cli.address)  # fmt: skip
    helper = started[0] if len(started) == 1 else None
    assert helper is not None and helper._child is None  # started, and ended with the run
    assert len(answers) == 2 and all(answers)  # the child hashed both segments
    monkeypatch.setattr(digest_helper, "HELPER_FROM", 10**9)
    without = taguru_ray.extract(str(docs), out=str(by_driver), context=CONTEXT,
                                 address=cli.address)  # fmt: skip
    assert len(started) == 1
    for result in (with_helper, without):
        assert outcome(result) == [("01-ray-overview.md", "unchanged"),
                                   ("03-sake-brewing.md", "written")]  # fmt: skip
    assert files(by_helper) == files(by_driver)
