"""`extract --batch-api` end to end: the real CLI against the simulator's batch endpoints.

A corpus that needs a corrective turn (a malformed first answer) and a split (an
answer cut at --max-output-tokens, still cut after escalation) extracts in rounds
and writes the bytes a live run with the same answers writes; a driver killed
with a batch in flight is rerun, collects that batch, and hands nothing over twice
(the simulator counts every request by custom_id). No wall-clock asserts: the
kill waits for the batch's record in --out, not for a time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.contract.records.batches import BATCHES
from tests.corpora import ALPHA, BETA
from tests.support import CONTEXT, REPO, Cli
from tests.test_ladder_cli import TEXT, answer_tokens

pytestmark = pytest.mark.slow

MALFORMED_ONCE = [{"match": "Beta Gateway", "fault": "malformed", "times": 1}]


def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text(ALPHA)
    (docs / "beta.md").write_text(BETA)
    (docs / "pipeline.md").write_text(TEXT)
    return docs


def arguments(docs: Path, out: Path, *extra: str) -> list[str]:
    # A third of the pipeline segment's answer: cut, escalated, still cut, split.
    budget = answer_tokens(str(docs / "pipeline.md")) // 3
    return [
        "--context", CONTEXT, "--out", str(out), "--max-output-tokens", str(budget),
        *extra, str(docs),
    ]  # fmt: skip


BATCH = ("--batch-api", "openai", "--batch-poll-secs", "0.05")


def source_files(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.jsonl"))}


def records(out: Path, kind: str) -> list[dict[str, Any]]:
    found = []
    for log in sorted((out / ".extract-trace").glob("*.attempts.jsonl")):
        found += [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == kind]
    return found


def live_run(cli: Cli, docs: Path, out: Path) -> dict[str, bytes]:
    cli.simulator.set_script(MALFORMED_ONCE)
    result = cli.extract(*arguments(docs, out))
    assert result.returncode == 0, result.stderr
    return source_files(out)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_rounds_write_the_bytes_a_live_run_writes(cli: Cli, tmp_path: Path, api: str) -> None:
    docs = corpus(tmp_path)
    live = live_run(cli, docs, tmp_path / "live")
    cli.simulator.set_script(MALFORMED_ONCE)  # the same answers: the rule fires once again
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=0, expire=0, fail_rate=0)
    result = cli.extract(*arguments(docs, tmp_path / "batch", "--batch-api", api, *BATCH[2:]))
    assert result.returncode == 0, result.stderr
    assert source_files(tmp_path / "batch") == live and len(live) == 3

    attempts = records(tmp_path / "batch", "attempt")
    assert all(a["batch_id"] and a["custom_id"] for a in attempts)
    assert any(a.get("corrects") for a in attempts)  # a corrective turn, in a later round
    assert any(m["move"] == "split" for m in records(tmp_path / "batch", "move"))
    assert "batch round 3:" in result.stderr  # answers led to further rounds
    counted = cli.simulator.batch_stats()
    assert counted["twice"] == [] and counted["requests"] == len(attempts)
    assert not (tmp_path / "batch" / BATCHES).exists()  # every answer used: records dropped


def test_dry_run_says_the_rounds_and_the_batch_price(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    result = cli.extract(
        *arguments(docs, tmp_path / "out", *BATCH, "--dry-run", "--prices", str(prices(tmp_path)))
    )
    assert result.returncode == 0, result.stderr
    assert "batch API openai: at least" in result.stderr
    assert "50% of the list price" in result.stderr


def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"taguru-sim": {"input": 2.0, "output": 8.0}}))
    return path


def recorded_batch_ids(out: Path) -> list[str]:
    found = []
    for path in (out / BATCHES).glob("*.json"):
        try:
            batch_id = json.loads(path.read_text())["batch_id"]
        except (ValueError, OSError):  # being written, or gone
            continue
        if batch_id:
            found.append(batch_id)
    return found


def test_a_driver_killed_in_a_round_is_rerun_and_hands_nothing_over_twice(
    cli: Cli, tmp_path: Path
) -> None:
    docs = corpus(tmp_path)
    live = live_run(cli, docs, tmp_path / "live")
    out = tmp_path / "batch"
    cli.simulator.set_script(MALFORMED_ONCE)
    # Batches answer after 2 s: the driver is killed while its first one is in flight.
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=2, expire=0, fail_rate=0)
    driver = subprocess.Popen(
        cli.command(*arguments(docs, out, *BATCH)),
        env=cli.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not a timing assert
        while not recorded_batch_ids(out):
            assert driver.poll() is None, "the driver ended before recording a batch"
            assert time.monotonic() < deadline, "no batch was recorded"
            time.sleep(0.05)
    finally:
        driver.kill()
        driver.wait()
    in_flight = recorded_batch_ids(out)
    handed = cli.simulator.batch_stats()["requests"]
    assert handed >= 1

    cli.simulator.set_batch_behaviour(delay_seconds=0)  # the counters stay
    rerun = cli.extract(*arguments(docs, out, *BATCH))
    assert rerun.returncode == 0, rerun.stderr
    assert "recorded in --out by an earlier run" in rerun.stderr
    counted = cli.simulator.batch_stats()
    assert counted["twice"] == []  # nothing handed over twice, across the kill
    attempts = records(out, "attempt")
    assert {a["batch_id"] for a in attempts} >= set(in_flight)  # the killed run's collected
    assert source_files(out) == live


def test_replay_and_resume_from_work_on_a_batch_made_run(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    out = tmp_path / "batch"
    cli.simulator.set_script(MALFORMED_ONCE)
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=0, expire=0, fail_rate=0)
    assert cli.extract(*arguments(docs, out, *BATCH)).returncode == 0
    made = source_files(out)
    handed = cli.simulator.batch_stats()["requests"]

    resumed = cli.extract(*arguments(docs, out, *BATCH, "--resume-from", "validate"))
    assert resumed.returncode == 0, resumed.stderr
    assert cli.simulator.batch_stats()["requests"] == handed  # every answer from the log
    assert source_files(out) == made

    cli.simulator.reset()
    replayed = tmp_path / "replayed"
    strict = ("--replay", "strict", "--replay-from", str(out / ".extract-trace"))
    result = cli.extract(*arguments(docs, replayed, *strict))  # live transport, from the log
    assert result.returncode == 0, result.stderr
    assert cli.simulator.stats()["requests"] == 0
    assert source_files(replayed) == made


def test_ctrl_c_in_a_round_stops_at_once_and_the_rerun_collects(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    out = tmp_path / "batch"
    cli.simulator.set_script(MALFORMED_ONCE)
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=3, expire=0, fail_rate=0)
    driver = subprocess.Popen(
        cli.command(*arguments(docs, out, *BATCH)),
        env=cli.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not a timing assert
        while not recorded_batch_ids(out):
            assert driver.poll() is None, "the driver ended before recording a batch"
            assert time.monotonic() < deadline, "no batch was recorded"
            time.sleep(0.05)
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 130, stderr  # no wait for a batch that may take a day
    assert recorded_batch_ids(out)  # kept for the rerun
    cli.simulator.set_batch_behaviour(delay_seconds=0)
    rerun = cli.extract(*arguments(docs, out, *BATCH))
    assert rerun.returncode == 0, rerun.stderr
    assert cli.simulator.batch_stats()["twice"] == []


def test_an_expired_batch_is_handed_over_again_once_with_a_line(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    live = live_run(cli, docs, tmp_path / "live")
    cli.simulator.set_script(MALFORMED_ONCE)
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=0, expire=1, fail_rate=0)
    result = cli.extract(*arguments(docs, tmp_path / "batch", *BATCH))
    cli.simulator.set_batch_behaviour(expire=0)
    assert result.returncode == 0, result.stderr
    assert "ended (expired) with" in result.stderr and "handed over again, once" in result.stderr
    counted = cli.simulator.batch_stats()
    assert counted["twice"] and all(n <= 2 for n in counted["submitted"].values())
    assert source_files(tmp_path / "batch") == live


def test_a_budget_counts_at_the_batch_price_and_a_rerun_finishes(cli: Cli, tmp_path: Path) -> None:
    docs = corpus(tmp_path)
    out = tmp_path / "batch"
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"taguru-sim": {"input": 1000, "output": 1000}}))
    priced = ("--prices", str(table), "--segment-window", "1")
    cli.simulator.set_script([])
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=0, expire=0, fail_rate=0)
    stopped = cli.extract(*arguments(docs, out, *BATCH, *priced, "--budget-usd", "0.3"))
    assert stopped.returncode == 130, stopped.stderr
    assert "--budget-usd 0.3" in stopped.stderr
    assert "50% of the list price" in stopped.stderr  # the cost line's basis
    finished = cli.extract(*arguments(docs, out, *BATCH, *priced, "--budget-usd", "100"))
    assert finished.returncode == 0, finished.stderr
    assert len(source_files(out)) == 3
    assert cli.simulator.batch_stats()["twice"] == []  # the stopped run's answers collected
