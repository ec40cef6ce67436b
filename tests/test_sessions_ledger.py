"""P16, the per-session ledger (`sessions/ledger.py`): append-only records of SESSIONS.md
§4's shape beside the store, closed by a ``sessions extract`` run, shown by ``list``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.contract.names import TRACE, output_name
from taguru_ray.sessions import ledger
from taguru_ray.sessions.convert import convert
from taguru_ray.sessions.index import SessionStore
from taguru_ray.sessions.source import render

CONTEXT = "0b5f3c0e-8a1d-4b6e-9c2f-1d3e5a7b9c0d"
CODEX = next((Path(__file__).parent / "fixtures" / "sessions" / "codex").glob("rollout-*.jsonl"))


def test_a_record_has_the_section_4_fields_in_order_absent_ones_null(tmp_path: Path) -> None:
    ledger.append(tmp_path, "codex", "019a", stage="fact", batch=0, state="done", rows=2, at=7)
    (line,) = ledger.path(tmp_path, "codex", "019a").read_text().splitlines()
    assert list(json.loads(line)) == [*ledger.FIELDS, "source", "at"]
    assert ledger.read(tmp_path, "codex", "019a") == [
        dict.fromkeys(ledger.FIELDS)
        | {"stage": "fact", "batch": 0, "state": "done", "rows": 2, "source": None, "at": 7}
    ]


def test_records_are_appended_and_a_line_cut_short_is_skipped(tmp_path: Path) -> None:
    ledger.append(tmp_path, "codex", "019a", stage="fact", batch=0, state="done")
    with open(ledger.path(tmp_path, "codex", "019a"), "ab") as handle:
        handle.write(b'{"stage":"fa')  # a write the machine died in
    ledger.append(tmp_path, "codex", "019a", stage="session", state="written", rows=3)
    records = ledger.read(tmp_path, "codex", "019a")
    assert [r["stage"] for r in records] == ["fact", "session"]
    assert str(ledger.summary(records)) == "written 3 rows, stages fact"


def test_a_session_id_with_slashes_stays_inside_its_agents_folder(tmp_path: Path) -> None:
    file = ledger.path(tmp_path, "claude-code", "../../3f2a/agent-x")
    assert file.parent == tmp_path / ".ledger" / "claude-code"
    assert ledger.read(tmp_path, "claude-code", "no-such") == []


def test_close_run_records_each_stage_and_the_outcome_that_list_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    session = convert(CODEX.read_bytes(), file=str(CODEX))
    with SessionStore(store, create=True) as opened:
        opened.put(session)
    never = session.__class__(**{**session.__dict__, "session_id": "never-extracted"})
    (out / TRACE).mkdir(parents=True)
    name = output_name(session.source)
    (out / name).write_bytes(render(session, CONTEXT, session.events, []))
    stages = [{"type": "stage", "stage": "naming", "batches": 2, "kept": 1},
              {"type": "stage", "stage": "fact", "batches": 2, "kept": 0}]  # fmt: skip
    (out / TRACE / name).write_text("".join(json.dumps(s) + "\n" for s in stages))

    ledger.close_run(store, str(out), [session, never], model="m-1")

    records = ledger.read(store, "codex", session.session_id)
    assert [(r["stage"], r["state"]) for r in records] == [
        ("naming", "done"),
        ("fact", "done"),
        ("session", "written"),
    ]
    assert records[-1]["rows"] == 0 and records[-1]["model"] == "m-1"
    assert records[-1]["seq_first"] == 0
    assert records[-1]["seq_last"] == session.events[-1].seq
    (missed,) = ledger.read(store, "codex", "never-extracted")
    assert (missed["stage"], missed["state"]) == ("session", "not written")

    assert main(["sessions", "list", "--store", str(store)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "  written 0 rows, stages naming,fact  " in line
    assert main(["sessions", "list", "--store", str(store), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["sessions"]
    assert listed["ledger"] == {
        "stages": ["naming", "fact"],
        "batches": 4,
        "outcome": "written",
        "rows": 0,
    }


def test_a_session_in_parts_sums_the_rows_its_run_wrote() -> None:
    """One run writes a record per part, all with its time: the summary is the run's
    whole session — written when every part was, its rows their sum."""
    parts = [
        {"stage": "session", "state": "written", "rows": 3, "at": 5},
        {"stage": "session", "state": "written", "rows": 4, "at": 5},
    ]
    earlier = [{"stage": "session", "state": "written", "rows": 9, "at": 1}]
    whole = ledger.summary(earlier + parts)
    assert (whole.outcome, whole.rows) == ("written", 7)
    one_failed = [*parts, {"stage": "session", "state": "not written", "rows": None, "at": 5}]
    failed = ledger.summary(one_failed)
    assert (failed.outcome, failed.rows) == ("not written", None)
    later = [*parts, {"stage": "session", "state": "written", "rows": 2, "at": 6}]
    assert ledger.summary(later).rows == 2  # a later run's record stands alone
