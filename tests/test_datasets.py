"""Dataset shards as segments (issue 47, ADR 0075): a row a segment, its source the shard's
path, ``#`` and its id; every bad row refused alone, by name; no Ray, no model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from taguru_ray.contract.names import file_stem, output_name, row_source, split_row, written_id
from taguru_ray.pipeline.read import SegmentRefused
from taguru_ray.store.corpus import Broken
from taguru_ray.store.datasets import ShardRows, shard_part
from taguru_ray.store.inputs import expand
from taguru_ray.store.shard_formats import Columns


def table(**columns: list[Any]) -> pa.Table:
    """A table from Python lists without `pa.array` over a list, which imports pandas
    first (seconds on a loaded machine): strings from their buffers, numbers via numpy."""
    import numpy as np

    from taguru_ray.store.shard_formats import string_array

    return pa.table(
        {
            name: string_array(values)
            if any(isinstance(v, str) for v in values)
            else pa.Array.from_buffers(
                pa.from_numpy_dtype(np.asarray(values).dtype),
                len(values),
                [None, pa.py_buffer(np.asarray(values))],
            )
            for name, values in columns.items()
        }
    )


def rows_of(part: object) -> list[bytes | str]:
    """Each row's text, or the reason it was refused."""
    assert isinstance(part, ShardRows)
    found: list[bytes | str] = []
    for offset in range(len(part)):
        try:
            found.append(part.read(offset))
        except SegmentRefused as refused:
            found.append(str(refused))
    return found


def write_jsonl(path: Path, lines: list[object], gz: bool = False) -> None:
    text = "".join(
        (json.dumps(line) if not isinstance(line, str) else line) + "\n" for line in lines
    )
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())


# ---------------------------------------------------------------- sources and names


def test_a_row_source_is_its_shard_a_mark_and_its_id() -> None:
    source = row_source("data/part-0.parquet", "doc 7")
    assert source == "data/part-0.parquet#doc 7"
    assert split_row(source) == ("data/part-0.parquet", "doc 7")
    assert split_row("s3://b/x.jsonl.gz#a#b") == ("s3://b/x.jsonl.gz", "a#b")
    assert split_row("notes/a#b.md") is None and split_row("notes/a.md") is None
    assert file_stem(source) == "part-0#doc 7"  # --source-id ID/<stem> tells rows apart
    assert written_id(source, "corpus", True) == "corpus/part-0#doc 7"


def test_a_rows_output_name_is_safe_everywhere_unique_and_stable() -> None:
    names = {output_name(row_source("d/p.parquet", i)) for i in ("a", "A", "a?", 'a"*<>|', "日本")}
    assert len(names) == 5  # case, and characters that flatten alike, still apart
    for name in names:
        stem = name.removesuffix(".jsonl")
        assert all(char.isascii() and (char.isalnum() or char in "._-") for char in stem), name
    assert output_name("d/p.parquet#x/../y") == output_name("d/p.parquet#x/../y")
    assert "/" not in output_name("d/p.parquet#x/../y")
    long = output_name(row_source("d/p.parquet", "x" * 500))
    assert len(long.encode()) <= 96 + 1 + 16 + len(".jsonl")


def test_a_md_files_name_stays_the_reference_s() -> None:
    assert output_name("notes/a#1.md") == "notes__a#1.md-" + output_name("notes/a#1.md")[-22:]
    assert output_name("notes/a.md").startswith("notes__a.md-")


# ---------------------------------------------------------------- each format


def test_parquet_rows_by_id_column_with_null_text_refused_alone(tmp_path: Path) -> None:
    shard = tmp_path / "part-0.parquet"
    pq.write_table(table(doc=["a", "b", "c"], body=["one", None, "three"]), shard, row_group_size=2)
    part = shard_part(str(shard), Columns(text="body", id="doc"))
    assert [part.source(i) for i in range(len(part))] == [f"{shard}#{i}" for i in "abc"]
    assert rows_of(part) == [
        b"one",
        "row 1: its text ('body') is null — give the row a text",
        b"three",
    ]
    assert part.locator(2).row == 2 and part.locator(2).row_id == "c"


def test_parquet_rows_by_position_and_integer_ids(tmp_path: Path) -> None:
    shard = tmp_path / "p.parquet"
    pq.write_table(table(n=[10, 20], text=["x", "y"]), shard)
    assert [shard_part(str(shard), Columns()).source(i) for i in (0, 1)] == [
        f"{shard}#0",
        f"{shard}#1",
    ]
    by_id = shard_part(str(shard), Columns(id="n"))
    assert [by_id.source(i) for i in (0, 1)] == [f"{shard}#10", f"{shard}#20"]


