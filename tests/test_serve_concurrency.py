"""Readers run at once (store calls in a thread pool); imports run one at a time."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import ClientSession

from taguru_ray.serve import ServeConfig
from tests.serve_fake import FakeStore, run_server, wire

SEARCH = "/contexts/corpus-c/sources/search"


async def _search(session: ClientSession, base: str, query: str = "酒造") -> tuple[int, Any]:
    async with session.post(base + SEARCH, json={"query": query}) as response:
        return response.status, await response.json()


def test_two_searches_are_answered_at_once() -> None:
    # Each search waits at the barrier until the other arrives: served one after the
    # other, the first would time out there and answer 500.
    store = FakeStore(search_barrier=threading.Barrier(2, timeout=10))
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        answers.extend(await asyncio.gather(_search(session, base), _search(session, base)))

    run_server(store, scenario)
    assert [status for status, _ in answers] == [200, 200]
    assert all(body["result"]["hits"][0]["score"] == 0.28768212 for _, body in answers)


def test_64_concurrent_clients_are_all_answered() -> None:
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        async def client() -> list[tuple[int, Any]]:
            async with ClientSession() as own:  # one connection per client
                return [await _search(own, base) for _ in range(5)]

        for batch in await asyncio.gather(*(client() for _ in range(64))):
            answers.extend(batch)

    run_server(FakeStore(), scenario)
    assert len(answers) == 320 and {status for status, _ in answers} == {200}


def test_imports_run_one_at_a_time_while_reads_go_on() -> None:
    store = FakeStore()
    body = wire("import")["request"].encode("utf-8")
    statuses: list[int] = []

    async def scenario(session: ClientSession, base: str) -> None:
        async def post_import() -> int:
            async with session.post(base + "/import", data=body) as response:
                return response.status

        results = await asyncio.gather(
            post_import(), post_import(), post_import(), _search(session, base)
        )
        statuses.extend([*results[:3], results[3][0]])

    run_server(store, scenario, ServeConfig(writable=True))
    assert statuses == [200, 200, 200, 200]
    assert store.most_imports_at_once == 1
