"""A start refused before its first request takes back what it made in --out, and only that."""

from __future__ import annotations

from pathlib import Path

from taguru_ray.contract.names import CHECKPOINTS, LOCK, TRACE
from taguru_ray.store.footprint import Footprint
from taguru_ray.store.lock import OutLock
from taguru_ray.store.outdir import OutDir


def started(out: Path) -> Footprint:
    """What `execute` does up to the first request: note, ensure, lock (released later)."""
    outdir = OutDir(str(out))
    footprint = Footprint(outdir)
    outdir.ensure()
    with OutLock(outdir):
        assert (out / LOCK).exists() and (out / CHECKPOINTS).is_dir()
        footprint.take_back()
    return footprint


def test_a_new_out_and_the_parents_it_needed_are_removed(tmp_path: Path) -> None:
    started(tmp_path / "a" / "b" / "out")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_out_keeps_what_it_held_and_loses_only_what_the_run_made(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / TRACE).mkdir(parents=True)
    (out / TRACE / "old.jsonl").write_text("{}\n")
    (out / "notes.txt").write_text("mine\n")
    started(out)
    assert sorted(p.name for p in out.iterdir()) == [TRACE, "notes.txt"]
    assert (out / TRACE / "old.jsonl").read_text() == "{}\n"


def test_a_folder_someone_wrote_into_meanwhile_stays(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outdir = OutDir(str(out))
    footprint = Footprint(outdir)
    outdir.ensure()
    (out / CHECKPOINTS / "written.json").write_text("{}")
    footprint.take_back()
    assert (out / CHECKPOINTS / "written.json").exists()  # and --out with it
    assert not (out / TRACE).exists()
