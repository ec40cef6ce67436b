"""Imports, direct writes and searches at once against one `serve` subprocess leave the
store consistent: every call answered, SQLite's own integrity check clean, each
context's counters equal to the rows they count, every edge's count the sum of its
attributions', and the final state exactly what the writers wrote last.

No timing is asserted: the threads meet at a barrier, then each runs a fixed number
of calls, and the final state does not depend on how they interleave (each writer
owns its sources; association writes accumulate, which commutes)."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.taguru_start import client, spawned

ROUNDS = 12
CONTEXT = "busy"


def _batch(source: str, version: int) -> bytes:
    lines = [
        {"taguru_batch": 1, "context": CONTEXT, "source": source, "create": {}},
        {"passage": f"imported v{version} of {source}\n\nsecond paragraph {source}"},
        {
            "subject": source,
            "label": "version",
            "object": f"v{version}",
            "weight": 1.0,
            "paragraph": 0,
        },
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def _importer(http: httpx.Client, answers: list[int]) -> None:
    for version in range(ROUNDS):
        for source in ("imp-a.md", "imp-b.md"):  # each re-import replaces the source
            answer = http.post(
                "/import",
                content=_batch(source, version),
                headers={"Content-Type": "application/x-ndjson"},
            )
            answers.append(answer.status_code)


def _writer(http: httpx.Client, answers: list[int]) -> None:
    for version in range(ROUNDS):
        passages = {"passages": {"w.md": f"written v{version}\n\nmore words here"}}
        answers.append(http.post(f"/contexts/{CONTEXT}/sources", json=passages).status_code)
        op = [{"subject": "writer", "label": "wrote", "object": "w", "source": "w.md"}]
        answers.append(http.post(f"/contexts/{CONTEXT}/associations", json=op).status_code)


def _reader(http: httpx.Client, answers: list[int]) -> None:
    for _ in range(ROUNDS * 2):
        for path, body in (
            ("sources/search", {"query": "imported paragraph written", "limit": 10}),
            ("query", {"label": "version"}),
            ("evidence", {"origins": ["writer", "imp-a.md"], "text_fallback_query": "words"}),
        ):
            answers.append(http.post(f"/contexts/{CONTEXT}/{path}", json=body).status_code)


def test_imports_writes_and_searches_at_once_keep_the_store_consistent(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with spawned(data) as base:
        with client(base) as http:
            http.put(f"/contexts/{CONTEXT}", json={})
        answers: dict[str, list[int]] = {"import": [], "write": [], "read": []}
        barrier = threading.Barrier(4)
        jobs: list[tuple[Callable[[httpx.Client, list[int]], None], str]] = [
            (_importer, "import"),
            (_writer, "write"),
            (_reader, "read"),
            (_reader, "read"),
        ]

        def run(job: Callable[[httpx.Client, list[int]], None], kind: str) -> None:
            with client(base) as own:
                barrier.wait(timeout=60)
                job(own, answers[kind])

        threads = [threading.Thread(target=run, args=job) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(thread.is_alive() for thread in threads)
        assert {kind: set(codes) for kind, codes in answers.items()} == {
            "import": {200},
            "write": {200},
            "read": {200},
        }
        assert len(answers["read"]) == 2 * ROUNDS * 2 * 3
        with client(base) as http:
            last = ROUNDS - 1
            lookup = http.post(
                f"/contexts/{CONTEXT}/sources/lookup", json={"sources": ["imp-a.md", "w.md"]}
            ).json()["result"]
            assert lookup["passages"] == {
                "imp-a.md": f"imported v{last} of imp-a.md\n\nsecond paragraph imp-a.md",
                "w.md": f"written v{last}\n\nmore words here",
            }
            facts = http.post(f"/contexts/{CONTEXT}/query", json={"label": ["version", "wrote"]})
            matches = {
                (m["subject"], m["object"]): m["count"] for m in facts.json()["result"]["matches"]
            }
            # The imported sources hold their last version's fact only; the direct
            # writes accumulated one assertion each, kept across the passage stores.
            assert matches == {
                ("imp-a.md", f"v{last}"): 1,
                ("imp-b.md", f"v{last}"): 1,
                ("writer", "w"): ROUNDS,
            }
            hits = http.post(
                f"/contexts/{CONTEXT}/sources/search", json={"query": f"v{last}", "limit": 10}
            ).json()["result"]["hits"]
            assert {(h["source"], h["paragraph"]) for h in hits} == {
                ("imp-a.md", 0),
                ("imp-b.md", 0),
                ("w.md", 0),
            }
    _integrity(data / "taguru-context.sqlite3")


def _integrity(path: Path) -> None:
    conn = sqlite3.connect(path)
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
