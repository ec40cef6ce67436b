"""Import is all-or-nothing per file, and a killed import reruns to the store an
uninterrupted one leaves (issue 19's acceptance; ADR 0032).

A refused file must leave every table byte for byte as it was, rowids and
counters included. A `taguru-ray import` killed with SIGKILL mid-folder must
leave only whole files (the store then equals an import of just those), and
rerunning the same import must leave a store equal to one uninterrupted import.
That comparison is of the store's content, not its bookkeeping, which
legitimately differs: surrogate ids (a rerun retracts and re-inserts a source's
paragraphs under new rowids; every id is resolved to the names it stands for),
`sources.stored_at` (the store's clock at import; compared as set or not), and
the per-write counters `contexts.writes`, `last_write_epoch`, `rev_graph` and
`rev_passages`, and a vector model's `revision` (a rerun's retractions are writes
and revisions of their own).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.context import source_file_bytes, write_source_files
from taguru_ray.context.importer import ImportRefusal, read_stream
from taguru_ray.context.postings import decode_raw
from taguru_ray.context.schema import FILE_NAME
from taguru_ray.context.store import SqliteStore
from tests.support import REPO

FILES = 300
PARAGRAPHS = 4
CONCEPTS = 8  # few names: most edges gather attributions from many files
KILL_AFTER = 150  # files applied before the kill: far enough for float sums to drift


def run_import(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        import_command(*args), env=_env(), capture_output=True, text=True, timeout=600
    )


def import_command(*args: str) -> list[str]:
    # Groups of 16 files: the kill lands between many commits (the default, 8 192
    # paragraphs, would hold this whole folder in one).
    return [sys.executable, "-m", "taguru_ray", "import", "--group-paragraphs", "64", *args]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
    return {**env, "PYTHONPATH": str(REPO)}


def _read_only(store: Path) -> sqlite3.Connection:
    """A connection that cannot write: `mode=ro` beside a live writer (which keeps the WAL
    index valid), else `query_only` (after a kill, opening may have to recover the WAL
    index, which a `mode=ro` connection cannot)."""
    conn = sqlite3.connect(store / FILE_NAME)
    conn.execute("PRAGMA query_only = 1")
    return conn


def raw_dump(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, rowids included."""
    conn = _read_only(store)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            table: sorted(conn.execute(f"SELECT rowid, * FROM {table}").fetchall(), key=repr)
            if _has_rowid(conn, table)
            else sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in tables
        }
    finally:
        conn.close()


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 1")
    except sqlite3.OperationalError:
        return False  # WITHOUT ROWID
    return True


# Each table's rows with every surrogate id replaced by the names it stands for.
_CONTENT = {
    "meta": "SELECT key, value FROM meta",
    "contexts": "SELECT name, context_id, description, pinned, dice_floor, semantic_floor,"
    " rev_config, paragraphs, paragraph_length FROM contexts",
    "names": "SELECT c.name, n.kind, n.name FROM names n JOIN contexts c ON c.id = n.context",
    "aliases": "SELECT c.name, a.kind, a.alias, n.name FROM aliases a"
    " JOIN contexts c ON c.id = a.context JOIN names n ON n.id = a.target",
    "edges": "SELECT c.name, s.name, l.name, o.name, e.sum, e.count FROM edges e"
    " JOIN contexts c ON c.id = e.context JOIN names s ON s.id = e.subject"
    " JOIN names l ON l.id = e.label JOIN names o ON o.id = e.object",
    "attributions": "SELECT s.name, l.name, o.name, src.name, a.sum, a.count, a.paragraph"
    " FROM attributions a JOIN edges e ON e.id = a.edge JOIN names s ON s.id = e.subject"
    " JOIN names l ON l.id = e.label JOIN names o ON o.id = e.object"
    " JOIN sources src ON src.id = a.source",
    "sources": "SELECT c.name, s.name, s.has_passage, s.stored_at IS NOT NULL, s.date, s.tags"
    " FROM sources s JOIN contexts c ON c.id = s.context",
    "paragraphs": "SELECT s.name, g.idx, g.text, g.length FROM paragraphs g"
    " JOIN sources s ON s.id = g.source",
    "questions": "SELECT s.name, q.paragraph, q.question FROM questions q"
    " JOIN sources s ON s.id = q.source",
    "sections": "SELECT s.name, x.paragraph, x.section FROM sections x"
    " JOIN sources s ON s.id = x.source",
    "locators": "SELECT s.name, x.paragraph, x.kind, x.value FROM locators x"
    " JOIN sources s ON s.id = x.source",
    # The vector lane's tables (ADR 0033); a model's `revision` counts its vector writes.
    "vector_models": "SELECT c.name, v.kind, v.model, v.width FROM vector_models v"
    " JOIN contexts c ON c.id = v.context",
    "passage_vectors": "SELECT c.name, s.name, g.idx, v.row, v.vector FROM passage_vectors v"
    " JOIN contexts c ON c.id = v.context JOIN paragraphs g ON g.id = v.paragraph"
    " JOIN sources s ON s.id = g.source",
    "gloss_vectors": "SELECT c.name, n.kind, n.name, v.gloss, v.vector FROM gloss_vectors v"
    " JOIN contexts c ON c.id = v.context JOIN names n ON n.id = v.name",
    "vector_pending": "SELECT c.name, v.kind, s.name, g.idx FROM vector_pending v"
    " JOIN contexts c ON c.id = v.context JOIN paragraphs g ON g.id = v.key"
    " JOIN sources s ON s.id = g.source WHERE v.kind = 'paragraph' UNION ALL"
    " SELECT c.name, v.kind, n.kind, n.name FROM vector_pending v"
    " JOIN contexts c ON c.id = v.context JOIN names n ON n.id = v.key WHERE v.kind = 'name'",
}


