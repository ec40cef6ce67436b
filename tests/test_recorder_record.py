"""A written segment is recorded by the worker that wrote it (issue 23): its manifest
journal entry first, then the output it replaces and its checkpoint are dropped — the
driver only remembers the entry."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from taguru_ray.contract.names import MANIFEST_JOURNAL
from taguru_ray.engine.recorder import StoreRecorder
from taguru_ray.store.checkpoints import checkpoint_path
from taguru_ray.store.journal import Journal
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import OutDir

SOURCE = "docs/a.md"
INPUTS = {"sha256": "0" * 64, "output": "a.jsonl", "not_a_manifest_field": 1}


def _recorded(tmp_path: Path, previous: str | None) -> OutDir:
    out = OutDir(str(tmp_path))
    out.ensure()
    out.write(checkpoint_path(SOURCE), b"{}")
    out.write("old-a.jsonl", b"old")
    out.write("a.jsonl", b"new")
    recorder = StoreRecorder(
        out, SOURCE, journal=Journal(out), trace_attempts=False, sidecar=None, sidecar_path=None
    )
    asyncio.run(recorder.record(INPUTS, previous))
    return out


def test_the_journal_entry_is_written_and_the_checkpoint_dropped(tmp_path: Path) -> None:
    out = _recorded(tmp_path, None)
    [log] = (tmp_path / MANIFEST_JOURNAL).iterdir()  # the worker's own log: one line
    entry = json.loads(log.read_text())
    assert entry == {"source": SOURCE, "entry": {"sha256": "0" * 64, "output": "a.jsonl"}}
    assert not (tmp_path / checkpoint_path(SOURCE)).exists()
    assert (tmp_path / "old-a.jsonl").exists() and (tmp_path / "a.jsonl").read_bytes() == b"new"
    manifest, note = Manifest.load(out)  # what the next run loads: the entry, from the journal
    assert note is None and manifest.previous_output(SOURCE) == "a.jsonl"


def test_an_output_the_manifest_named_elsewhere_is_deleted_and_the_same_one_kept(
    tmp_path: Path,
) -> None:
    _recorded(tmp_path / "moved", "old-a.jsonl")
    assert not (tmp_path / "moved" / "old-a.jsonl").exists()
    _recorded(tmp_path / "same", "a.jsonl")
    assert (tmp_path / "same" / "a.jsonl").read_bytes() == b"new"
