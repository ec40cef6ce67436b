"""A corpus that changes every night, through the real CLI (issue 52, ADR 0083): a deleted
segment is named by the next run, retired by `extract --prune`, and retracted from the
context by the next `import` — once; a SIGKILL mid-prune, on a local folder and on S3,
leaves a folder `verify` passes and a rerun completes."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from taguru_ray.context.schema import FILE_NAME
from taguru_ray.contract.names import MANIFEST, RETIRED, output_name
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.retire import read_retired
from tests import s3 as server
from tests.s3 import S3
from tests.support import CONTEXT, REPO, Cli, verify
from tests.test_context_kill import content_dump
from tests.test_datasets import table
from tests.test_import_retract import run as in_process

pytestmark = pytest.mark.slow

s3, s3_env = server.s3, server.s3_env  # the fixtures, registered here by name

TEXTS = {
    "alpha.md": "The Alpha Project runs KafkaBroker in Helsinki.\n\nAlphaService reads Marmalade.",
    "beta.md": "The Beta Project runs KafkaBroker in Lisbon.\n\nBetaService reads Porcelain.",
    "gamma.md": "The Gamma Project runs Quetzalcoatl in Oaxaca.\n\nGammaService reads Obsidian.",
}
GONE_WORDS = ("Quetzalcoatl", "Oaxaca", "Obsidian")

# The CLI as a user runs it, killed with SIGKILL right after the prune's first move: the
# plan is committed, the deleted segment's source file has left --out, nothing else has
# happened (the manifest still holds its entry, no record is written).
KILLED_AFTER_A_MOVE = textwrap.dedent(
    """
    import os, signal, sys
    from taguru_ray.store.outdir import OutDir
    move = OutDir.move
    def killed(self, name, to):
        move(self, name, to)
        os.kill(os.getpid(), signal.SIGKILL)
    OutDir.move = killed
    from taguru_ray.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, text in TEXTS.items():
        (folder / name).write_text(text + "\n")
    return folder


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taguru_ray", *args],
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def search(store: Path, query: str) -> list[str]:
    found = run("search", "--store", str(store), "--json", query)
    assert found.returncode == 0, found.stderr
    return sorted({hit["source"] for hit in json.loads(found.stdout)["hits"]})


