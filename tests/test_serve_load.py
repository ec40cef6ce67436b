"""One real store served read-only to 64 concurrent clients (issue 19's acceptance).

`python -m taguru_ray serve --store DIR --port 0`, as a user starts it, over a store
of generated source files. One client first asks every question alone; then 64
clients, each on its own connection and released together, ask 5 searches and 1
citation each. Every answer must be a 200 equal to the lone client's (the
envelope's `time` aside), the server must write nothing to stderr (an unexpected
error is a line there), and it stays read-only throughout.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, ClientTimeout

from benchmarks.context import CONTEXT, queries, source_name, write_source_files
from taguru_ray.context.importer import read_stream
from taguru_ray.context.store import SqliteStore
from tests.test_serve_cli import SERVE, running

CLIENTS = 64
SEARCHES = 5
FILES = 60
PARAGRAPHS = 6
TIMEOUT = ClientTimeout(total=120)

Request = tuple[str, dict[str, Any]]  # (path, JSON body)


def _store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    store = SqliteStore(folder)
    try:
        for path in write_source_files(tmp_path / "out", FILES, PARAGRAPHS):
            store.import_batches(read_stream(path.read_bytes()).batches, create_missing=True)
    finally:
        store.close()
    return folder


def _requests(client: int) -> list[Request]:
    texts = queries()
    searches = [
        (
            f"/contexts/{CONTEXT}/sources/search",
            {"query": texts[(client * SEARCHES + k) % len(texts)], "limit": 10,
             "semantic_floor": None, "tags": [], "since": None, "until": None},
        )
        for k in range(SEARCHES)
    ]  # fmt: skip
    cite = {"source": source_name(client % FILES), "paragraph": client % PARAGRAPHS}
    return [*searches, (f"/contexts/{CONTEXT}/citations", cite)]


async def _ask(session: ClientSession, base: str, request: Request) -> tuple[int, Any]:
    path, body = request
    async with session.post(base + path, json=body) as response:
        answer = json.loads(await response.text())
    answer.pop("time", None)
    return response.status, answer


async def _alone(base: str, requests: list[Request]) -> list[tuple[int, Any]]:
    async with ClientSession(timeout=TIMEOUT) as session:
        return [await _ask(session, base, request) for request in requests]


async def _together(base: str, per_client: list[list[Request]]) -> list[list[tuple[int, Any]]]:
    go = asyncio.Event()
    ready = 0

    async def client(requests: list[Request]) -> list[tuple[int, Any]]:
        nonlocal ready
        async with ClientSession(timeout=TIMEOUT) as session:  # a connection of its own
            async with session.get(base + "/health") as response:  # connected before `go`
                assert response.status == 200
            ready += 1
            if ready == len(per_client):
                go.set()
            await go.wait()
            return [await _ask(session, base, request) for request in requests]

    return list(await asyncio.gather(*(client(requests) for requests in per_client)))


def test_64_concurrent_clients_each_get_the_lone_clients_answers(tmp_path: Path) -> None:
    store = _store(tmp_path)
    per_client = [_requests(client) for client in range(CLIENTS)]
    with running(*SERVE, "--store", str(store), "--port", "0") as (proc, base):
        alone = [asyncio.run(_alone(base, requests)) for requests in per_client]
        together = asyncio.run(_together(base, per_client))
        refused = asyncio.run(_alone(base, [("/import", {})]))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and err == "", err

    assert {status for answers in alone for status, _ in answers} == {200}
    hits = [len(body["result"]["hits"]) for answers in alone for body in
            (answer for _, answer in answers[:SEARCHES])]  # fmt: skip
    assert sum(1 for n in hits if n) > len(hits) // 2  # the searches find things
    mismatched = [
        (client, index, together[client][index], expected)
        for client, answers in enumerate(alone)
        for index, expected in enumerate(answers)
        if together[client][index] != expected
    ]
    assert mismatched == []
    assert sum(len(answers) for answers in together) == CLIENTS * (SEARCHES + 1)
    assert refused[0][0] == 403  # read-only: POST /import is refused
