import json
import shutil
from pathlib import Path

import pytest

from taguru_ray.contract.names import MANIFEST
from taguru_ray.errors import StartupError
from taguru_ray.store.checkpoints import Checkpoint, count_reusable
from taguru_ray.store.lock import OutLock
from taguru_ray.store.logs import AttemptsLog
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.outdir import LinkRefused, OutDir


def entry(**fields: object) -> dict:
    base = {
        "sha256": "s",
        "model": "m",
        "prompt_version": 101,
        "context": "c",
        "questions_n": 0,
        "no_passage": False,
        "description": "",
        "fact_budget": 0,
        "structured_output": "",
        "max_output_tokens": 0,
        "escalation_factor": "",
        "runaway_ratio": "",
        "chunk_context": "",
        "chunk_bytes": "",
        "lossy": False,
        "schema_digest": "",
        "candidates": "",
        "redaction": "",
        "vocabulary_digest": "",
        "source_id": "",
        "date": 0,
        "tags": [],
        "output": "a.jsonl",
    }
    return {**base, **fields}


def test_manifest_skips_only_equal_inputs_whose_output_exists(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    manifest, note = Manifest.load(out)
    assert note is None and manifest.entries == {}
    manifest.record("docs/a.md", entry())
    reloaded, _ = Manifest.load(out)
    assert reloaded.unchanged("docs/a.md", entry(), {"a.jsonl"})
    assert not reloaded.unchanged("docs/a.md", entry(), set())  # output gone
    assert not reloaded.unchanged("docs/a.md", entry(model="other"), {"a.jsonl"})
    assert not reloaded.unchanged("docs/b.md", entry(), {"a.jsonl"})


def test_manifest_is_pretty_sorted_and_reads_old_entries_with_defaults(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    old = {"sha256": "s", "model": "m", "prompt_version": 101, "context": "c", "output": "a.jsonl"}
    (tmp_path / MANIFEST).write_text(json.dumps({"documents": {"z.md": old, "a.md": old}}))
    manifest, note = Manifest.load(out)
    assert note is None
    assert manifest.unchanged("a.md", entry(), {"a.jsonl"})
    text = manifest.render().decode()
    assert text.index('"a.md"') < text.index('"z.md"') and '\n  "documents": {\n' in text


def test_a_corrupt_manifest_re_extracts_everything_with_one_note(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text("{not json")
    manifest, note = Manifest.load(OutDir(str(tmp_path)))
    assert manifest.entries == {}
    assert note is not None and "every segment re-extracts" in note


def test_checkpoint_units_survive_a_reload_under_the_same_fingerprint(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    checkpoint = Checkpoint(out, "docs/a.md", {"sha256": "x"})
    checkpoint.save("p1", {"chunk_index": 0, "output": {}})
    checkpoint.save("p2", {"chunk_index": 1, "output": {}})
    again = Checkpoint(out, "docs/a.md", {"sha256": "x"})
    assert again.load() is None and sorted(again.units) == ["p1", "p2"]
    assert count_reusable(out, "docs/a.md", {"sha256": "x"}, ["p2", "p3"]) == 1
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]  # atomic writes leave none


def test_a_checkpoint_under_other_settings_is_discarded_and_said(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    Checkpoint(out, "docs/a.md", {"sha256": "x"}).save("p1", {})
    other = Checkpoint(out, "docs/a.md", {"sha256": "y"})
    note = other.load()
    assert other.units == {} and note is not None
    assert "written under different settings — 1 unit(s) re-extract" in note


def test_an_unreadable_checkpoint_is_ignored_and_said(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    checkpoint = Checkpoint(out, "docs/a.md", {})
    Path(checkpoint.location).parent.mkdir(parents=True)
    Path(checkpoint.location).write_text("garbage")
    note = checkpoint.load()
    assert note is not None and note.startswith("ignoring an unreadable checkpoint at ")


def test_the_lock_refuses_a_second_holder_and_frees_on_release(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    with OutLock(out), pytest.raises(StartupError, match="held by another taguru process"):
        OutLock(out).acquire()
    with OutLock(out):
        pass


def test_removing_or_replacing_the_lock_file_admits_no_second_run(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    with OutLock(out):
        (tmp_path / ".extract.lock").unlink()
        with pytest.raises(StartupError, match="held by another taguru process"):
            OutLock(out).acquire()
        (tmp_path / ".extract.lock").write_text("{}")  # a fresh file in its place
        with pytest.raises(StartupError, match="held by another taguru process"):
            OutLock(out).acquire()
        # The same folder by another path is the same folder.
        alias = tmp_path.parent / f"{tmp_path.name}-link"
        alias.symlink_to(tmp_path)
        with pytest.raises(StartupError, match="held by another taguru process"):
            OutLock(OutDir(str(alias))).acquire()


def test_a_link_planted_at_the_lock_file_is_refused_and_never_written_through(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / ".extract.lock").symlink_to(victim)
    with pytest.raises(StartupError, match="a symbolic link where the lock file belongs"):
        OutLock(OutDir(str(out_dir))).acquire()
    assert victim.read_text() == "keep me"
    with OutLock(OutDir(str(tmp_path / "free"))):
        pass  # and a refused acquire left nothing held


def test_a_link_planted_at_a_log_is_refused_and_the_file_it_names_untouched(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    out = OutDir(str(tmp_path / "out"))
    out.ensure()
    (tmp_path / "out" / ".extract-trace" / "a.attempts.jsonl").symlink_to(victim)
    for fresh in (True, False):
        with pytest.raises(LinkRefused, match="a symbolic link where a record belongs"):
            AttemptsLog(out, ".extract-trace/a.attempts.jsonl").open(fresh=fresh)
    assert victim.read_text() == "keep me"
    # A source file or trace written where a link sits replaces the link, unfollowed.
    (tmp_path / "out" / "s.jsonl").symlink_to(victim)
    out.write("s.jsonl", b"{}\n")
    assert victim.read_text() == "keep me" and not (tmp_path / "out" / "s.jsonl").is_symlink()


def test_a_linked_record_folder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".extract-trace").symlink_to(elsewhere)
    with pytest.raises(LinkRefused, match="extract-trace: a symbolic link"):
        OutDir(str(tmp_path / "out")).ensure()


def test_a_torn_last_line_is_cut_before_a_log_is_continued(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    out.ensure()
    path = tmp_path / ".extract-trace" / "a.attempts.jsonl"
    path.write_bytes(b'{"type":"segment"}\n{"type":"attempt","answer":"cut sho')
    log = AttemptsLog(out, ".extract-trace/a.attempts.jsonl")
    log.open(fresh=False)
    log.write({"type": "segment", "run_id": "second"})
    log.close()
    lines = path.read_bytes().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["segment", "segment"]


def test_a_log_opens_in_a_known_folder_and_remakes_one_removed_since(tmp_path: Path) -> None:
    """An attempts log's folder is checked once per OutDir, like a write's: the next
    logs open without a mkdir, and a folder removed since is made again."""
    out = OutDir(str(tmp_path / "out"))
    first = AttemptsLog(out, "trace/a.attempts.jsonl")
    first.open(fresh=True)
    first.write({"type": "segment", "n": 1})
    first.close()
    shutil.rmtree(tmp_path / "out" / "trace")
    second = AttemptsLog(out, "trace/b.attempts.jsonl")
    second.open(fresh=True)
    second.write({"type": "segment", "n": 2})
    second.close()
    third = AttemptsLog(out, "trace/c.attempts.jsonl")
    third.open(fresh=True)
    third.close()
    folder = tmp_path / "out" / "trace"
    assert sorted(p.name for p in folder.iterdir()) == ["b.attempts.jsonl", "c.attempts.jsonl"]
    assert json.loads((folder / "b.attempts.jsonl").read_text()) == {"type": "segment", "n": 2}


def test_a_write_remakes_a_folder_removed_after_an_earlier_write(tmp_path: Path) -> None:
    """A write checks its folder once per OutDir: one removed since (by hand, or as
    left empty) is made again, not refused."""
    out = OutDir(str(tmp_path / "out"))
    out.write("trace/a.jsonl", b"one\n")
    shutil.rmtree(tmp_path / "out" / "trace")
    out.write("trace/b.jsonl", b"two\n")
    assert (tmp_path / "out" / "trace" / "b.jsonl").read_bytes() == b"two\n"
    out.delete("trace/b.jsonl")
    out.remove_empty_folder("trace")
    out.write("trace/c.jsonl", b"three\n")
    assert sorted(p.name for p in (tmp_path / "out" / "trace").iterdir()) == ["c.jsonl"]
