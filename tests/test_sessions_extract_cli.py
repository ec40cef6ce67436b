"""`taguru-ray sessions extract` against the simulator, on Ray: importable source files whose
every fact is quoted verbatim from its turn, scripted bad answers checked away, review
flags beside unchanged drafts, a rerun that asks nothing, and a kill that costs only
what was not checkpointed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli import main as cli
from taguru_ray.contract.names import TRACE, output_name
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.sessions import ledger
from taguru_ray.sessions.checks import collapse
from taguru_ray.sessions.index import SessionStore
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import (
    CONTEXT,
    REPO,
    Cli,
    assert_imports_whole,
    checkpoint_units,
    checkpointed,
    quiesce,
)

FIXTURES = REPO / "tests" / "fixtures" / "sessions"


def extract(cli_: Cli, store: Path, out: Path, *args: str, **popen: Any) -> Any:
    command = [sys.executable, "-m", "taguru_ray", "sessions", "extract", "--store", str(store),
               "--out", str(out), "--context", CONTEXT, "--address", cli_.address,
               *args]  # fmt: skip
    if popen:
        return subprocess.Popen(command, env=cli_.env(), cwd=REPO, text=True, **popen)
    return subprocess.run(command, env=cli_.env(), cwd=REPO, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def trace_of(out: Path, source: str) -> list[dict[str, Any]]:
    path = out / TRACE / output_name(source)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    assert cli(["sessions", "import", str(FIXTURES), "--store", str(folder), "--mask"]) == 1
    return folder  # 1: the unknown-field fixture is refused, the rest stored


def test_every_fact_is_quoted_verbatim_from_its_turn_and_the_folder_imports_whole(
    cli: Cli, store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    done = extract(cli, store, out)
    assert done.returncode == 0, done.stderr
    assert_imports_whole(str(out))
    sessions = SessionStore(store)
    facts = flags = 0
    for row in sessions.sessions():
        session = sessions.session(row.agent, row.session_id)
        turns = {event.seq: event.text for event in session.events}
        parsed = parse_source_file((out / output_name(session.source)).read_bytes(), name="s")
        assert parsed.header.id == session.source and parsed.header.context_id == CONTEXT
        drafts = [line for line in trace_of(out, session.source) if line["type"] == "fact"]
        assert len(drafts) == len(parsed.associations) == row_facts(sessions, row)
        for draft in drafts:
            assert collapse(draft["quote"]) in collapse(turns[draft["seq"]])
        facts += len(drafts)
        fact_keys = {(d["seq"], d["subject"], d["predicate"], d["value"]) for d in drafts}
        for flag in (line for line in trace_of(out, session.source) if line["type"] == "flag"):
            flags += 1  # beside its draft, which stands unchanged
            assert (flag["seq"], flag["subject"], flag["predicate"], flag["value"]) in fact_keys
    assert facts > 0 and flags > 0
    # The planted key was masked at import: no file extract wrote holds it, logs included.
    for path in out.rglob("*"):
        if path.is_file():
            assert b"AKIAIOSFODNN7EXAMPLE" not in path.read_bytes(), path
    # A rerun over unchanged sessions asks the model nothing.
    cli.simulator.reset()
    again = extract(cli, store, out)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert cli.simulator.stats()["requests"] == 0
    # Replay answers from the attempts log offline, to the same bytes.
    replayed = tmp_path / "replayed"
    done = extract(cli, store, replayed, "--replay", "strict", "--replay-from",
                   str(out / TRACE))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert cli.simulator.stats()["requests"] == 0
    for path in out.glob("*.jsonl"):
        assert (replayed / path.name).read_bytes() == path.read_bytes()


def row_facts(store: SessionStore, row: Any) -> int:
    return next(r.facts for r in store.sessions() if r.handle == row.handle)


def test_scripted_bad_answers_are_removed_and_review_only_flags(cli: Cli, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([
        {"role": "user", "content": "Please move the Deploy Script to build-release.sh."},
        {"role": "assistant", "content": "I moved the Deploy Script to build-release.sh "
                                         "because the Raspberry Pi would not start."},
    ]), encoding="utf-8")  # fmt: skip
    store = tmp_path / "store"
    assert cli_import(store, chat) == 0
    bad = [
        {"seq": 0, "quote": "Please delete the Deploy Script", "facts": [
            {"subject": "Deploy Script", "predicate": "target", "value": "build-release.sh"}]},
        {"seq": 1, "quote": "I moved the Deploy Script to build-release.sh", "ok": True,
         "facts": [{"subject": "Deploy Script", "predicate": "moved to", "value": "none"},
                   {"subject": "Deploy Script", "predicate": "moved to",
                    "value": "build-release.sh"}]},
        {"seq": 1, "quote": "I moved the Deploy Script to build-release.sh",
         "facts": [{"subject": "Deploy Script", "predicate": "moved to", "value": "N/A"},
                   {"subject": "Deploy Script", "predicate": "moved to",
                    "value": "build-release.sh"}]},
        {"seq": 9, "quote": "x", "facts": [{"subject": "a", "predicate": "b", "value": "c"}]},
    ]  # fmt: skip
    cli.simulator.set_script([{"match": "stage: fact\n\n[seq 0] user: Please move", "times": 1,
                               "answer": json.dumps(bad)}])  # fmt: skip
    out = tmp_path / "out"
    done = extract(cli, store, out, "--stages", "fact,review")
    assert done.returncode == 0, done.stderr
    assert_imports_whole(str(out))
    source = SessionStore(store).sessions()[0]
    name = f"session:{source.agent}:{source.session_id}"
    trace = trace_of(out, name)
    losses = {(line["path"], line["reason"]) for line in trace if line["type"] == "loss"}
    assert losses == {
        ("$[0].quote", "the quote is not verbatim in turn 0"),
        ("$[1].ok", "a key outside the v4 contract"),
        ("$[2].facts[0]", "value is padding ('N/A')"),
        ("$[3]", "seq 9 is not a turn of this batch"),
    }
    parsed = parse_source_file((out / output_name(name)).read_bytes(), name="s")
    assert [(a.subject, a.label, a.object) for a in parsed.associations] == [
        ("Deploy Script", "moved to", "build-release.sh")]  # fmt: skip
    # Review flagged the "because" in the quote's turn? Its quote has none: no flag, and the
    # draft stands as the checks left it.
    assert [line for line in trace if line["type"] == "flag"] == []


def cli_import(store: Path, *paths: Path) -> int:
    return cli(["sessions", "import", *map(str, paths), "--store", str(store)])


@pytest.fixture(scope="module")
def slow_simulator() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--latency-ms", "250", "--slots", "2") as process:
        yield process


def test_a_killed_run_resumes_and_asks_only_what_was_not_checkpointed(
    ray_address: str, slow_simulator: SimulatorProcess, tmp_path: Path
) -> None:
    """SIGKILL, as a real process, in the middle of the first stage's batches: the rerun
    asks exactly what was not checkpointed, so over both runs the simulator counts a clean
    run's asks plus at most the asks in flight at the kill (bounded by --max-inflight),
    and the file written is the clean run's, byte for byte."""
    runner = Cli(ray_address, slow_simulator)
    chat = tmp_path / "long.json"
    chat.write_text(json.dumps([
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Step {i}: the Worker{i} talks to Service{i} through Gateway{i}. "
                    + "detail " * 600}
        for i in range(10)
    ]), encoding="utf-8")  # fmt: skip
    store = tmp_path / "store"
    assert cli_import(store, chat) == 0
    source = f"session:openai-chat:{SessionStore(store).sessions()[0].session_id}"
    inflight = ("--max-inflight", "2")

    clean = tmp_path / "clean"
    # A store of its own: the clean run writes the session's memory card into its store,
    # and the killed run's rerun must ask for that card too, as the clean run did.
    shutil.copytree(store, tmp_path / "clean-store")
    slow_simulator.reset()
    assert extract(runner, tmp_path / "clean-store", clean, *inflight).returncode == 0
    asked = slow_simulator.stats()["requests"]
    first = next(line for line in trace_of(clean, source) if line["type"] == "stage")
    assert first["batches"] >= 5  # the kill below lands inside this stage

    out = tmp_path / "out"
    slow_simulator.reset()
    proc = extract(runner, store, out, *inflight, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while (slow_simulator.stats()["requests"] < 3 and proc.poll() is None
           and time.monotonic() < deadline):  # fmt: skip
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    quiesce(slow_simulator)  # the asks in flight at the kill have landed
    killed_asks = slow_simulator.stats()["requests"]
    saved = checkpointed(out, source)["units"]
    assert 3 <= killed_asks < asked, "the kill did not land mid-run"
    in_stage = [key for key in saved if key.startswith(f"{first['stage']}-")]
    assert 0 < len(in_stage) == len(saved) < first["batches"], "the kill missed the stage"
    assert killed_asks - len(saved) <= 2  # only what was in flight went unsaved

    slow_simulator.reset()
    rerun = extract(runner, store, out, *inflight)
    assert rerun.returncode == 0, rerun.stderr
    again = slow_simulator.stats()["requests"]
    assert again == asked - len(saved)  # no checkpointed batch is asked again
    assert asked <= killed_asks + again <= asked + 2
    assert (out / output_name(source)).read_bytes() == (clean / output_name(source)).read_bytes()
    # Issue 49 item 14: the killed run's finished batches are in the ledger — recorded by
    # the rerun before it asked anything, from the attempts log the killed run left.
    agent, session_id = source.split(":")[1:]
    states = [(r["stage"], r["state"]) for r in ledger.read(store, agent, session_id)]
    killed = states.index(("session", "killed"))
    assert states[0] == ("session", "running")
    assert states[1:killed] == [(first["stage"], "done")] * len(saved)
    assert states[killed + 1] == ("session", "running") and states[-1] == ("session", "written")


def units(out: Path, source: str) -> int:
    return checkpoint_units(out, source)
