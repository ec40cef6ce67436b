"""The packed postings (ADR 0066): rows per term and window, and the exact top k over them."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from taguru_ray.context import postings, schema, topk
from taguru_ray.context.bm25 import Postings, score
from taguru_ray.context.passages import _bm25
from taguru_ray.context.postings import PostingsBuffer, decode_raw
from taguru_ray.context.store import SqliteStore
from taguru_ray.context.terms import query_terms


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postings, "WINDOW_BITS", 2)
    monkeypatch.setattr(postings, "WINDOW", 4)


def _connection(tmp_path: Path) -> sqlite3.Connection:
    schema.create(tmp_path / schema.FILE_NAME)
    return sqlite3.connect(tmp_path / schema.FILE_NAME)


def _rows(conn: sqlite3.Connection) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    found = {}
    for term, window, count, max_tf, min_length, top_length, data in conn.execute(
        "SELECT term, window, count, max_tf, min_length, top_length, data FROM term_windows"
    ):
        ids, tf, length = decode_raw(window, data)
        assert (count, max_tf, min_length) == (len(ids), tf.max(), length.min())
        assert top_length == length[tf == max_tf].min()
        found[(term, window)] = list(zip(ids.tolist(), tf.tolist(), length.tolist(), strict=True))
    return found


def test_flushes_append_to_their_rows_in_id_order(tmp_path: Path, small_windows: None) -> None:
    conn = _connection(tmp_path)
    buffer = PostingsBuffer()
    buffer.add(1, 1, 7, {"a": 2, "b": 1})
    buffer.add(1, 2, 3, {"a": 1})
    buffer.flush(conn)
    buffer.add(1, 3, 5, {"a": 4})
    buffer.add(1, 9, 2, {"b": 1})
    buffer.flush(conn)
    assert _rows(conn) == {
        ("a", 0): [(1, 2, 7), (2, 1, 3), (3, 4, 5)],
        ("b", 0): [(1, 1, 7)],
        ("b", 2): [(9, 1, 2)],
    }
    postings.remove(conn, 1, {1: ["a", "b"], 9: ["b"]})
    assert _rows(conn) == {("a", 0): [(2, 1, 3), (3, 4, 5)]}  # emptied rows are deleted


def test_a_schema_1_store_is_packed_when_opened(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / schema.FILE_NAME)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE paragraphs (id INTEGER PRIMARY KEY, source INTEGER NOT NULL,"
        " idx INTEGER NOT NULL, text TEXT NOT NULL, length INTEGER NOT NULL,"
        " UNIQUE (source, idx));"
        "INSERT INTO paragraphs VALUES (1, 1, 0, 'x', 3), (2, 1, 1, 'y', 4);"
        "CREATE TABLE postings (context INTEGER NOT NULL, term TEXT NOT NULL,"
        " paragraph INTEGER NOT NULL, tf INTEGER NOT NULL,"
        " PRIMARY KEY (context, term, paragraph)) WITHOUT ROWID;"
        "INSERT INTO postings VALUES (1, 'a', 2, 1), (1, 'a', 1, 2), (1, 'b', 2, 3);"
    )
    conn.close()
    schema.create(tmp_path / schema.FILE_NAME)
    conn = sqlite3.connect(tmp_path / schema.FILE_NAME)
    assert _rows(conn) == {("a", 0): [(1, 2, 3), (2, 1, 4)], ("b", 0): [(2, 3, 4)]}
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "postings" not in tables


def _exhaustive(conn: sqlite3.Connection, terms: list[str], limit: int) -> list[tuple]:
    """The search before the index: every posting of every term scored, cut at `limit`
    with every tie, ordered by score, source, paragraph."""
    live, total = conn.execute("SELECT paragraphs, paragraph_length FROM contexts").fetchone()
    found = []
    for term in terms:
        parts = [decode_raw(w, d) for w, d in conn.execute(
            "SELECT window, data FROM term_windows WHERE term = ? ORDER BY window", (term,)
        )]  # fmt: skip
        if parts:
            ids, tf, length = (np.concatenate(column) for column in zip(*parts, strict=True))
            found.append(Postings(ids, tf.astype(np.float32), length.astype(np.float32)))
    keys, scores = score(found, live, total)
    named = {
        key: (source, index)
        for key, source, index in conn.execute(
            "SELECT g.id, s.name, g.idx FROM paragraphs g JOIN sources s ON s.id = g.source"
        )
    }
    hits = sorted((-s, *named[k]) for k, s in zip(keys.tolist(), scores.tolist(), strict=True))
    return [(np.float32(-s), source, index) for s, source, index in hits[:limit]]


def test_a_load_reads_dense_and_scattered_windows_alike(
    tmp_path: Path, small_windows: None
) -> None:
    conn = _connection(tmp_path)
    buffer = PostingsBuffer()
    for paragraph in range(1, 120):
        buffer.add(1, paragraph, 3 + paragraph % 5, {"a": 1 + paragraph % 3, "b": 1})
        if paragraph % 9 == 0:
            buffer.add(1, paragraph + 1000, 4, {"a": 2})  # a row in a far window
    buffer.flush(conn)
    rows = _rows(conn)
    heads = postings.windows(conn, 1, "a")
    assert sorted(heads[:, 0].tolist()) == sorted(w for t, w in rows if t == "a")
    for chosen in ([0, 1, 2, 3, 5], [2, 7, 29, 252, 276], [4], []):  # a range scan; lookups
        found = postings.load(conn, 1, ["a", "b", "c"], chosen)
        for term in ("a", "b", "c"):
            expected = [p for w in sorted(chosen) for p in rows.get((term, w), [])]
            part = found.get(term)
            got = [] if part is None else list(zip(part.paragraphs.tolist(), part.tf.tolist(),
                                                   part.length.tolist(), strict=True))  # fmt: skip
            assert got == expected, (term, chosen)


@pytest.mark.parametrize(("growth", "rows_per_read"), [(4, 16), (2, 0), (8, 10_000)])
def test_the_top_k_equals_scoring_every_posting(
    tmp_path: Path,
    small_windows: None,
    monkeypatch: pytest.MonkeyPatch,
    growth: int,
    rows_per_read: int,
) -> None:
    # A tiny vocabulary: many equal scores, so the cut falls among ties; windows of four
    # paragraphs, so most of them are skipped. The other terms are read one at a time
    # (rows_per_read 0), in groups, or all at once.
    monkeypatch.setattr(topk, "_GROWTH", growth)
    monkeypatch.setattr(topk, "_ROWS_PER_READ", rows_per_read)
    rng = random.Random(42)
    words = ["酒造", "水", "米", "koji", "rice", "AppState", "蔵元", "杜氏", "秋", "冬"]
    store = SqliteStore(tmp_path / "store")
    for number in range(60):
        texts = [" ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(5)]
        lines = [{"taguru_batch": 1, "context": "c", "source": f"s{number:02d}", "create": {}},
                 {"passage": "\n\n".join(texts)}]  # fmt: skip
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        store.import_stream(data.encode())
        if number % 7 == 0:  # a retraction in the history
            store.import_stream(data.encode())
    conn = sqlite3.connect(tmp_path / "store" / schema.FILE_NAME)
    key, live, total = conn.execute(
        "SELECT id, paragraphs, paragraph_length FROM contexts"
    ).fetchone()
    for _ in range(80):
        terms = query_terms(" ".join(rng.sample(words, rng.randint(1, 4))))
        limit = rng.choice([1, 2, 3, 5, 10, 40])
        got = [
            (s, source, i) for s, source, i, _ in _bm25(conn, key, terms, live, total, None, limit)
        ]
        assert got == _exhaustive(conn, terms, limit), (terms, limit)
