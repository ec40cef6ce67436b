"""`taguru-ray extract` with its inputs and --out on S3 (moto's server on loopback).

The real CLI in a subprocess, joined to the session's Ray runtime; the driver
and its workers reach the bucket through the storage variables of the
environment (the driver captures them and hands them to every worker).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from taguru_ray.contract.names import (
    LOCK,
    MANIFEST,
    MANIFEST_JOURNAL,
    attempts_name,
    output_name,
)
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.store.lease import LeaseLock
from taguru_ray.store.outdir import OutDir
from tests import s3 as server
from tests.s3 import S3
from tests.support import CONTEXT, REPO, Cli, checkpointed, quiesce

pytestmark = pytest.mark.slow

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name

EXAMPLES = REPO / "examples" / "corpus"
PARAGRAPHS = 16


def upload(store: S3, folder: str, files: dict[str, bytes]) -> str:
    """Put `files` under a fresh prefix; the folder's URL."""
    url = store.prefix(folder)
    fs = fsspec.filesystem("s3")
    for name, data in files.items():
        fs.pipe_file(f"{url}/{name}", data)
    return url


def read(url: str) -> bytes | None:
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    try:
        return bytes(fs.cat_file(url))
    except FileNotFoundError:
        return None


def lines(url: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (read(url) or b"").decode().splitlines()]


def args(out: str, *extra: str) -> list[str]:
    return ["--context", CONTEXT, "--out", out, *extra]


