"""A term's postings as packed windows: one row per (context, term, window) (ADR 0066).

A window is a range of ``WINDOW`` consecutive paragraph ids; its row holds the
term's postings there as one blob — paragraph offsets (uint16), term counts and
paragraph lengths (uint32), in id order — with the window's posting count, its
largest term count and its shortest length beside it. The count summed over a
term's rows is its df; the largest count and shortest length bound what any
posting of the window can add to a score, whatever the corpus statistics are at
query time, so a search skips the windows that cannot reach its top k (`topk`).

Writes go through a `PostingsBuffer`: an import adds each paragraph's term counts
and the buffer writes each touched row once, read-modify-write, when the
transaction's batches are all applied — a row per term and window rather than a
row per posting. Paragraph ids only grow, so new postings append to a row. A
retraction removes its paragraphs' postings from their rows (`remove`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

WINDOW_BITS = 11
WINDOW = 1 << WINDOW_BITS  # paragraph ids per window: small enough to skip, few enough rows
# One posting: its paragraph's offset in the window, its term count, the paragraph's length.
RECORD = np.dtype([("offset", "<u2"), ("tf", "<u4"), ("length", "<u4")])  # packed: 10 bytes

TABLE = """
CREATE TABLE IF NOT EXISTS term_windows (
    context INTEGER NOT NULL,
    term TEXT NOT NULL,
    window INTEGER NOT NULL,      -- paragraph id >> WINDOW_BITS
    count INTEGER NOT NULL,       -- postings in the window: summed over windows, the df
    max_tf INTEGER NOT NULL,      -- the largest term count here
    min_length INTEGER NOT NULL,  -- the shortest paragraph here (its questions included)
    top_length INTEGER NOT NULL,  -- the shortest paragraph whose tf is max_tf
    data BLOB NOT NULL,           -- RECORDs in id order: appended by SQL's ||
    PRIMARY KEY (context, term, window)
) WITHOUT ROWID
"""


_HEAD_COLUMNS = ("count", "max_tf", "min_length", "top_length")


@dataclass(frozen=True)
class Window:
    """Postings: absolute paragraph ids (int64), tf and length (uint32, as stored)."""

    paragraphs: np.ndarray
    tf: np.ndarray
    length: np.ndarray


def encode(ids: np.ndarray, tf: np.ndarray, length: np.ndarray) -> bytes:
    records = np.empty(len(ids), RECORD)
    records["offset"] = ids & (WINDOW - 1)
    records["tf"] = tf
    records["length"] = length
    return records.tobytes()


def decode_raw(window: int, data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids int64, tf uint32, length uint32) of one row."""
    records = np.frombuffer(data, RECORD)
    ids = records["offset"].astype(np.int64) + (window << WINDOW_BITS)
    return ids, records["tf"], records["length"]


@dataclass
class PostingsBuffer:
    """Postings added inside one transaction, written at `flush`: one upsert per term and
    window, appending to the row in SQL. `paragraphs` names every id buffered, so a
    retraction of one of them in the same transaction flushes first."""

    entries: list[tuple[int, int, int, Mapping[str, int]]] = field(default_factory=list)
    paragraphs: set[int] = field(default_factory=set)

    def add(self, context: int, paragraph: int, length: int, counts: Mapping[str, int]) -> None:
        self.entries.append((context, paragraph, length, counts))
        self.paragraphs.add(paragraph)

    def absorb(self, other: PostingsBuffer) -> None:
        """Take another buffer's postings (a file's, once its savepoint is released)."""
        self.entries.extend(other.entries)
        self.paragraphs |= other.paragraphs
        other.clear()

    def clear(self) -> None:
        self.entries.clear()
        self.paragraphs.clear()

    def flush(self, conn: sqlite3.Connection) -> None:
        """Append every buffered posting to its row, then forget them. Paragraph ids only
        grow, so appending keeps each row in id order."""
        rows: dict[tuple[int, str, int], list[tuple[int, int, int]]] = {}
        for context, paragraph, length, counts in sorted(self.entries, key=lambda e: e[1]):
            window, offset = paragraph >> WINDOW_BITS, paragraph & (WINDOW - 1)
            for term, tf in counts.items():
                rows.setdefault((context, term, window), []).append((offset, tf, length))
        conn.executemany(
            "INSERT INTO term_windows (context, term, window, count, max_tf, min_length,"
            " top_length, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (context, term, window) DO UPDATE SET"
            " count = count + excluded.count, max_tf = max(max_tf, excluded.max_tf),"
            " min_length = min(min_length, excluded.min_length),"
            " top_length = CASE WHEN excluded.max_tf > max_tf THEN excluded.top_length"
            " WHEN excluded.max_tf < max_tf THEN top_length"
            " ELSE min(top_length, excluded.top_length) END,"
            " data = CAST(data || excluded.data AS BLOB)",  # || makes text: the bytes, as a blob
            [
                (context, term, window, *_bounds(added), np.array(added, RECORD).tobytes())
                for (context, term, window), added in rows.items()
            ],
        )  # fmt: skip
        self.clear()


def _bounds(added: list[tuple[int, int, int]]) -> tuple[int, int, int, int]:
    """(count, largest tf, shortest length, shortest length at the largest tf) of (offset,
    tf, length) postings."""
    top = max(p[1] for p in added)
    shortest = min(p[2] for p in added)
    return len(added), top, shortest, min(p[2] for p in added if p[1] == top)


