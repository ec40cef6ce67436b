"""A run's corpus and its orphans (ADR 0083): what the positional inputs cover, and the
manifest's paths they cover but no longer hold."""

from __future__ import annotations

from pathlib import Path

from taguru_ray.store.inputs import expand
from taguru_ray.store.orphans import Coverage, orphans_line

MANIFEST = [
    "docs/a.md",
    "docs/b.md",
    "docs/c.md",  # deleted since
    "docs/notes.txt",
    "docs/sub/d.md",  # a subfolder: no folder argument reads it
    "docs/e.jsonl",  # no segment suffix: a folder never contributes it
    "docsx/f.md",  # another folder that shares the prefix's spelling
    "other/g.md",  # written by a run over another folder
    "/abs/docs/a.md",  # the same file under another spelling is another source
]


def test_a_folder_argument_covers_its_own_segment_files_only() -> None:
    corpus = Coverage([("docs/", True)], ["docs/a.md", "docs/b.md", "docs/notes.txt"])
    covered = [path for path in MANIFEST if corpus.covers(path)]
    assert covered == ["docs/a.md", "docs/b.md", "docs/c.md", "docs/notes.txt"]
    assert corpus.orphans(lambda: MANIFEST) == ["docs/c.md"]


def test_a_file_argument_covers_that_path_alone() -> None:
    # A run over one file (or the files a shell glob expanded to) calls nothing else an
    # orphan: the rest of the manifest is not its corpus.
    corpus = Coverage([("docs/a.md", False), ("docs/b.md", False)], ["docs/a.md", "docs/b.md"])
    assert [path for path in MANIFEST if corpus.covers(path)] == ["docs/a.md", "docs/b.md"]
    assert corpus.orphans(lambda: MANIFEST) == []


def test_a_url_prefix_is_a_folder_like_any_other() -> None:
    corpus = Coverage([("s3://bucket/docs/", True)], ["s3://bucket/docs/a.md"])
    manifest = ["s3://bucket/docs/a.md", "s3://bucket/docs/b.md", "s3://bucket/docs/x/c.md"]
    assert corpus.orphans(lambda: manifest) == ["s3://bucket/docs/b.md"]


def test_expanded_arguments_keep_the_folder_as_typed(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.md", "b.txt"):
        (folder / name).write_text("text\n")
    single = tmp_path / "one.md"
    single.write_text("one\n")
    for typed in (str(folder), f"{folder}/"):
        corpus = Coverage.of(expand([typed, str(single)]))
        gone = f"{folder}/gone.md"
        assert corpus.covers(gone) and not corpus.holds(gone)
        assert corpus.holds(f"{folder}/a.md") and corpus.holds(str(single))
        listed = [f"{folder}/a.md", gone, str(single)]
        assert corpus.orphans(lambda listed=listed: listed) == [gone]  # type: ignore[misc]


def test_the_line_counts_them_names_the_first_three_and_says_what_prune_does() -> None:
    orphans = ["docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md", "docs/\x1b[31mred.md"]
    line = orphans_line(orphans, prune=False)
    assert line.startswith("5 segment(s) in the manifest are no longer among the inputs")
    assert "docs/a.md, docs/b.md, docs/c.md and 2 more" in line
    assert "--prune retires them" in line and "the next import retracts them" in line
    assert "this run" in orphans_line(orphans[:1], prune=True)
    assert "\x1b" not in orphans_line(orphans[4:], prune=False)  # a name cannot paint the line
