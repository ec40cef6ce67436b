"""A run's corpus and its orphans (ADR 0083): what the positional inputs cover, and the
manifest's sources they cover but no longer hold — files, and dataset rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from taguru_ray.store.cover import Cover, shard_of
from taguru_ray.store.inputs import expand
from taguru_ray.store.orphans import Coverage, orphans_line

MANIFEST = [
    "docs/a.md",
    "docs/b.md",
    "docs/c.md",  # deleted since
    "docs/notes.txt",
    "docs/sub/d.md",  # a subfolder: no folder argument reads it
    "docs/e.jsonl",  # a shard's path is no source: its rows are
    "docsx/f.md",  # another folder that shares the prefix's spelling
    "other/g.md",  # written by a run over another folder
    "/abs/docs/a.md",  # the same file under another spelling is another source
]


def test_a_folder_argument_covers_its_own_segment_files_only() -> None:
    corpus = Coverage(
        [Cover.listed("docs", rows=False)], ["docs/a.md", "docs/b.md", "docs/notes.txt"]
    )
    covered = [path for path in MANIFEST if corpus.covers(path)]
    assert covered == ["docs/a.md", "docs/b.md", "docs/c.md", "docs/notes.txt"]
    assert corpus.orphans(lambda: MANIFEST) == ["docs/c.md"]


def test_a_file_argument_covers_that_path_alone() -> None:
    # A run over one file (or the files a shell glob expanded to) calls nothing else an
    # orphan: the rest of the manifest is not its corpus.
    corpus = Coverage(
        [Cover.file("docs/a.md"), Cover.file("docs/b.md")], ["docs/a.md", "docs/b.md"]
    )
    assert [path for path in MANIFEST if corpus.covers(path)] == ["docs/a.md", "docs/b.md"]
    assert corpus.orphans(lambda: MANIFEST) == []


def test_a_url_prefix_is_a_folder_like_any_other() -> None:
    corpus = Coverage([Cover.listed("s3://bucket/docs/", rows=False)], ["s3://bucket/docs/a.md"])
    manifest = ["s3://bucket/docs/a.md", "s3://bucket/docs/b.md", "s3://bucket/docs/x/c.md"]
    assert corpus.orphans(lambda: manifest) == ["s3://bucket/docs/b.md"]


ROWS = [
    "data/p0.parquet#a",
    "data/p0.parquet#b",  # removed from its shard (or its id changed)
    "data/p1.parquet#c",  # its shard deleted altogether
    "data/p2.parquet#d",  # a shard that could not be listed: not judged
    "data/p0.parquet#x.md",  # a row whose id ends .md is a row all the same
    "data/x.md",  # a file the folder would read, deleted
    "data/sub/p3.parquet#e",  # a subfolder's shard: only a tree reads it
    "data/.hid/p4.parquet#f",  # a hidden folder: no tree enters it
    "data/p0.parquet",  # no row source: a file the folder never lists
]


@pytest.mark.parametrize(
    ("cover", "held", "orphans"),
    [
        (  # a shard argument covers its rows, whatever their ids
            [Cover.shard("data/p0.parquet")],
            ["data/p0.parquet#a"],
            ["data/p0.parquet#b", "data/p0.parquet#x.md"],
        ),
        (  # a folder of shards: its shards' rows, a deleted shard's too, and its files
            [Cover.listed("data", rows=True, unknown=("data/p2.parquet",))],
            ["data/p0.parquet#a", "data/p0.parquet#x.md"],
            ["data/p0.parquet#b", "data/p1.parquet#c", "data/x.md"],
        ),
        (  # a tree of shards: every depth but a hidden folder's
            [Cover.listed("data/", rows=True, deep=True, unknown=("data/sub/",))],
            ["data/p0.parquet#a"],
            [
                *("data/p0.parquet#b", "data/p1.parquet#c", "data/p2.parquet#d"),
                *("data/p0.parquet#x.md", "data/x.md"),
            ],
        ),
        (  # a folder read for its .md files does not read the shards beside them
            [Cover.listed("data", rows=False)],
            ["data/x.md"],
            [],
        ),
        (  # a shard that could not be listed whole judges no row
            [Cover.shard("data/p0.parquet", known=False)],
            [],
            [],
        ),
    ],
)
def test_what_a_dataset_argument_covers(
    cover: list[Cover], held: list[str], orphans: list[str]
) -> None:
    assert Coverage(cover, held).orphans(lambda: ROWS) == orphans


def test_a_row_source_splits_at_its_shard_name() -> None:
    assert shard_of("s3://b/x.jsonl.gz#a#b.md") == "s3://b/x.jsonl.gz"
    assert shard_of("notes/a#b.md") is None and shard_of("data/p0.parquet") is None


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


def test_expanded_shards_cover_their_rows_and_a_cut_shard_none(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": f"row {name}\n"} for name in ("a", "b")]  # ids: positions
    (data / "p0.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    body = "".join(json.dumps({"text": f"row {i} " + "x" * 2000}) + "\n" for i in range(50))
    whole = gzip.compress(body.encode())
    (data / "p1.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])  # cut part-way
    manifest = [f"{data}/p0.jsonl#{i}" for i in (0, 1, 2)] + [f"{data}/p1.jsonl.gz#49"]
    manifest += [f"{data}/gone.jsonl#0"]
    corpus = Coverage.of(expand([str(data)]))
    assert corpus.holds(f"{data}/p0.jsonl#1") and corpus.holds(f"{data}/p1.jsonl.gz#0")
    assert corpus.orphans(lambda: manifest) == [f"{data}/p0.jsonl#2", f"{data}/gone.jsonl#0"]
    one = Coverage.of(expand([str(data / "p0.jsonl")]))  # a shard argument: its rows alone
    assert one.orphans(lambda: manifest) == [f"{data}/p0.jsonl#2"]


def test_the_line_counts_them_names_the_first_three_and_says_what_prune_does() -> None:
    orphans = ["docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md", "docs/\x1b[31mred.md"]
    line = orphans_line(orphans, prune=False)
    assert line.startswith("5 segment(s) in the manifest are no longer among the inputs")
    assert "docs/a.md, docs/b.md, docs/c.md and 2 more" in line
    assert "--prune retires them" in line and "the next import retracts them" in line
    assert "this run" in orphans_line(orphans[:1], prune=True)
    assert "\x1b" not in orphans_line(orphans[4:], prune=False)  # a name cannot paint the line