def _write(
    conn: sqlite3.Connection,
    context: int,
    term: str,
    window: int,
    ids: np.ndarray,
    tf: np.ndarray,
    length: np.ndarray,
) -> None:
    if not len(ids):
        conn.execute(
            "DELETE FROM term_windows WHERE context = ? AND term = ? AND window = ?",
            (context, term, window),
        )
        return
    top = int(tf.max())
    conn.execute(
        "INSERT OR REPLACE INTO term_windows (context, term, window, count, max_tf, min_length,"
        " top_length, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (context, term, window, len(ids), top, int(length.min()), int(length[tf == top].min()),
         encode(ids, tf, length)),
    )  # fmt: skip


def remove(conn: sqlite3.Connection, context: int, terms: Mapping[int, Iterable[str]]) -> None:
    """Remove paragraphs' postings: `terms` maps each paragraph id to the terms it carries.
    Each touched row is rewritten once; an emptied row is deleted."""
    touched: dict[tuple[str, int], set[int]] = {}
    for paragraph, carried in terms.items():
        for term in carried:
            touched.setdefault((term, paragraph >> WINDOW_BITS), set()).add(paragraph)
    for (term, window), gone in touched.items():
        row = conn.execute(
            "SELECT data FROM term_windows WHERE context = ? AND term = ? AND window = ?",
            (context, term, window),
        ).fetchone()
        if row is None:
            continue
        ids, tf, length = decode_raw(window, row[0])
        keep = ~np.isin(ids, np.fromiter(gone, np.int64, len(gone)))
        _write(conn, context, term, window, ids[keep], tf[keep], length[keep])


# A row's header as SQLite prints it: hex, big-endian (the window 64 bits, the rest 32).
_HEAD = np.dtype([("window", ">u8"), *((name, ">u4") for name in _HEAD_COLUMNS)])


def windows(conn: sqlite3.Connection, context: int, term: str) -> np.ndarray:
    """The term's rows' (window, count, max_tf, min_length, top_length): int64, shape (n, 5).
    SQLite packs them into one hex string: a row apiece through Python costs more than
    the scan (a common term has a row per window, 490 at a million paragraphs)."""
    (packed,) = conn.execute(
        "SELECT group_concat(printf('%016x%08x%08x%08x%08x', window, count, max_tf,"
        " min_length, top_length), '') FROM term_windows WHERE context = ? AND term = ?",
        (context, term),
    ).fetchone()
    heads = np.frombuffer(bytes.fromhex(packed or ""), _HEAD)
    return np.stack([heads[name].astype(np.int64) for name in _HEAD.names], axis=1)


def load(
    conn: sqlite3.Connection, context: int, terms: list[str], chosen: list[int]
) -> dict[str, Window]:
    """Each term's postings in the `chosen` windows as one id-ordered run, its rows decoded
    together (a term with no row there is left out)."""
    chosen = sorted(chosen)
    found: dict[str, Window] = {}
    for term in terms:
        rows = _rows(conn, context, term, chosen)
        if rows:
            found[term] = _run(rows)
    return found


def _rows(
    conn: sqlite3.Connection, context: int, term: str, chosen: list[int]
) -> list[tuple[int, bytes]]:
    """The term's (window, data) rows in the ascending `chosen` windows, in window order:
    one range scan when they fill a third of their span (a row read in passing costs less
    than a lookup), else a lookup per window."""
    if not chosen:
        return []
    if 3 * len(chosen) >= chosen[-1] - chosen[0] + 1:
        wanted = set(chosen)
        return [
            row
            for row in conn.execute(
                "SELECT window, data FROM term_windows WHERE context = ? AND term = ?"
                " AND window BETWEEN ? AND ?",
                (context, term, chosen[0], chosen[-1]),
            )
            if row[0] in wanted
        ]
    rows: list[tuple[int, bytes]] = []
    for start in range(0, len(chosen), 400):
        part = chosen[start : start + 400]
        rows += conn.execute(
            "SELECT window, data FROM term_windows WHERE context = ? AND term = ?"
            f" AND window IN ({','.join('?' * len(part))})",
            (context, term, *part),
        ).fetchall()
    rows.sort(key=lambda row: row[0])
    return rows


def _run(rows: list[tuple[int, bytes]]) -> Window:
    """Rows (window, data) in window order as one Window."""
    windows, blobs = zip(*rows, strict=True)
    records = np.frombuffer(b"".join(blobs), RECORD)
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs)) // RECORD.itemsize
    starts = np.array(windows, np.int64) << WINDOW_BITS
    ids = records["offset"].astype(np.int64) + np.repeat(starts, sizes)
    return Window(ids, records["tf"], records["length"])


def migrate(conn: sqlite3.Connection) -> None:
    """A schema-1 store's posting rows (context, term, paragraph, tf) into windows, then the
    old table dropped — inside the caller's transaction."""
    buffer = PostingsBuffer()
    rows = conn.execute(
        "SELECT p.context, p.term, p.paragraph, p.tf, g.length FROM postings p"
        " JOIN paragraphs g ON g.id = p.paragraph ORDER BY p.paragraph"
    )
    for context, term, paragraph, tf, length in rows:
        buffer.add(context, paragraph, length, {term: tf})
    buffer.flush(conn)
    conn.execute("DROP TABLE postings")