def test_jsonl_and_gzip_rows_each_bad_line_one_reason(tmp_path: Path) -> None:
    lines: list[object] = [
        {"id": "a", "text": "alpha"},
        {"id": "b", "text": 5},
        "",
        "{not json",
        {"id": "d"},
        [1, 2],
        {"id": "a", "text": "again"},
        {"id": True, "text": "t"},
    ]
    for gz in (False, True):
        shard = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
        write_jsonl(shard, lines, gz)
        part = shard_part(str(shard), Columns(id="id"))
        assert len(part) == 7  # the blank line is no row
        found = rows_of(part)
        assert found[0] == b"alpha"
        assert found[1] == "row 1: its text ('text') is a number, not a string"
        assert found[2].startswith("not a JSON object (")  # named by "(row 2)" in its source
        assert part.source(2) == f"{shard}#(row 2)"
        assert found[3] == "row 3: no 'text' field — name the text with --text-column"
        assert found[4] == "a JSON array, not an object — a row is an object"
        assert found[5] == "row 5: its id 'a' is row 0's too — ids must be unique in a shard"
        assert found[6] == "its id ('id') is a boolean, not a string or an integer"


def test_csv_rows_every_field_a_string(tmp_path: Path) -> None:
    shard = tmp_path / "t.csv"
    shard.write_text('\ufeffid,text,other\n007,"multi\nline",x\n008\n009,plain,y\n')
    part = shard_part(str(shard), Columns(id="id"))
    assert [part.source(i) for i in range(len(part))] == [
        f"{shard}#{n}" for n in ("007", "008", "009")
    ]
    assert rows_of(part) == [b"multi\nline", "row 1: 1 field(s) where the header has 3", b"plain"]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("a.parquet", b"PAR1 not really", "not a Parquet file it can read"),
        ("a.jsonl.gz", b"\x1f\x8b\x08\x00junk", "cannot be read"),
        ("a.csv", b"id,body\n1,x\n", r"no column 'text' in its header \(columns: id, body\)"),
    ],
)
def test_a_shard_that_cannot_be_a_dataset_is_one_source_failing_by_name(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    shard = tmp_path / name
    shard.write_bytes(content)
    part = shard_part(str(shard), Columns())
    assert isinstance(part, Broken) and part.source(0) == str(shard)
    with pytest.raises(SegmentRefused, match=says):
        part.read(0)


def test_a_missing_or_mistyped_parquet_column_is_named_with_the_fix(tmp_path: Path) -> None:
    shard = tmp_path / "p.parquet"
    pq.write_table(table(id=[1.5], text=[1]), shard)
    with pytest.raises(SegmentRefused, match=r"no column 'body' \(columns: id, text\) — name the"):
        shard_part(str(shard), Columns(text="body")).read(0)
    with pytest.raises(SegmentRefused, match="holds int64, not strings"):
        shard_part(str(shard), Columns()).read(0)


def test_a_gzip_cut_short_keeps_the_rows_before_it_and_says_where(tmp_path: Path) -> None:
    shard = tmp_path / "r.jsonl.gz"
    body = "".join(json.dumps({"text": f"row {i} " + "x" * 2000}) + "\n" for i in range(50))
    whole = gzip.compress(body.encode())
    shard.write_bytes(whole[: len(whole) * 2 // 3])
    part = shard_part(str(shard), Columns())
    found = rows_of(part)
    assert all(isinstance(text, bytes) for text in found[:-1]) and len(found) > 1
    assert isinstance(found[-1], str) and "cannot be read from here" in found[-1]


def test_rows_are_read_again_from_the_start_when_asked_out_of_order(tmp_path: Path) -> None:
    shard = tmp_path / "r.jsonl"
    write_jsonl(shard, [{"text": str(i)} for i in range(5)])
    part = shard_part(str(shard), Columns())
    assert part.read(3) == b"3" and part.read(1) == b"1" and part.read(4) == b"4"


def test_a_big_parquet_row_group_is_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """One row group of 72 MB of text: Arrow holds well under half of it at any time (a
    batch is about 4 MiB of text, `BATCH_BYTES`; 28 MB was the peak at 24 MB and 96 MB)."""
    shard = tmp_path / "big.parquet"
    texts = [f"{i} " + "y" * 12_000 for i in range(6_000)]
    pq.write_table(table(text=texts), shard, row_group_size=6_000, compression="none")
    pool = pa.default_memory_pool()
    part = shard_part(str(shard), Columns())
    before = pool.bytes_allocated()
    peak = 0
    for offset in range(len(part)):
        assert part.read(offset) == texts[offset].encode()
        peak = max(peak, pool.bytes_allocated() - before)
    assert peak < 36 * 1024 * 1024


# ---------------------------------------------------------------- folders and trees


def test_a_folder_of_shards_is_a_dataset_in_name_order(tmp_path: Path) -> None:
    for n in (1, 0):
        write_jsonl(tmp_path / f"part-{n}.jsonl", [{"text": "a"}, {"text": "b"}])
    corpus = expand([str(tmp_path)])
    assert list(corpus) == [f"{tmp_path}/part-{n}.jsonl#{i}" for n in (0, 1) for i in (0, 1)]
    assert corpus.serial and corpus.serial_end(1) == 2 and corpus.serial_end(2) == 4
    assert list(corpus.row_sources(f"{tmp_path}/part-1.jsonl")) == corpus[2:4]


def test_shards_beside_md_files_and_subfolders_are_named_not_read(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    write_jsonl(tmp_path / "rows.jsonl", [{"text": "a"}])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("x")
    (tmp_path / "sub" / "c.md").write_text("x")
    (tmp_path / ".hidden").mkdir()
    corpus = expand([str(tmp_path)])
    assert list(corpus) == [f"{tmp_path}/a.md"]
    assert corpus.notes == [
        f"{tmp_path}: not read: 1 dataset shard(s) beside its .md/.txt files — rows.jsonl; "
        "name them (or a folder of shards alone) to read their rows",
        f"{tmp_path}: not read: 1 subfolder(s) — sub/ (2 entries); add --recursive to read them",
    ]


def test_recursive_reads_every_depth_in_path_order(tmp_path: Path) -> None:
    for path in ("b.md", "a/z.md", "a/b/deep.md", "a.md", "a/b.txt", "a/.skip/x.md", "c.json",
                 "a/.h.md"):  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    corpus = expand([str(tmp_path)], recursive=True)
    names = [source.removeprefix(f"{tmp_path}/") for source in corpus]
    assert names == ["a.md", "a/.h.md", "a/b.txt", "a/b/deep.md", "a/z.md", "b.md"]
    assert names == sorted(names, key=lambda name: name.encode()) and corpus.notes == []


def test_an_unreadable_subfolder_is_a_source_that_fails_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from taguru_ray.store import inputs, walk

    (tmp_path / "a.md").write_text("x")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "b.md").write_text("x")
    scandir = os.scandir

    def refuse(path: str) -> object:  # root lists any folder: refuse as mode 000 would
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(walk.os, "scandir", refuse)
    monkeypatch.setattr(inputs.os, "scandir", refuse)
    for recursive in (True, False):
        corpus = expand([str(tmp_path)], recursive=recursive)
        assert list(corpus) == [f"{tmp_path}/a.md", f"{tmp_path}/locked"]
        with pytest.raises(SegmentRefused, match=r"cannot be listed \(Permission denied\)"):
            corpus.read(1)


# ---------------------------------------------------------------- the Python API


def test_a_pyarrow_table_gives_the_data_api_its_rows_by_the_named_columns() -> None:
    """`taguru_ray.data.extract(table, text_column=…, id_column=…)` stages these rows (the
    run itself is `test_api_data.py`'s); files on disk go through `taguru_ray.extract`."""
    from taguru_ray.data import _gather, _rows
    from taguru_ray.errors import UsageError

    given = table(doc=[7, 8], body=["seven", "eight"], other=[1, 2])
    assert _gather(_rows(given), ("doc", "body")) == {"7": b"seven", "8": b"eight"}
    with pytest.raises(UsageError, match=r"dataset row 0: no 'text' column — each row needs"):
        _gather(_rows(given), ("doc", "text"))


def test_the_python_api_takes_the_dataset_settings_by_name() -> None:
    from taguru_ray.api import _flags

    flags = _flags("d.parquet", "out", "c", {"text_column": "body", "id_column": "doc",
                                              "recursive": True})  # fmt: skip
    assert (flags["text_column"], flags["id_column"], flags["recursive"]) == ("body", "doc", True)


def test_a_hidden_md_file_is_read_as_the_reference_reads_it_a_hidden_folder_unnamed(
    tmp_path: Path,
) -> None:
    (tmp_path / ".draft.md").write_text("x")
    (tmp_path / ".git").mkdir()
    corpus = expand([str(tmp_path)])
    assert list(corpus) == [f"{tmp_path}/.draft.md"] and corpus.notes == []
