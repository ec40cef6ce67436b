"""Issue 49 items 1–3 through the real CLI, as they were found: `extract --batch-api`
against the simulator's batch routes made to misbehave (its scripted mischief), then a
rerun; the simulator counts every request by custom_id, so "paid twice" is a count.

- a batch whose reads fail (4 × 500 polling, a flip after `completed`) and whose output
  holds a line that is not JSON keeps its record; the rerun pays nothing twice;
- a create answered 500 after the provider made the batch is found, not made again;
- Anthropic: a driver SIGKILLed with its create in flight left a record, so the rerun
  finds the batch — and a live run over that --out refuses rather than pay again.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from taguru_ray.contract.records.batches import BATCHES
from tests.corpora import ALPHA, BETA
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

BATCH = ("--batch-poll-secs", "0.05")


def corpus(tmp_path: Path, *names: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in names:
        (docs / name).write_text({"alpha.md": ALPHA, "beta.md": BETA}[name])
    return docs


def arguments(docs: Path, out: Path, api: str | None) -> list[str]:
    batch = ("--batch-api", api, *BATCH) if api else ()
    return ["--context", CONTEXT, "--out", str(out), *batch, str(docs)]


def written(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


def records(out: Path) -> list[dict[str, object]]:
    found = []
    for path in sorted((out / BATCHES).glob("*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:  # being written
            continue
    return found


def test_a_batch_whose_reads_fail_is_kept_and_the_rerun_pays_nothing_twice(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path, "alpha.md", "beta.md")
    out = tmp_path / "out"
    cli.simulator.set_batch_behaviour(forget=True, delay_seconds=0, expire=0, fail_rate=0)
    cli.simulator.set_batch_mischief(
        [
            {"on": "poll", "do": "500", "times": 4},
            {"on": "poll", "do": "flip", "times": 2},
            {"on": "results", "do": "not_json"},
        ]
    )
    first = cli.extract(*arguments(docs, out, "openai"))
    assert records(out), "the batch's record was dropped with an answer unread"
    assert first.returncode == 1, first.stderr  # the segment whose line was bad failed
    assert "still the provider's" in first.stderr
    assert "1 bad line(s)" in first.stderr and "not handed over again" in first.stderr
    assert len(written(out)) == 1
    played = cli.simulator.batch_stats()["played"]
    assert played["poll/500"] == 4 and played["results/not_json"] == 1

    rerun = cli.extract(*arguments(docs, out, "openai"))
    assert rerun.returncode == 0, rerun.stderr
    counted = cli.simulator.batch_stats()
    assert counted["twice"] == [] and counted["batches"] == 1
    assert len(written(out)) == 2 and not (out / BATCHES).exists()


def test_a_create_answered_500_after_creating_is_found_and_not_paid_twice(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path, "beta.md")
    cli.simulator.set_batch_behaviour(forget=True, delay_seconds=0, expire=0, fail_rate=0)
    cli.simulator.set_batch_mischief([{"on": "create", "do": "500_after_create"}])
    result = cli.extract(*arguments(docs, tmp_path / "out", "openai"))
    assert result.returncode == 0, result.stderr
    counted = cli.simulator.batch_stats()
    assert counted["played"] == {"create/500_after_create": 1}
    assert counted["twice"] == [] and counted["batches"] == result.stderr.count("batch round ")
    adopted = [line for line in result.stderr.splitlines() if "adopted, not created again" in line]
    assert len(adopted) == 1 and "HTTP 500" in adopted[0]


def test_anthropic_killed_in_its_create_is_found_and_a_live_run_refuses(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path, "beta.md")
    out = tmp_path / "out"
    cli.simulator.set_batch_behaviour(forget=True, delay_seconds=0, expire=0, fail_rate=0)
    cli.simulator.set_batch_mischief([{"on": "create", "do": "stall_after_create"}])
    driver = subprocess.Popen(
        cli.command(*arguments(docs, out, "anthropic")),
        env=cli.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not a timing assert
        while cli.simulator.batch_stats()["batches"] < 1:  # made; its answer held
            assert driver.poll() is None, "the driver ended before its create"
            assert time.monotonic() < deadline, "no batch was created"
            time.sleep(0.05)
    finally:
        driver.kill()  # SIGKILL with the create in flight
        driver.wait()
    [record] = records(out)
    assert record["batch_id"] is None and record["created_after"]
    submitted = cli.simulator.batch_stats()["requests"]
    while cli.simulator.stats()["requests"] < submitted:  # the batch's lines, answered
        assert time.monotonic() < deadline, "the batch was not answered"
        time.sleep(0.05)
    answered = cli.simulator.stats()["requests"]

    live = cli.extract(*arguments(docs, out, None))
    assert live.returncode == 1, live.stderr
    assert "possibly paid for" in live.stderr and "--batch-api anthropic" in live.stderr
    assert cli.simulator.stats()["requests"] == answered  # nothing asked live

    cli.simulator.set_batch_mischief([])
    rerun = cli.extract(*arguments(docs, out, "anthropic"))
    assert rerun.returncode == 0, rerun.stderr
    assert "found at the provider" in rerun.stderr
    counted = cli.simulator.batch_stats()
    assert counted["twice"] == [] and len(written(out)) == 1
