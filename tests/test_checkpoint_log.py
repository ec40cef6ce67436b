"""Checkpoint units in the segment's attempts log (ADR 0049): appended, not a file per
segment; folded back at load, spent by a `settled` record; the file layout kept for a
run with the attempts log off and read when an earlier build left one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from taguru_ray.contract.names import TRACE, attempts_name
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.store.checkpoints import Checkpoint, checkpoint_path, count_reusable
from taguru_ray.store.journal import Journal
from taguru_ray.store.outdir import OutDir

SOURCE = "docs/a.md"
PRINT = {"prompt_version": 102, "sha256": "a" * 64}
OTHER = {"prompt_version": 102, "sha256": "b" * 64}
UNIT = {"chunk_index": 0, "attempt": None, "output": {}, "user": "u", "answer": "{}"}
INPUTS = {"sha256": "a" * 64, "output": "a.jsonl"}


def store(tmp_path: Path) -> OutDir:
    out = OutDir(str(tmp_path))
    out.ensure()
    return out


def recorder(out: OutDir, *, trace_attempts: bool = True) -> StoreRecorder:
    return StoreRecorder(
        out, SOURCE, journal=Journal(out), trace_attempts=trace_attempts, sidecar=None,
        sidecar_path=None,
    )  # fmt: skip


def run(out: OutDir, fingerprint: dict[str, Any], *steps: str, trace: bool = True) -> Any:
    """Load, begin (as the program does), then each step: unit:<id>, split:<id>, written."""

    async def go() -> Any:
        rec = recorder(out, trace_attempts=trace)
        resume, note = rec.load(fingerprint, discard=False)
        await rec.begin([{"type": "segment"}], fresh=not resume.holds)
        for step in steps:
            kind, _, name = step.partition(":")
            if kind == "unit":
                await rec.save_unit(name, {**UNIT, "answer": name})
            elif kind == "split":
                await rec.save_split(name, 512)
            elif kind == "written":
                await rec.record(INPUTS, None)
        rec.close()
        return resume, note

    return asyncio.run(go())


def log_types(tmp_path: Path) -> list[str]:
    text = (tmp_path / TRACE / attempts_name(SOURCE)).read_text()
    return [json.loads(line)["type"] for line in text.splitlines()]


def test_units_are_appended_to_the_attempts_log_and_no_file_is_written(tmp_path: Path) -> None:
    out = store(tmp_path)
    run(out, PRINT, "unit:p1", "split:p2", "unit:p3")
    assert not (tmp_path / checkpoint_path(SOURCE)).exists()
    assert log_types(tmp_path) == ["segment", "checkpoint", "checkpoint", "checkpoint"]
    resume, note = run(out, PRINT)  # the rerun after a kill
    assert note is None and set(resume.units) == {"p1", "p3"} and resume.splits == {"p2": 512}
    assert resume.units["p3"]["answer"] == "p3"
    assert log_types(tmp_path)[-1] == "segment"  # continued, not emptied


def test_a_written_segment_spends_its_units(tmp_path: Path) -> None:
    out = store(tmp_path)
    run(out, PRINT, "unit:p1", "written")
    assert log_types(tmp_path)[-1] == "checkpoint"  # settled
    resume, note = run(out, OTHER)  # the segment changed later: nothing stale, no note
    assert not resume.holds and note is None


def test_units_under_other_settings_are_not_reused_and_said(tmp_path: Path) -> None:
    out = store(tmp_path)
    run(out, PRINT, "unit:p1", "unit:p2")
    resume, note = run(out, OTHER)
    assert not resume.holds
    assert note is not None and "different settings — 2 unit(s) re-extract" in note


def test_a_line_cut_by_a_kill_leaves_the_ones_before_it(tmp_path: Path) -> None:
    out = store(tmp_path)
    run(out, PRINT, "unit:p1", "unit:p2")
    log = tmp_path / TRACE / attempts_name(SOURCE)
    log.write_bytes(log.read_bytes()[:-20])  # the last record half-written
    resume, _ = run(out, PRINT)
    assert set(resume.units) == {"p1"}


def test_a_file_an_earlier_build_left_is_read_and_deleted_once_written(tmp_path: Path) -> None:
    out = store(tmp_path)
    legacy = Checkpoint(out, SOURCE, PRINT)
    legacy.save("old", UNIT)  # the one-file-per-segment layout
    resume, _ = run(out, PRINT, "unit:new")
    assert set(resume.units) == {"old"}
    assert count_reusable(out, SOURCE, PRINT, ["old", "new", "none"]) == 2
    run(out, PRINT, "written")
    assert not (tmp_path / checkpoint_path(SOURCE)).exists()


def test_with_the_attempts_log_off_the_file_layout_stays(tmp_path: Path) -> None:
    out = store(tmp_path)
    run(out, PRINT, "unit:p1", trace=False)
    assert json.loads((tmp_path / checkpoint_path(SOURCE)).read_text())["units"].keys() == {"p1"}
    assert not (tmp_path / TRACE / attempts_name(SOURCE)).exists()
    resume, _ = run(out, PRINT, "written", trace=False)
    assert set(resume.units) == {"p1"}
    assert not (tmp_path / checkpoint_path(SOURCE)).exists()


def test_overview_binding_drops_units_bound_to_another_overview(tmp_path: Path) -> None:
    out = store(tmp_path)
    checkpoint = Checkpoint(out, SOURCE, PRINT, logged=True)
    records = [checkpoint.logged_unit("p1", UNIT)]
    stale, bound = checkpoint.logged_binding("d1", keep=True)
    records.append(bound)
    assert stale and checkpoint.units == {} and bound is not None and bound["cleared"] is True
    assert checkpoint.logged_binding("d1", keep=True) == (False, None)  # unchanged: nothing
    records.append(checkpoint.logged_overview("c" * 64, "synopsis"))
    folded = Checkpoint(out, SOURCE, PRINT, logged=True)
    lines = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    out.write(f"{TRACE}/{attempts_name(SOURCE)}", lines)
    assert folded.load() is None
    assert (folded.units, folded.overview_digest) == ({}, "d1")
    assert folded.overview == {"c" * 64: "synopsis"}
