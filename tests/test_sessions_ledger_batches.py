"""P16's per-batch ledger records (SESSIONS.md §4): the program puts each settled ask's
``{stage, batch, seq_first, seq_last, input_sha256, prompt_sha256, rows, attempt}`` in
the trace, and ``close_run`` appends one ledger record per line, which ``list`` counts."""

from __future__ import annotations

import json
from pathlib import Path

from taguru_ray.contract.names import TRACE, output_name
from taguru_ray.sessions import ledger
from taguru_ray.sessions.batches import candidates, cut
from taguru_ray.sessions.program import extract_session
from tests.program_world import World
from tests.test_sessions_program import GOOD, NO_FLAGS, SESSION, task

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
