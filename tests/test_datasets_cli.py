"""Datasets, trees and prefixes through the real CLI on the simulator (issue 47, ADR 0075).

A two-shard Parquet dataset and a ``.jsonl.gz`` one with --text-column/--id-column write
a source file per row; a rerun asks nothing; a changed row costs its own completion
alone; the same on S3 (moto). --recursive reads a nested tree; without it the
subfolders left unread are named, and an unreadable one fails the run (exit 1): those
in process under --dry-run, where the listing is the whole of it.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from taguru_ray.contract.names import output_name
from taguru_ray.contract.source_file import parse_source_file
from tests import s3 as server
from tests.fuzzing import run
from tests.s3 import S3
from tests.support import CONTEXT, Cli

pytestmark = pytest.mark.slow

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name

BODY = "# {title}\n\nKubota brews sake in Niigata from Gohyakumangoku rice. {tail}\n"


def body(shard: int, row: int, tail: str = "") -> str:
    return BODY.format(title=f"Doc {shard}-{row}", tail=tail or f"Row {row}.")


def parquet_shards(folder: Path, changed: tuple[int, int] | None = None) -> list[str]:
    """Two shards of three rows, ids ``d<shard>-<row>``; the row sources."""
    folder.mkdir(exist_ok=True)
    sources = []
    for shard in range(2):
        ids = [f"d{shard}-{row}" for row in range(3)]
        texts = [
            body(shard, row, "Changed." if (shard, row) == changed else "") for row in range(3)
        ]
        pq.write_table(pa.table({"doc": ids, "body": texts}), folder / f"part-{shard}.parquet")
        sources += [f"{folder}/part-{shard}.parquet#{i}" for i in ids]
    return sources


def jsonl_shard(path: Path, changed: bool = False) -> list[str]:
    rows = [{"doc": f"j{row}", "body": body(9, row, "Changed." if changed and row == 1 else "")}
            for row in range(2)]  # fmt: skip
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    return [f"{path}#j{row}" for row in range(2)]


def written(out: Path | str, source: str) -> dict[str, object]:
    with fsspec.open(f"{out}/{output_name(source)}", "rb") as handle:
        data = handle.read()
    parsed = parse_source_file(data, name=output_name(source))
    return {"id": parsed.header.id, "passage": parsed.passage.text if parsed.passage else None}


def test_parquet_and_jsonl_gz_rows_each_a_source_file_and_reruns_pay_per_row(
    cli: Cli, tmp_path: Path
) -> None:
    sources = parquet_shards(tmp_path / "ds") + jsonl_shard(tmp_path / "rows.jsonl.gz")
    out = tmp_path / "out"
    flags = ["--context", CONTEXT, "--out", str(out), "--text-column", "body", "--id-column", "doc"]
    inputs = [str(tmp_path / "ds"), str(tmp_path / "rows.jsonl.gz")]

    first = cli.extract(*flags, *inputs)
    assert first.returncode == 0, first.stderr
    assert "extract: 8 written, 0 unchanged, 0 failed of 8 segment(s)" in first.stdout
    assert cli.simulator.stats()["requests"] == 8  # one chunk a row
    files = sorted(name for name in os.listdir(out) if name.endswith(".jsonl"))
    assert files == sorted(output_name(source) for source in sources)
    assert written(out, sources[4]) == {"id": sources[4], "passage": body(1, 1)}
    assert written(out, sources[7])["passage"] == body(9, 1)

    cli.simulator.reset()
    again = cli.extract(*flags, *inputs)
    assert again.returncode == 0, again.stderr
    assert "extract: 0 written, 8 unchanged, 0 failed of 8 segment(s)" in again.stdout
    assert cli.simulator.stats()["requests"] == 0

    parquet_shards(tmp_path / "ds", changed=(1, 2))
    jsonl_shard(tmp_path / "rows.jsonl.gz", changed=True)
    cli.simulator.reset()
    third = cli.extract(*flags, *inputs)
    assert third.returncode == 0, third.stderr
    assert "extract: 2 written, 6 unchanged, 0 failed of 8 segment(s)" in third.stdout
    assert cli.simulator.stats()["requests"] == 2  # the two changed rows, no other
    rewritten = [line.split(": ")[0] for line in third.stdout.splitlines() if " → " in line]
    assert rewritten == [sources[5], sources[7]]
    assert written(out, sources[5])["passage"] == body(1, 2, "Changed.")


def test_a_parquet_dataset_on_s3_writes_a_file_per_row_and_a_rerun_asks_nothing(
    cli: Cli, s3_env: S3, tmp_path: Path
) -> None:
    local = parquet_shards(tmp_path / "ds")
    prefix = s3_env.prefix("dataset")
    fs = fsspec.filesystem("s3")
    for shard in range(2):
        fs.put_file(
            str(tmp_path / "ds" / f"part-{shard}.parquet"), f"{prefix}/part-{shard}.parquet"
        )
    sources = [source.replace(str(tmp_path / "ds"), prefix) for source in local]
    out = s3_env.prefix("out")
    env = cli.env(**s3_env.env)
    flags = ["--context", CONTEXT, "--out", out, "--text-column", "body", "--id-column", "doc"]
    first = cli.extract(*flags, prefix, env=env)
    assert first.returncode == 0, first.stderr
    assert "extract: 6 written, 0 unchanged, 0 failed of 6 segment(s)" in first.stdout
    fs.invalidate_cache()
    assert written(out, sources[3]) == {"id": sources[3], "passage": body(1, 0)}
    cli.simulator.reset()
    again = cli.extract(*flags, prefix, env=env)
    assert "extract: 0 written, 6 unchanged, 0 failed of 6 segment(s)" in again.stdout
    assert cli.simulator.stats()["requests"] == 0


def tree(root: Path) -> list[str]:
    """A nested tree of segments; their sources in the order a run reads them."""
    names = ["a.md", "sub/b.md", "sub/deeper/c.txt", "z.md"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body(0, len(name), name))
    return [f"{root}/{name}" for name in names]


def test_recursive_reads_a_nested_tree_without_it_subfolders_are_named_unreadable_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, --dry-run (no Ray, no model): what the listing says is the CLI's."""
    from taguru_ray.store import inputs, walk

    docs = tmp_path / "docs"
    sources = tree(docs)
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    argv = ["extract", "--dry-run", "--context", CONTEXT, "--out", str(tmp_path / "out"), str(docs)]
    ran = run(capsys, argv)
    assert ran.code == 0, ran.err
    assert f"{docs}/a.md: would extract" in ran.out and "sub/b.md" not in ran.out
    assert (
        f"taguru: extract: {docs}: not read: 1 subfolder(s) — sub/ (2 entries); add "
        "--recursive to read them"
    ) in ran.err.splitlines()

    ran = run(capsys, [*argv, "--recursive"])
    assert ran.code == 0, ran.err
    assert [line.split(": ")[0] for line in ran.out.splitlines() if " → " in line] == sources
    assert "not read" not in ran.err

    scandir = os.scandir

    def refuse(path: str) -> object:  # root lists any folder: refuse as mode 000 would
        if str(path).endswith("deeper"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(walk.os, "scandir", refuse)
    monkeypatch.setattr(inputs.os, "scandir", refuse)
    ran = run(capsys, [*argv, "--recursive"])
    assert ran.code == 1
    assert (
        f"taguru: extract: {docs}/sub/deeper: a folder that cannot be listed (Permission "
        "denied) — its files were not read; make it readable and run again"
    ) in ran.err.splitlines()
    assert f"{docs}/sub/b.md: would extract" in ran.out
    assert "Traceback" not in ran.err and "this is a bug" not in ran.err
