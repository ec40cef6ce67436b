"""`SqliteStore`: the embedded `ContextStore` over one SQLite file per store folder.

Readers each use their own connection (one per thread) and read one snapshot
per call; writes take the store's write lock and one ``BEGIN IMMEDIATE``
transaction, so an import is all-or-nothing per file (the CLI) or per batch
(``POST /import``, where earlier batches stay durable and a later refusal says
``durable_prefix``). A killed import leaves the last committed file whole and
nothing of the one in flight; rerunning it replaces each source exactly.

With an `Embedder` (``TAGURU_EMBED_URL``…, ADR 0033) the store also embeds: after an
import, `refresh_embeddings` turns what it marked pending into vectors; a search runs
the vector lane and fuses; a weak or empty lexical resolve adds the semantic tier.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from taguru_ray.context import graph, passages, schema, vector_lanes, vector_rows
from taguru_ray.context.apply import apply_batch
from taguru_ray.context.embeddings import Embedder, EmbeddingsError
from taguru_ray.context.errors import (
    ContextError,
    Namespace,
    Position,
    invalid_argument,
    no_context,
)
from taguru_ray.context.evidence import EvidenceReads
from taguru_ray.context.importer import Batch, ImportRefusal, read_stream
from taguru_ray.context.postings import PostingsBuffer
from taguru_ray.context.resolve import DEFAULT_DICE_FLOOR, EntryIndex, clamp_floor
from taguru_ray.context.transactions import apply_group, refusal_error
from taguru_ray.context.vector_lanes import Lane, MatrixCache
from taguru_ray.context.vector_rows import Refresh
from taguru_ray.context.vectors import merge_tiers, needs_semantic
from taguru_ray.context.writes import ContextWrites
from taguru_ray.sqlite_wal import opening, unwritable

_log = logging.getLogger(__name__)

MAX_SOURCES_PAGE = 1000
CACHE_KIB = 65536  # per connection, at most
_CONTEXT_COLUMNS = (
    "id, name, description, pinned, dice_floor, semantic_floor, rev_graph, rev_passages,"
    " rev_config, paragraphs, paragraph_length, writes, last_write_epoch"
)


class SqliteStore(EvidenceReads, ContextWrites):
    """Every context of one store folder (``<folder>/taguru-context.sqlite3``)."""

    def __init__(
        self, folder: str | Path, *, create: bool = True, embedder: Embedder | None = None
    ) -> None:
        """Open the folder's store; `create=False` refuses a folder without one
        (FileNotFoundError) instead of making it. `embedder`: the embedding provider
        (`EmbeddingsConfig.from_env`), None for none."""
        self.path = schema.store_file(folder)
        self._folder = folder
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"{folder}: no context store here")
        with opening(folder, self.path, "context store"):  # one line, not a traceback
            schema.create(self.path)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._usage_lock = threading.Lock()
        self._reads: dict[str, list[int]] = {}  # name -> [reads, empty_reads, last_read_epoch]
        self._indexes: dict[tuple[int, str, int], EntryIndex] = {}
        self.embedder = embedder
        self._matrices = MatrixCache()

    # ------------------------------------------------------------ plumbing

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = schema.connect(self.path)
            # An import rewrites the postings rows of the windows it fills (tens of MB at a
            # time): SQLite's default 2 MB cache would reread them from the OS per group.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        return conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    @contextmanager
    def _write(self, *, dry_run: bool = False) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("ROLLBACK" if dry_run else "COMMIT")
            except sqlite3.OperationalError as error:  # read-only, locked: the store's line
                failure = unwritable(self._folder, self.path, error, "write")
                if failure is None:
                    raise
                raise failure from None

    def _row(self, conn: sqlite3.Connection, name: str) -> tuple[Any, ...]:
        row = conn.execute(
            f"SELECT {_CONTEXT_COLUMNS} FROM contexts WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise no_context(name)
        return tuple(row)

    def _count_read(self, name: str, empty: bool) -> None:
        with self._usage_lock:
            usage = self._reads.setdefault(name, [0, 0, 0])
            usage[0] += 1
            usage[1] += int(empty)
            usage[2] = int(time.time())

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # ------------------------------------------------------------ directory

    def _entry(self, conn: sqlite3.Connection, row: tuple[Any, ...]) -> dict[str, Any]:
        key, name, description, pinned, dice, semantic = row[:6]
        reads, empty, last_read = self._reads.get(name, [0, 0, 0])
        return {
            "name": name,
            "description": description,
            "pinned": bool(pinned),
            "loaded": True,
            "dice_floor": dice,
            "semantic_floor": semantic,
            "stats": graph.stats(conn, key),
            "usage": {
                "reads": reads,
                "empty_reads": empty,
                "writes": row[11],
                "last_read_epoch": last_read,
                "last_write_epoch": row[12],
            },
            "revision": {"graph": row[6], "passages": row[7], "config": row[8]},
            "schema_mode": None,
        }

    def contexts(self) -> dict[str, Any]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_CONTEXT_COLUMNS} FROM contexts ORDER BY name")
            entries = [self._entry(conn, tuple(row)) for row in rows.fetchall()]
        return {"contexts": entries, "total": len(entries)}

    def context(self, name: str) -> dict[str, Any]:
        with self._read() as conn:
            return self._entry(conn, self._row(conn, name))

    def context_names(self) -> list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM contexts ORDER BY name")]

    def embeddings(self, name: str) -> dict[str, Any]:
        model = None if self.embedder is None else self.embedder.model
        with self._read() as conn:
            return vector_rows.status(conn, self._row(conn, name)[0], model)

    def _lane(self, row: tuple[Any, ...], call_floor: float | None) -> Lane:
        """The vector side of one read: floor = call → context → server → 0.35."""
        server = 0.35 if self.embedder is None else self.embedder.config.semantic_floor
        floor = clamp_floor(call_floor, clamp_floor(row[5], server))
        return Lane(self.embedder, self._matrices, row[0], row[7], floor)

    def sources(
        self, name: str, *, limit: int = 1000, after: str | None = None, prefix: str | None = None
    ) -> dict[str, Any]:
        limit = max(1, min(limit, MAX_SOURCES_PAGE))
        with self._read() as conn:
            key = self._row(conn, name)[0]
            where, values = "context = ? AND has_passage = 1", [key]
            if prefix:
                where += " AND substr(name, 1, ?) = ?"
                values += [len(prefix), prefix]
            total = conn.execute(f"SELECT count(*) FROM sources WHERE {where}", values)
            total = total.fetchone()[0]
            if after is not None:
                where += " AND name > ?"
                values.append(after)
            rows = conn.execute(
                f"SELECT name, stored_at, date, tags FROM sources WHERE {where}"
                " ORDER BY name LIMIT ?",
                [*values, limit],
            ).fetchall()
        entries = []
        for source, stored_at, date, tags in rows:
            entry: dict[str, Any] = {"name": source}
            if stored_at is not None:
                entry["stored_at"] = stored_at
            if date is not None:
                entry["date"] = date
            if tags != "[]":
                entry["tags"] = json.loads(tags)
            entries.append(entry)
        return {"total": total, "sources": [e["name"] for e in entries], "entries": entries}

    # ------------------------------------------------------------ reads

    def search(
        self,
        name: str,
        query: str,
        *,
        limit: int = 5,
        semantic_floor: float | None = None,
        tags: Sequence[str] = (),
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        with self._read() as conn:
            row = self._row(conn, name)
            context = (row[0], row[1], row[9], row[10])
            lane = self._lane(row, semantic_floor)
            result = passages.search(
                conn, context, query, limit=limit, tags=tags, since=since, until=until,
                vector_lane=lambda eligible, pool: vector_lanes.passage_lane(
                    conn, lane, query, eligible, pool
                ),
            )  # fmt: skip
        self._count_read(name, not result["hits"])
        return result

    def resolve(
        self,
        name: str,
        cue: str,
        *,
        namespace: Namespace = "concept",
        limit: int = 1000,
        dice_floor: float | None = None,
        semantic_floor: float | None = None,
    ) -> list[dict[str, Any]]:
        """The lexical tier, then — when it found nothing or its best is under 0.5 — the
        semantic tier (EVALUATE.md §2.2). A provider failure with no lexical candidate is
        502 `embeddings_failed`; with one, the lexical candidates are served."""
        if namespace not in ("concept", "label"):
            raise invalid_argument("namespace must be concept or label")
        limit = max(0, min(limit, 1000))
        with self._read() as conn:
            row = self._row(conn, name)
            index = self._entry_index(conn, row[0], namespace, row[6])
            context_floor = clamp_floor(row[4], DEFAULT_DICE_FLOOR)
            found = [r.wire() for r in index.resolve(cue, clamp_floor(dice_floor, context_floor))]
            semantic: list[dict[str, Any]] = []
            if self.embedder is not None and needs_semantic(found):
                try:
                    semantic = vector_lanes.semantic_candidates(
                        conn, self._lane(row, semantic_floor), namespace, cue
                    )
                except EmbeddingsError as error:
                    if not found:
                        raise ContextError(
                            502, "embeddings_failed", f"semantic entry failed: {error}"
                        ) from None
                    _log.warning("semantic entry failed (serving lexical results): %s", error)
        served = merge_tiers(found, semantic, limit)
        self._count_read(name, not (found or semantic))
        return served

    def _entry_index(
        self, conn: sqlite3.Connection, context: int, kind: str, revision: int
    ) -> EntryIndex:
        key = (context, kind, revision)
        index = self._indexes.get(key)
        if index is None:
            spellings = conn.execute(
                "SELECT name, name FROM names WHERE context = ? AND kind = ?"
                " UNION ALL SELECT a.alias, n.name FROM aliases a JOIN names n ON n.id = a.target"
                " WHERE a.context = ? AND a.kind = ?",
                (context, kind, context, kind),
            ).fetchall()
            index = EntryIndex(spellings)
            with self._usage_lock:
                self._indexes = {k: v for k, v in self._indexes.items() if k[:2] != key[:2]}
                self._indexes[key] = index
        return index

    def query(
        self,
        name: str,
        *,
        subject: Position = None,
        label: Position = None,
        object: Position = None,
        limit: int = 100,
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        with self._read() as conn:
            key = self._row(conn, name)[0]
            total, matches = graph.query(
                conn, key, (subject, label, object), limit=limit, since=since, until=until
            )
        self._count_read(name, not matches)
        return {"total": total, "matches": matches, "plan": {"contexts": [name]}}

    def citation(self, name: str, source: str, paragraph: int) -> dict[str, Any]:
        with self._read() as conn:
            key = self._row(conn, name)[0]
            return passages.citation(conn, key, source, paragraph)

    # ------------------------------------------------------------ writes

    def refresh_embeddings(self, names: Sequence[str] | None = None) -> list[Refresh]:
        """Embed what imports marked pending in the named contexts (all without names);
        nothing without a provider. A provider failure ends that context's refresh with
        `failure` set: what landed stays, the rest waits for the next refresh."""
        if self.embedder is None:
            return []
        with self._read() as conn:
            known = dict(conn.execute("SELECT name, id FROM contexts").fetchall())
        wanted = sorted(known) if names is None else [n for n in dict.fromkeys(names) if n in known]
        return [
            vector_rows.refresh(self._read, self._write, self.embedder, known[n], n) for n in wanted
        ]

    def import_batches(
        self, batches: Sequence[Batch], *, dry_run: bool = False, create_missing: bool = False
    ) -> list[dict[str, Any]]:
        """Apply batches in ONE transaction (a file is all-or-nothing); `ImportRefusal` rolls
        all of them back."""
        with self._write(dry_run=dry_run) as conn:
            buffer = PostingsBuffer()
            results = [
                apply_batch(conn, b, create_missing=create_missing, buffer=buffer) for b in batches
            ]
            if not dry_run:
                buffer.flush(conn)
            return results

    def import_group(
        self, files: Sequence[Sequence[Batch]], *, create_missing: bool = False
    ) -> list[list[dict[str, Any]] | ImportRefusal]:
        """Apply several files in ONE transaction, each all or nothing (`transactions`)."""
        with self._write() as conn:
            return apply_group(conn, files, create_missing=create_missing)

    def import_stream(self, data: bytes, *, dry_run: bool = False) -> dict[str, Any]:
        """POST /import: parse the whole stream first (a malformed line writes nothing), then
        one transaction per batch; a refused batch leaves the batches before it durable."""
        try:
            stream = read_stream(data)
        except ImportRefusal as refusal:
            raise refusal_error(refusal, 0, 0) from None
        results = []
        for number, batch in enumerate(stream.batches):
            try:
                results.extend(self.import_batches([batch], dry_run=dry_run))
            except ImportRefusal as refusal:
                self._refresh_after([b.context for b in stream.batches[:number]], dry_run)
                raise refusal_error(refusal, number, len(stream.batches), batch) from None
        self._refresh_after([b.context for b in stream.batches], dry_run)
        answer: dict[str, Any] = {"batches": results}
        if stream.schemas:
            answer["schemas"] = stream.schemas
        return answer

    def _refresh_after(self, names: list[str], dry_run: bool) -> None:
        """POST /import embeds what it wrote; a provider failure refuses nothing written."""
        if dry_run or not names:
            return
        for report in self.refresh_embeddings(names):
            if report.failure:
                _log.warning("embedding refresh of '%s' failed (the import stands; the next "
                             "import retries): %s", report.context, report.failure)  # fmt: skip
