"""The manifest's journal on a local disk (`store/journal.py`, ADR 0044): a log per
writing process, read back oldest file first, a torn last line passed over, and folded
away by compaction."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from taguru_ray.contract.manifest_entry import ENTRY_DEFAULTS
from taguru_ray.contract.names import MANIFEST, MANIFEST_JOURNAL
from taguru_ray.store.journal import Journal, entry_line, journal_documents
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.manifest_index import MANIFEST_INDEX
from taguru_ray.store.outdir import OutDir


def entry(**fields: object) -> dict[str, Any]:
    base = {"sha256": "s", "model": "m", "prompt_version": 101, "output": "a.jsonl"}
    return {**ENTRY_DEFAULTS, "context": "c", **base, **fields}


def logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / MANIFEST_JOURNAL).iterdir())


def test_each_process_appends_to_one_log_of_its_own(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    one, two = Journal(out), Journal(out)  # two segment workers
    one.write("a.md", entry(output="a.jsonl"))
    one.write("b.md", entry(output="b.jsonl"))
    two.write("c.md", entry(output="c.jsonl"))
    one.close()
    two.close()
    found = logs(tmp_path)
    assert len(found) == 2 and all(p.suffix == ".jsonl" for p in found)
    assert sorted(len(p.read_bytes().splitlines()) for p in found) == [1, 2]
    manifest, note = Manifest.load(out)
    assert note is None
    assert {s: manifest.entries.get(s)["output"] for s in ("a.md", "b.md", "c.md")} == {
        "a.md": "a.jsonl",
        "b.md": "b.jsonl",
        "c.md": "c.jsonl",
    }


def test_a_later_log_replaces_an_earlier_ones_entry_for_the_same_source(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    older, newer = Journal(out), Journal(out)
    newer.write("a.md", entry(sha256="new"))
    older.write("a.md", entry(sha256="old"))
    older.close()
    newer.close()
    by_content = {p.read_bytes().count(b'"new"'): p for p in logs(tmp_path)}
    os.utime(by_content[0], (1_000_000, 1_000_000))  # the "old" log: last written long ago
    os.utime(by_content[1], (2_000_000, 2_000_000))
    assert Manifest.load(out)[0].entries.get("a.md")["sha256"] == "new"


def test_a_torn_last_line_is_passed_over_and_the_lines_before_it_kept(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    journal = Journal(out)
    journal.write("a.md", entry(output="a.jsonl"))
    journal.close()
    [log] = logs(tmp_path)
    with open(log, "ab") as handle:  # a kill in the middle of the next append
        handle.write(entry_line("b.md", entry(output="b.jsonl"))[:20])
    manifest, note = Manifest.load(out)
    assert note is None and manifest.entries.get("b.md") is None
    assert manifest.entries.get("a.md")["output"] == "a.jsonl"


def test_a_log_older_than_the_single_file_is_not_overlaid(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    journal = Journal(out)
    journal.write("a.md", entry(sha256="journal"))
    journal.close()
    out.write(MANIFEST, b'{\n  "documents": {}\n}\n')  # a tool that knows no journal, after it
    [log] = logs(tmp_path)
    os.utime(log, (1_000_000, 1_000_000))
    assert Manifest.load(out)[0].entries.get("a.md") is None


def test_compaction_folds_every_log_and_leaves_the_single_file_alone(tmp_path: Path) -> None:
    out = OutDir(str(tmp_path))
    killed = Journal(out)  # a run killed before its compaction left its log
    killed.write("old.md", entry(output="old.jsonl"))
    killed.close()
    manifest, _ = Manifest.load(out)
    manifest.record("a.md", entry(output="a.jsonl"))
    worker = Journal(out)  # what this run's worker wrote, and the driver remembered
    worker.write("b.md", entry(output="b.jsonl"))
    manifest.remember("b.md", entry(output="b.jsonl"))
    manifest.compact()
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_INDEX, MANIFEST]
    reloaded = Manifest.load(out)[0].entries
    assert sorted(reloaded) == ["a.md", "b.md", "old.md"]


def test_a_journal_file_yields_its_documents() -> None:
    assert list(journal_documents("x/ab.jsonl", b'{"a":1}\n{"b":2}\n')) == [b'{"a":1}', b'{"b":2}']
    assert list(journal_documents("x/ab.json", b'{"a":1}')) == [b'{"a":1}']
