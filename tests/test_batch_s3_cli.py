"""`extract --batch-api` with --out on S3 (moto's server on loopback): each batch's record
is one object under `.extract-batches/`, written before the batch is polled; a driver
killed with a batch in flight is rerun and collects it, handing nothing over twice."""

from __future__ import annotations

import json
import subprocess
import time

import fsspec
import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.records.batches import BATCHES
from taguru_ray.store.outdir import OutDir
from tests import s3 as server
from tests.corpora import ALPHA, BETA
from tests.s3 import S3
from tests.support import CONTEXT, REPO, Cli

pytestmark = pytest.mark.slow

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name

BATCH = ("--batch-api", "openai", "--batch-poll-secs", "0.05")


def recorded_ids(out: str) -> list[str]:
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    found = []
    for path in fs.glob(f"{out}/{BATCHES}/*.json"):
        try:
            batch_id = json.loads(fs.cat_file(path))["batch_id"]
        except (ValueError, OSError):
            continue
        if batch_id:
            found.append(batch_id)
    return found


def test_a_killed_batch_run_on_s3_is_rerun_and_hands_nothing_over_twice(
    cli: Cli, s3_env: S3
) -> None:
    fs = fsspec.filesystem("s3")
    docs = s3_env.prefix("docs")
    fs.pipe_file(f"{docs}/alpha.md", ALPHA.encode())
    fs.pipe_file(f"{docs}/beta.md", BETA.encode())
    out = s3_env.prefix("out")
    # A short lease: the killed driver's lease expires soon after the kill.
    env = cli.env(**s3_env.env, TAGURU_RAY_LEASE_SECONDS="2")
    args = ("--context", CONTEXT, "--out", out, "--chunk-bytes", "512", *BATCH, docs)
    cli.simulator.set_batch_behaviour(reset=True, delay_seconds=2, expire=0, fail_rate=0)
    driver = subprocess.Popen(
        cli.command(*args), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO
    )
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not a timing assert
        while not recorded_ids(out):
            assert driver.poll() is None, "the driver ended before recording a batch"
            assert time.monotonic() < deadline, "no batch was recorded"
            time.sleep(0.1)
    finally:
        driver.kill()
        driver.wait()
    in_flight = recorded_ids(out)

    cli.simulator.set_batch_behaviour(delay_seconds=0)
    rerun = cli.extract(*args, env=env)
    while "is held by another taguru process" in rerun.stderr:  # until the dead lease expires
        assert time.monotonic() < deadline + 60, rerun.stderr
        time.sleep(0.5)
        rerun = cli.extract(*args, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "recorded in --out by an earlier run" in rerun.stderr
    assert cli.simulator.batch_stats()["twice"] == []
    left = OutDir(out)
    assert left.names(BATCHES) == set()  # every answer went to a written segment
    for name in ("alpha.md", "beta.md"):
        assert fs.cat_file(f"{out}/{output_name(f'{docs}/{name}')}")
    assert in_flight