def test_a_run_on_s3_writes_every_file_and_a_rerun_skips_everything(cli: Cli, s3_env: S3) -> None:
    docs = upload(s3_env, "docs", {p.name: p.read_bytes() for p in EXAMPLES.iterdir()})
    out = s3_env.prefix("out")
    env = cli.env(**s3_env.env)
    result = cli.extract(*args(out, "--chunk-bytes", "1024"), docs, env=env)
    assert result.returncode == 0, result.stderr
    assert "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)" in result.stdout
    sources = sorted(f"{docs}/{p.name}" for p in EXAMPLES.iterdir())
    manifest = json.loads(read(f"{out}/{MANIFEST}") or b"")["documents"]
    assert sorted(manifest) == sources
    for source in sources:
        name = output_name(source)
        parsed = parse_source_file(read(f"{out}/{name}") or b"")
        assert parsed.header.id == source and parsed.associations
        assert lines(f"{out}/.extract-trace/{name}")[0]["source"] == source
        attempts = lines(f"{out}/.extract-trace/{attempts_name(source)}")
        assert [r["type"] for r in attempts[:3]] == ["segment", "settings", "system"]
    left = OutDir(out)
    assert left.names(MANIFEST_JOURNAL) == set()  # compacted
    assert left.names(".extract-checkpoints") == set()  # deleted on success
    assert LOCK not in left.names()  # the lease was released

    cli.simulator.reset()
    rerun = cli.extract(*args(out, "--chunk-bytes", "1024"), docs, env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert cli.simulator.stats()["requests"] == 0
    assert rerun.stdout.count("unchanged, skipped (--force re-extracts)") == 3


def test_a_lease_renewal_after_the_run_never_calls_a_gone_actor_or_starts_a_ray(
    cli: Cli, s3_env: S3
) -> None:
    """Issue 37: with its own local Ray (no --address) and a lease renewed every 0.1 s,
    the renewals that come after the summary — while Ray shuts down — reached the gone
    actors (`Can't find actor`) and Ray's auto-init started a second local Ray."""
    docs = upload(s3_env, "docs", {"a.md": b"Ray schedules tasks on a cluster of nodes.\n"})
    out = s3_env.prefix("out")
    env = cli.env(**s3_env.env, TAGURU_RAY_LEASE_SECONDS="0.4")
    command = [part for part in cli.command(*args(out), docs) if part != cli.address]
    command.remove("--address")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300,
                            cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "extract: 1 written" in result.stdout
    for sign in ("Can't find actor", "Traceback", "Started a local Ray instance", "this is a bug"):
        assert sign not in result.stderr, result.stderr
    assert LOCK not in OutDir(out).names()  # released after Ray went, as before


def test_a_second_run_is_refused_while_a_live_lease_is_held(cli: Cli, s3_env: S3) -> None:
    docs = upload(s3_env, "docs", {"a.md": b"Ray schedules tasks on a cluster of nodes.\n"})
    out = s3_env.prefix("out")
    with LeaseLock(OutDir(out), print, seconds=60):
        refused = cli.extract(*args(out), docs, env=cli.env(**s3_env.env))
    assert refused.returncode == 1
    assert f"is held by another taguru process (pid {os.getpid()} on " in refused.stderr
    assert cli.simulator.stats()["requests"] == 0
    assert cli.extract(*args(out), docs, env=cli.env(**s3_env.env)).returncode == 0


@pytest.fixture(scope="module")
def slow_simulator() -> Iterator[SimulatorProcess]:
    # Slow enough that a kill lands between completions of one segment.
    with SimulatorProcess("--latency-ms", "400", "--slots", "4") as process:
        yield process


def long_segment() -> bytes:
    return "\n\n".join(
        f"Section {i} explains how Worker{i} talks to Service{i} through Gateway{i}. " + "z " * 160
        for i in range(PARAGRAPHS)
    ).encode()


def units_in(out: str, source: str) -> dict[str, Any]:
    """The segment's checkpointed units (its attempts log's records, ADR 0049)."""
    return checkpointed(out, source)["units"]


def test_a_sigkilled_run_on_s3_resumes_from_its_checkpoint_journal_and_log(
    ray_address: str, slow_simulator: SimulatorProcess, s3_env: S3
) -> None:
    cli = Cli(ray_address, slow_simulator)
    short = b"Ray Serve routes requests to replicas.\n"
    docs = upload(s3_env, "docs", {"a-short.md": short, "long.md": long_segment()})
    source = f"{docs}/long.md"
    # A short lease: the killed driver's lease expires while the simulator quiesces.
    env = cli.env(**s3_env.env, TAGURU_RAY_LEASE_SECONDS="2")
    run_args = ["--chunk-bytes", "512", "--segment-window", "1", docs]

    clean = s3_env.prefix("clean")
    slow_simulator.reset()
    assert cli.extract(*args(clean, *run_args), env=env).returncode == 0
    total = slow_simulator.stats()["requests"]  # the short segment's one chunk + the long's

    out = s3_env.prefix("out")
    slow_simulator.reset()
    driver = subprocess.Popen(
        cli.command(*args(out, *run_args)),
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    journal = OutDir(out)

    def journaled() -> bool:
        # The driver journals the short segment's entry in its own PUT, which on a
        # busy machine can land after the long segment's first checkpoints.
        return len(journal.names(MANIFEST_JOURNAL)) == 1

    while len(units_in(out, source)) < 3 or not journaled():
        assert driver.poll() is None, b"\n".join(driver.communicate()).decode()[-4000:]
        assert time.monotonic() < deadline, "no checkpoint units appeared"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    quiesce(slow_simulator)  # the dead driver's workers are gone with its job
    units = units_in(out, source)
    assert 3 <= len(units) < total - 1
    assert read(f"{out}/{output_name(source)}") is None
    left = OutDir(out)
    assert MANIFEST not in left.names()  # killed before its compaction...
    assert len(left.names(MANIFEST_JOURNAL)) == 1  # ...with the short segment journaled
    # Every checkpointed completion is in the attempts log the kill left behind.
    logged = {
        (r["run_id"], r["attempt_seq"])
        for r in lines(f"{out}/.extract-trace/{attempts_name(source)}")
        if r["type"] == "attempt"
    }
    assert {(u["attempt"]["run_id"], u["attempt"]["attempt_seq"]) for u in units.values()} <= logged

    slow_simulator.reset()
    rerun = cli.extract(*args(out, *run_args), env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "expired at" in rerun.stderr and "taking it over" in rerun.stderr
    assert f"{docs}/a-short.md: unchanged, skipped" in rerun.stdout
    assert slow_simulator.stats()["requests"] == total - 1 - len(units)
    for name in (output_name(source), output_name(f"{docs}/a-short.md")):
        assert read(f"{out}/{name}") == read(f"{clean}/{name}")
    attempts = lines(f"{out}/.extract-trace/{attempts_name(source)}")
    resumed = [r["resumed"] for r in attempts if r["type"] == "segment"]
    assert resumed == [False, True]  # appended to, not truncated
    assert sorted(json.loads(read(f"{out}/{MANIFEST}") or b"")["documents"]) == [
        f"{docs}/a-short.md",
        source,
    ]
    assert left.names(MANIFEST_JOURNAL) == set()


def trace_records(out: str) -> list[dict[str, Any]]:
    """Every record of every attempts log under --out."""
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    found: list[dict[str, Any]] = []
    for path in fs.find(f"{out}/.extract-trace"):
        if path.endswith(".attempts.jsonl"):
            found += lines(f"s3://{path}")
    return found


def snapshot(out: str) -> dict[str, bytes]:
    """Every object under --out but the lock, by key: what the runs wrote."""
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    return {
        path: bytes(fs.cat_file(path)) for path in sorted(fs.find(out)) if not path.endswith(LOCK)
    }


def test_a_holder_frozen_past_its_lease_writes_nothing_once_it_wakes(
    ray_address: str, slow_simulator: SimulatorProcess, s3_env: S3
) -> None:
    """Issue 16: run A is frozen (SIGSTOP) past its lease, run B takes the lease over and
    finishes; A wakes, finds the lease lost and stops — and writes nothing more: no
    manifest compacted over B's, no checkpoint, trace or source file. Run C then asks
    for nothing."""
    cli = Cli(ray_address, slow_simulator)
    files = {f"s{i}.md": long_segment().replace(b"Section", f"Part{i}".encode()) for i in range(4)}
    docs = upload(s3_env, "docs", files)
    out = s3_env.prefix("out")
    env = cli.env(**s3_env.env, TAGURU_RAY_LEASE_SECONDS="4")
    run_args = [*args(out, "--chunk-bytes", "512", "--segment-window", "2"), docs]
    slow_simulator.reset()
    holder = subprocess.Popen(
        cli.command(*run_args), env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not any(r["type"] == "checkpoint" for r in trace_records(out)):
        assert holder.poll() is None, holder.communicate()
        assert time.monotonic() < deadline, "run A checkpointed nothing"
        time.sleep(0.1)
    os.kill(holder.pid, signal.SIGSTOP)  # its workers run on, until the fence stops them
    try:
        time.sleep(5)  # past the 4 s lease
        taker = cli.extract(*run_args, env=env)
        assert taker.returncode == 0, taker.stderr
        assert "expired at" in taker.stderr and "taking it over" in taker.stderr
        after_taker = snapshot(out)
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    _, stderr = holder.communicate(timeout=120)
    assert "lost the lease on" in stderr.decode(), stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert snapshot(out) == after_taker  # the woken holder wrote nothing at all
    quiesce(slow_simulator)
    slow_simulator.reset()
    again = cli.extract(*run_args, env=env)
    assert again.returncode == 0, again.stderr
    assert slow_simulator.stats()["requests"] == 0  # nothing is paid for twice
    assert (
        again.stdout.splitlines()[-1] == "extract: 0 written, 4 unchanged, 0 failed of 4 segment(s)"
    )