def test_a_deleted_segment_is_named_retired_and_retracted_once(cli: Cli, tmp_path: Path) -> None:
    docs, out, store = corpus(tmp_path / "docs"), tmp_path / "out", tmp_path / "ctx"
    gone = str(docs / "gamma.md")
    args = ["--context", CONTEXT, "--out", str(out)]

    assert cli.extract(*args, str(docs)).returncode == 0
    imported = run("import", str(out), "--store", str(store))
    assert imported.returncode == 0 and imported.stdout.count(": imported source") == 3
    assert search(store, "Quetzalcoatl") == [gone]

    (docs / "gamma.md").unlink()
    plain = cli.extract(*args, str(docs))
    assert plain.returncode == 0, plain.stderr
    assert (
        f"taguru: extract: 1 segment(s) in the manifest are no longer among the inputs "
        f"(deleted, renamed or moved): {gone} — their source files are still imported; "
        "--prune retires them" in plain.stderr
    )
    assert (out / output_name(gone)).exists()  # named, nothing retired
    # A run over a subset of the corpus calls nothing an orphan: not its corpus.
    subset = cli.extract(*args, str(docs / "alpha.md"), "--dry-run")
    assert subset.returncode == 0 and "no longer among" not in subset.stderr

    # `extract --prune`, killed with SIGKILL mid-prune: verify passes, a rerun completes.
    killed_prune(cli, cli.env(), *args, "--prune", str(docs))
    left = read_retired(OutDir(str(out)))
    assert left.records == [] and len(left.unfinished) == 1  # the plan, no records yet
    checked = verify(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "was left unfinished" in checked.stdout
    unchanged = run("import", str(out), "--store", str(store))  # the old state: no retraction
    assert unchanged.returncode == 0 and "retracted source" not in unchanged.stdout
    assert "left unfinished" in unchanged.stderr
    assert search(store, "Quetzalcoatl") == [gone]  # the context as it was

    # The nightly recipe reruns it: `extract --prune`, then `import` of the --out.
    nightly = subprocess.run(
        [sys.executable, "jobs/nightly.py", "--import-store", str(store),
         "--address", cli.address, *args, str(docs)],
        env=cli.env(), cwd=REPO, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert nightly.returncode == 0, nightly.stderr
    assert "extract: 0 written, 2 unchanged, 0 failed of 2 segment(s)" in nightly.stdout
    assert f"completed the prune run {left.unfinished[0]} left unfinished" in nightly.stderr
    assert "no longer among the inputs" not in nightly.stderr  # nothing left to name
    assert nightly.stderr.rstrip().endswith("taguru-ray nightly exited 0 (import)")
    # No source file with its text is left where import reads.
    for path in out.glob("*.jsonl"):
        assert not any(word in path.read_text() for word in GONE_WORDS), path
    assert_retired(str(out), gone)
    assert "1 segment(s) retired by extract --prune" in verify(out).stdout
    [line] = [line for line in nightly.stdout.splitlines() if "retracted source" in line]
    assert f"retracted source '{gone}' from context '{CONTEXT}'" in line
    assert "passage removed" in line
    assert search(store, " ".join(GONE_WORDS)) == []
    assert search(store, "Marmalade Porcelain") == [str(docs / "alpha.md"), str(docs / "beta.md")]
    assert_integrity(store)

    held = content_dump(store)
    again = run("import", str(out), "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert "retracted source" not in again.stdout  # once: nothing more to do or say
    assert content_dump(store) == held
    assert_integrity(store)


def shards(folder: Path, rows: dict[str, list[str]]) -> None:
    """A Parquet dataset: a shard a key, its rows' ids; each row's text is TEXTS's."""
    folder.mkdir(exist_ok=True)
    for shard, ids in rows.items():
        texts = [TEXTS[f"{row}.md"] for row in ids]
        pq.write_table(table(id=ids, text=texts), folder / f"{shard}.parquet")


def test_a_row_removed_from_a_dataset_is_named_retired_and_retracted(
    cli: Cli, tmp_path: Path
) -> None:
    ds, out, store = tmp_path / "ds", tmp_path / "out", tmp_path / "ctx"
    shards(ds, {"part-0": ["alpha", "gamma"], "part-1": ["beta"]})
    gone = f"{ds}/part-0.parquet#gamma"
    args = ["--context", CONTEXT, "--out", str(out), "--id-column", "id"]
    first = cli.extract(*args, str(ds))
    assert "extract: 3 written, 0 unchanged, 0 failed of 3 segment(s)" in first.stdout
    imported = in_process("import", str(out), "--store", str(store))
    assert imported.stdout.count(": imported source") == 3
    assert search_in_process(store, "Quetzalcoatl") == [gone]

    shards(ds, {"part-0": ["alpha"]})  # the row removed from its shard
    plain = cli.extract(*args, str(ds))
    assert "extract: 0 written, 2 unchanged, 0 failed of 2 segment(s)" in plain.stdout
    assert f"1 segment(s) in the manifest are no longer among the inputs (deleted, renamed or " \
        f"moved): {gone} — their source files" in plain.stderr  # fmt: skip
    # A run over one shard covers its rows alone: the other shard's are not its corpus.
    subset = cli.extract(*args, str(ds / "part-1.parquet"), "--dry-run")
    assert subset.returncode == 0 and "no longer among" not in subset.stderr

    pruned = cli.extract(*args, "--prune", str(ds))
    assert pruned.returncode == 0, pruned.stderr
    assert "retired 1 segment(s) no longer among the inputs" in pruned.stderr
    assert_retired(str(out), gone)
    retracted = in_process("import", str(out), "--store", str(store))
    [line] = [line for line in retracted.stdout.splitlines() if "retracted source" in line]
    assert f"retracted source '{gone}' from context '{CONTEXT}'" in line
    assert search_in_process(store, " ".join(GONE_WORDS)) == []
    assert search_in_process(store, "Marmalade Porcelain") == [
        f"{ds}/part-0.parquet#alpha",
        f"{ds}/part-1.parquet#beta",
    ]
    again = in_process("import", str(out), "--store", str(store))
    assert again.returncode == 0 and "retracted source" not in again.stdout
    assert_integrity(store)


def search_in_process(store: Path, query: str) -> list[str]:
    found = in_process("search", "--store", str(store), "--json", query)
    assert found.returncode == 0, found.stderr
    return sorted({hit["source"] for hit in json.loads(found.stdout)["hits"]})


def test_a_sigkill_mid_prune_on_s3_leaves_a_folder_verify_passes_and_a_rerun_completes(
    cli: Cli, s3_env: S3, tmp_path: Path
) -> None:
    docs, out = corpus(tmp_path / "docs"), s3_env.prefix("pruned")
    (docs / "beta.md").unlink()  # two segments are enough here
    # A short lease: the killed driver's lease has lapsed by the rerun.
    env = cli.env(**s3_env.env, TAGURU_RAY_LEASE_SECONDS="2")
    args = ["--context", CONTEXT, "--out", out]
    assert cli.extract(*args, str(docs), env=env).returncode == 0
    (docs / "gamma.md").unlink()
    # A rename: the same bytes under a new path, extracted afresh (one completion: the
    # conversation names the path, ADR 0083), the old path retired.
    (docs / "alpha.md").rename(docs / "omega.md")
    cli.simulator.reset()

    killed = killed_prune(cli, env, *args, "--prune", str(docs))
    renamed = f"{docs}/omega.md: the same bytes as {docs}/alpha.md, which the inputs no longer"
    assert renamed in killed.stderr
    lapsed = time.monotonic() + 3  # the dead driver's lease, renewed last at its death
    left = read_retired(OutDir(out))
    assert left.records == [] and len(left.unfinished) == 1
    checked = verify(out)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "was left unfinished" in checked.stdout
    time.sleep(max(0.0, lapsed - time.monotonic()))

    rerun = cli.extract(*args, "--prune", str(docs), env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "extract: 0 written, 1 unchanged, 0 failed of 1 segment(s)" in rerun.stdout
    assert f"completed the prune run {left.unfinished[0]} left unfinished: 2 segment(s)" in (
        rerun.stderr
    )
    assert cli.simulator.stats()["requests"] == 1  # the renamed segment's one chunk
    assert_retired(out, str(docs / "gamma.md"), str(docs / "alpha.md"))


def killed_prune(cli: Cli, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", KILLED_AFTER_A_MOVE, "extract", "--address", cli.address]
    killed = subprocess.run(
        [*command, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return killed


def assert_retired(out: str, *gone: str) -> None:
    store = OutDir(out)
    retired = read_retired(store)
    assert sorted(record.source for record in retired.records) == sorted(gone)
    assert not retired.unfinished
    manifest = json.loads(store.read(MANIFEST) or b"")["documents"]
    for record in retired.records:
        assert not store.exists(output_name(record.source))
        assert record.source not in manifest
        assert store.exists(f"{RETIRED}/{record.run_id}/{output_name(record.source)}")


def assert_integrity(store: Path) -> None:
    """SQLite's own check, and the store's sums: every context's paragraph counters, every
    edge's sum and count those of its attributions, no paragraph without a live source."""
    conn = sqlite3.connect(store / FILE_NAME)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for key, paragraphs, length in conn.execute(
            "SELECT id, paragraphs, paragraph_length FROM contexts"
        ).fetchall():
            counted = conn.execute(
                "SELECT count(*), coalesce(sum(p.length), 0) FROM paragraphs p"
                " JOIN sources s ON s.id = p.source WHERE s.context = ?",
                (key,),
            ).fetchone()
            assert (paragraphs, length) == counted
        for edge, total, count in conn.execute("SELECT id, sum, count FROM edges").fetchall():
            parts = conn.execute(
                "SELECT sum, count FROM attributions WHERE edge = ?", (edge,)
            ).fetchall()
            assert count == sum(c for _, c in parts)
            assert math.isclose(total, math.fsum(s for s, _ in parts), abs_tol=1e-9)
        orphans = conn.execute(
            "SELECT count(*) FROM paragraphs WHERE source NOT IN (SELECT id FROM sources"
            " WHERE has_passage = 1)"
        ).fetchone()[0]
        assert orphans == 0
    finally:
        conn.close()