def _postings(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """The packed postings (ADR 0066) unpacked: (context, term, source, paragraph, tf,
    length) per posting. Which window a posting sits in follows its paragraph's id, so
    windows and their bounds are bookkeeping; the postings are content."""
    names = dict(conn.execute("SELECT id, name FROM contexts").fetchall())
    where = {
        key: (source, index)
        for key, source, index in conn.execute(
            "SELECT g.id, s.name, g.idx FROM paragraphs g JOIN sources s ON s.id = g.source"
        )
    }
    rows = []
    for context, term, window, data in conn.execute(
        "SELECT context, term, window, data FROM term_windows"
    ):
        for key, tf, length in zip(*decode_raw(window, data), strict=True):
            rows.append((names[context], term, *where[int(key)], int(tf), int(length)))
    return sorted(rows, key=repr)


def content_dump(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's content, ids resolved to names (a table this test does not know yet is
    dumped whole, so a new table fails here until its ids are resolved too)."""
    conn = _read_only(store)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found = {}
        for table in tables:
            if table == "term_windows":  # dangling ids fail as a KeyError here
                found[table] = _postings(conn)
                continue
            sql = _CONTENT.get(table, f"SELECT * FROM {table}")
            rows = conn.execute(sql).fetchall()
            found[table] = sorted(rows, key=repr)
            if table in _CONTENT:  # a join that lost a row is a dangling id
                total = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                assert len(rows) == total, f"{table}: {total - len(rows)} rows with dangling ids"
        return found
    finally:
        conn.close()


def applied_files(store: Path, *, beside_writer: bool = False) -> int:
    """Sources with a stored passage (0 before the file exists)."""
    if not (store / FILE_NAME).is_file():
        return 0
    sql = "SELECT count(*) FROM sources WHERE has_passage = 1"
    try:
        if beside_writer:
            conn = sqlite3.connect(f"file:{store / FILE_NAME}?mode=ro", uri=True)
        else:
            conn = _read_only(store)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError:  # the writer is still creating the file or its tables
        return 0


# ------------------------------------------------------------------ refused files


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A store holding ten files, with aliases, edges, questions, sections and locators."""
    folder = tmp_path / "seed"
    write_source_files(folder, 10, PARAGRAPHS, CONCEPTS)
    store = tmp_path / "store"
    assert run_import(str(folder), "--store", str(store)).returncode == 0
    return store


def _refused_at_apply(tmp_path: Path) -> Path:
    """Two batches: the first new and valid, the second refused only by the store (its
    alias's canonical is interned nowhere) after its passage and facts were written."""
    first = source_file_bytes(500, PARAGRAPHS, CONCEPTS)
    second = source_file_bytes(501, PARAGRAPHS, CONCEPTS).replace(
        b'"canonical":"', '"canonical":"存在しない'.encode()
    )  # no such name
    path = tmp_path / "refused.jsonl"
    path.write_bytes(first + second)
    return path


def _refused_at_parse(tmp_path: Path) -> Path:
    """A valid file whose last line is malformed."""
    path = tmp_path / "malformed.jsonl"
    path.write_bytes(
        source_file_bytes(502, PARAGRAPHS, CONCEPTS) + b'{"paragraph":0,"section":7}\n'
    )
    return path


@pytest.mark.parametrize("refused", [_refused_at_apply, _refused_at_parse])
def test_a_refused_file_leaves_every_table_as_it_was(
    seeded: Path, tmp_path: Path, refused: Any
) -> None:
    path = refused(tmp_path)
    before = raw_dump(seeded)
    done = run_import(str(path), "--store", str(seeded))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"{path}: line ") and "nothing of this file was applied" in (
        done.stderr
    )
    assert raw_dump(seeded) == before


