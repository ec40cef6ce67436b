"""P16's per-batch ledger records (SESSIONS.md §4): the program puts each settled ask's
``{stage, batch, seq_first, seq_last, input_sha256, prompt_sha256, rows, attempt}`` in
the trace, and ``close_run`` appends one ledger record per line, which ``list`` counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taguru_ray.contract.names import TRACE, attempts_name, output_name
from taguru_ray.contract.records import dumps_lines
from taguru_ray.contract.records.checkpoint import CheckpointRecord
from taguru_ray.pipeline import effects as fx
from taguru_ray.sessions import ledger
from taguru_ray.sessions.batches import candidates, cut
from taguru_ray.sessions.events import Session
from taguru_ray.sessions.program import extract_session
from taguru_ray.simulate.answers import answer as simulated
from tests.program_world import World
from tests.test_sessions_program import GOOD, NO_FLAGS, SESSION, task
from tests.test_sessions_stages import SESSION as STAGE_SESSION
from tests.test_sessions_stages import task as stages_task

FLAGGED = (
    '[{"seq": 0, "quote": "", "facts": [{"subject": "value", "predicate": "flag", '
    '"value": "naming_drift"}]}]'
)


def _run() -> tuple[bytes, bytes]:
    world = World([GOOD, NO_FLAGS, FLAGGED])
    assert world.run(extract_session(task())).status == "written"
    assert world.files is not None
    return world.files


def test_the_trace_holds_one_line_per_settled_batch_and_review() -> None:
    _, trace = _run()
    lines = [json.loads(raw) for raw in trace.splitlines()]
    settled = [line for line in lines if line["type"] == "batch"]
    (batch,) = cut(candidates(SESSION.events))
    fact, *reviews = settled
    assert {k: v for k, v in fact.items() if k != "prompt_sha256"} == {
        "type": "batch", "stage": "fact", "batch": 0, "seq_first": 0, "seq_last": 3,
        "input_sha256": batch.sha256, "state": "done", "rows": 2, "attempt": 1,
    }  # fmt: skip
    assert len(fact["prompt_sha256"]) == 64
    assert [(r["stage"], r["batch"], r["seq_first"], r["rows"]) for r in reviews] == [
        ("review", None, 0, 0),
        ("review", None, 1, 1),  # one flag raised on turn 1's draft
    ]


def test_close_run_appends_a_record_per_batch_and_list_counts_them(tmp_path: Path) -> None:
    source_file, trace = _run()
    out, store = tmp_path / "out", tmp_path / "store"
    (out / TRACE).mkdir(parents=True)
    name = output_name(SESSION.source)
    (out / name).write_bytes(source_file)
    (out / TRACE / name).write_bytes(trace)

    ledger.close_run(store, str(out), [SESSION], model="m-1")

    records = ledger.read(store, SESSION.agent, SESSION.session_id)
    assert [(r["stage"], r["batch"], r["state"]) for r in records] == [
        ("fact", 0, "done"),
        ("review", None, "done"),
        ("review", None, "done"),
        ("session", None, "written"),
    ]
    fact = records[0]
    assert list(fact)[: len(ledger.FIELDS)] == list(ledger.FIELDS)
    assert (fact["seq_first"], fact["seq_last"], fact["rows"], fact["attempt"]) == (0, 3, 2, 1)
    assert fact["model"] == "m-1" and fact["source"] == SESSION.source
    assert str(ledger.summary(records)) == "written 2 rows, stages fact,review"
    assert ledger.summary(records).batches == 1


class _Recorded(World):
    """A worker's recorder in memory: the attempts log as the engine writes it (a
    settled unit is a checkpoint record in it, ADR 0049), every fact ask answered badly."""

    def answer(self, ask: fx.Ask) -> str:
        user = next(m["content"] for m in ask.request.messages if m["role"] == "user")
        return "not JSON" if "stage: fact\n" in user else simulated(ask.request.messages)

    def handle(self, effect: Any) -> Any:
        if isinstance(effect, fx.SaveUnit):
            self.log.append(CheckpointRecord(fingerprint="f", piece_id=effect.piece_id,
                                             unit=effect.unit).record())  # fmt: skip
        return super().handle(effect)


def _out_with_log(tmp_path: Path, log: list[dict[str, Any]], session: Session) -> Path:
    out = tmp_path / "out"
    (out / TRACE).mkdir(parents=True, exist_ok=True)
    (out / TRACE / attempts_name(session.source)).write_bytes(dumps_lines(log))
    return out


def test_a_failed_run_records_each_batch_it_finished_and_the_one_that_failed(
    tmp_path: Path,
) -> None:
    """Issue 49 item 14: a failed run's ledger held only `not written`."""
    world = _Recorded()
    outcome = world.run(extract_session(stages_task(("naming", "fact"), STAGE_SESSION)))
    assert outcome.status == "failed"
    out, store = _out_with_log(tmp_path, world.log, STAGE_SESSION), tmp_path / "store"
    ledger.open_run(store, str(out), [STAGE_SESSION], model="m-1")
    ledger.close_run(store, str(out), [STAGE_SESSION], model="m-1")
    records = ledger.read(store, STAGE_SESSION.agent, STAGE_SESSION.session_id)
    assert [(r["stage"], r["batch"], r["state"], r["attempt"]) for r in records] == [
        ("session", None, "running", None),
        ("naming", 0, "done", 1),
        ("fact", 0, "failed", 2),  # asked, then its corrective turn: still not JSON
        ("session", None, "failed", None),
    ]
    assert "not JSON" in records[2]["reason"] and records[2]["input_sha256"]
    assert str(ledger.summary(records)) == "failed, stages naming"


def test_a_killed_run_is_recorded_by_the_next_run_before_it_asks_anything(
    tmp_path: Path,
) -> None:
    """A SIGKILL leaves the ledger `running` and its asks in the attempts log: the next
    run's open records them (state `killed`) from the out folder the killed run named."""
    world = _Recorded()
    world.run(extract_session(stages_task(("naming", "fact"), STAGE_SESSION)))
    killed = [r for r in world.log if r.get("type") != "session_batch"]  # died at the fact ask
    out, store = _out_with_log(tmp_path, killed, STAGE_SESSION), tmp_path / "store"
    ledger.open_run(store, str(out), [STAGE_SESSION])  # the killed run's start
    ledger.open_run(store, str(tmp_path / "elsewhere"), [STAGE_SESSION])  # the next run's
    records = ledger.read(store, STAGE_SESSION.agent, STAGE_SESSION.session_id)
    assert [(r["stage"], r["state"]) for r in records] == [
        ("session", "running"),
        ("naming", "done"),
        ("session", "killed"),
        ("session", "running"),
    ]