def test_the_apply_refusal_is_the_stores_own(seeded: Path, tmp_path: Path) -> None:
    # What makes the test above meaningful: the file parses, and the store refuses it
    # inside the transaction, after batch 1 and batch 2's passage and facts were written
    # (aliases are applied last, EVALUATE.md §4.1).
    path = _refused_at_apply(tmp_path)
    batches = read_stream(path.read_bytes()).batches
    assert len(batches) == 2
    store = SqliteStore(seeded)
    try:
        with pytest.raises(ImportRefusal) as refusal:
            store.import_batches(batches, create_missing=True)
    finally:
        store.close()
    assert refusal.value.kind == "unknown_reference"


# ------------------------------------------------------------------ killed imports


def _import_in_process(store_dir: Path, paths: list[Path]) -> None:
    store = SqliteStore(store_dir)
    try:
        for path in paths:
            batches = read_stream(path.read_bytes(), name=str(path)).batches
            store.import_batches(batches, create_missing=True)
    finally:
        store.close()


@pytest.mark.parametrize("applied", [1, 150, FILES - 1])
def test_rerunning_over_a_partial_import_equals_one_uninterrupted_import(
    tmp_path: Path, applied: int
) -> None:
    # What a kill leaves once only whole files land (the next test): the first files,
    # then the whole folder again. An edge's sum is the exact sum of its attributions,
    # so retracting and re-adding weights such as 0.1 and 0.7 leaves no last-bit residue.
    paths = write_source_files(tmp_path / "out", FILES, PARAGRAPHS, CONCEPTS)
    whole, rerun = tmp_path / "whole", tmp_path / "rerun"
    _import_in_process(whole, paths)
    _import_in_process(rerun, paths[:applied])
    _import_in_process(rerun, paths)
    assert content_dump(rerun) == content_dump(whole)


def test_a_killed_import_reruns_to_the_store_of_an_uninterrupted_one(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    paths = write_source_files(folder, FILES, PARAGRAPHS, CONCEPTS)
    whole, killed, prefix = tmp_path / "whole", tmp_path / "killed", tmp_path / "prefix"

    proc = subprocess.Popen(
        import_command(str(folder), "--store", str(killed)),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while applied_files(killed, beside_writer=True) < KILL_AFTER and proc.poll() is None:
            assert time.monotonic() < deadline, f"fewer than {KILL_AFTER} files in 300 s"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the import finished before it was killed"
    applied = applied_files(killed)
    assert KILL_AFTER <= applied < FILES

    # Only whole files landed: the killed store holds exactly its first `applied` files.
    done = run_import(*map(str, paths[:applied]), "--store", str(prefix))
    assert done.returncode == 0, done.stderr
    assert content_dump(killed) == content_dump(prefix)

    rerun = run_import(str(folder), "--store", str(killed))
    assert rerun.returncode == 0, rerun.stderr
    done = run_import(str(folder), "--store", str(whole))
    assert done.returncode == 0, done.stderr
    assert applied_files(whole) == FILES
    expected = content_dump(whole)
    assert content_dump(killed) == expected
    assert len(expected["attributions"]) > len(expected["edges"])  # edges shared sources
