"""Rounds of provider batches against the simulator's batch endpoints, without Ray: requests
gathered into rounds, each batch recorded in --out before it is polled, a request asked
after an answer joining the next round, and a second `BatchRounds` over the same --out (a
rerun after a kill) collecting the recorded batches and handing nothing over twice."""

from __future__ import annotations

import asyncio
import json
import string
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from taguru_ray.contract.batch_ids import custom_id, pack
from taguru_ray.contract.completion import CompletionRequest
from taguru_ray.contract.records.batches import BATCHES
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.engine.batch_rounds import BatchRounds
from taguru_ray.llm.batch_wire import BatchWire, wire_for
from taguru_ray.simulate import SimulatorConfig, create_app
from taguru_ray.simulate.batch_desk import BatchBehaviour
from taguru_ray.store.batch_journal import BatchJournal
from taguru_ray.store.outdir import OutDir


def ask(text: str) -> CompletionRequest:
    return CompletionRequest([{"role": "user", "content": f"Segment 'a.md':\n\n[0] {text}"}])


def test_a_custom_id_is_the_request_s_identity_and_fits_anthropic_s_rule() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    first = custom_id("docs/a.md", body, 1)
    assert first == custom_id("docs/a.md", dict(body), 1)
    assert first != custom_id("docs/b.md", body, 1) != custom_id("docs/a.md", body, 2)
    assert len(first) <= 64 and set(first) <= set(string.ascii_letters + string.digits + "_-")


def test_packing_keeps_each_batch_within_the_count_and_the_bytes() -> None:
    assert pack([1, 1, 1, 1, 1], 2, 100) == [range(0, 2), range(2, 4), range(4, 5)]
    assert pack([60, 60, 30, 10], 10, 100) == [range(0, 1), range(1, 4)]
    assert pack([500], 10, 100) == [range(0, 1)]  # too big alone: its own batch
    assert pack([], 10, 100) == []


class Harness:
    def __init__(self, url: str, out: Path, api: str) -> None:
        self.transport = Transport(
            model="taguru-sim", endpoints=(url,), batch_api=api, api_key="sk-test"
        )
        self.out = out
        self.said: list[str] = []

    def rounds(self, http: aiohttp.ClientSession, wire: BatchWire | None = None) -> BatchRounds:
        rounds = BatchRounds(
            wire or wire_for(http, self.transport),
            BatchJournal(OutDir(str(self.out))),
            "0123456789abcdef",
            0.01,
            self.said.append,
        )
        rounds.load()
        return rounds


async def started(behaviour: BatchBehaviour) -> TestServer:
    server = TestServer(create_app(SimulatorConfig(batch=behaviour)), host="127.0.0.1")
    await server.start_server()
    return server


async def stats(http: aiohttp.ClientSession, server: TestServer) -> dict[str, Any]:
    async with http.get(str(server.make_url("/batches/stats"))) as response:
        return dict(await response.json())


async def program(rounds: BatchRounds, source: str, texts: list[str]) -> list[str]:
    """A program asking its requests one after another: each waits for the answer before."""
    answers = []
    for text in texts:
        completion = await rounds.complete(source, ask(text))
        assert completion.outcome == "answer", completion.error
        assert completion.extra["batch_id"] and completion.extra["custom_id"]
        answers.append(completion.text or "")
    return answers


def recorded_ids(tmp_path: Path) -> list[str]:
    """The batch ids recorded in --out (a record written before its create has none)."""
    found = []
    for path in (tmp_path / "out" / BATCHES).glob("*.json"):
        try:
            batch_id = json.loads(path.read_text())["batch_id"]
        except ValueError:  # not there yet
            continue
        if batch_id:
            found.append(batch_id)
    return found


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_requests_asked_after_an_answer_join_the_next_round(tmp_path: Path, api: str) -> None:
    async def go() -> None:
        server = await started(BatchBehaviour())
        harness = Harness(str(server.make_url("/v1")), tmp_path / "out", api)
        async with aiohttp.ClientSession() as http:
            rounds = harness.rounds(http)
            first, second = await asyncio.gather(
                program(rounds, "a.md", ["The Alder service.", "The Birch bucket."]),
                program(rounds, "b.md", ["The Cedar engine."]),
            )
            assert all(json.loads(a)["associations"] is not None for a in first + second)
            assert rounds.round == 2  # a.md's second request waited for its first answer
            counted = await stats(http, server)
            assert counted["batches"] == 2 and counted["requests"] == 3 and counted["twice"] == []
            assert rounds.finished() == []  # no segment has ended yet: records kept
            a_md = custom_id("a.md", {}, 1)[:16]  # the segment part of a.md's ids
            held = {c for r in rounds.ledger.records() for c in r.custom_ids}
            for cid in held:  # each answer reached its program
                rounds.delivered("a.md" if cid.startswith(a_md) else "b.md", cid)
            rounds.settle("a.md")  # a.md ended written
            assert len(rounds.finished()) == 1  # b.md's round-1 batch holds a.md's too
            rounds.settle("b.md")
            assert len(rounds.finished()) == 2
        await server.close()

    asyncio.run(go())


def test_a_rerun_collects_recorded_batches_and_hands_nothing_over_twice(tmp_path: Path) -> None:
    async def go() -> None:
        server = await started(BatchBehaviour(delay_seconds=0.2))
        harness = Harness(str(server.make_url("/v1")), tmp_path / "out", "openai")
        async with aiohttp.ClientSession() as http:
            killed = harness.rounds(http)
            task = asyncio.ensure_future(program(killed, "a.md", ["The Alder service."]))
            while not recorded_ids(tmp_path):
                await asyncio.sleep(0.01)
            task.cancel()  # the driver dies with its batch in flight
            killed.halt()
            assert len(recorded_ids(tmp_path)) == 1  # recorded before polling

            rerun = harness.rounds(http)
            assert rerun.recorded == 1
            answers = await program(rerun, "a.md", ["The Alder service.", "The Birch bucket."])
            assert len(answers) == 2
            counted = await stats(http, server)
            assert counted["twice"] == [] and counted["requests"] == 2
        await server.close()

    asyncio.run(go())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_an_expired_batch_is_handed_over_again_once_with_a_line(tmp_path: Path, api: str) -> None:
    async def go() -> None:
        server = await started(BatchBehaviour(expire=1))
        harness = Harness(str(server.make_url("/v1")), tmp_path / "out", api)
        async with aiohttp.ClientSession() as http:
            rounds = harness.rounds(http)
            [answer] = await program(rounds, "a.md", ["The Alder service."])
            assert json.loads(answer)
            counted = await stats(http, server)
            assert counted["batches"] == 2 and len(counted["twice"]) == 1
            assert any(
                "1 of 1 request(s) unanswered" in line
                and "expired" in line
                and "again, once" in line
                for line in harness.said
            )
        await server.close()

    asyncio.run(go())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_second_miss_is_a_transport_failure_of_that_attempt(tmp_path: Path, api: str) -> None:
    async def go() -> None:
        server = await started(BatchBehaviour(fail_rate=1.0))
        harness = Harness(str(server.make_url("/v1")), tmp_path / "out", api)
        async with aiohttp.ClientSession() as http:
            rounds = harness.rounds(http)
            completion = await rounds.complete("a.md", ask("The Alder service."))
            assert completion.outcome == "transport" and "500" in (completion.error or "")
            assert (await stats(http, server))["batches"] == 2
        await server.close()

    asyncio.run(go())


def test_a_batch_created_but_not_recorded_is_found_by_its_file(tmp_path: Path) -> None:
    async def go() -> None:
        server = await started(BatchBehaviour())
        harness = Harness(str(server.make_url("/v1")), tmp_path / "out", "openai")
        async with aiohttp.ClientSession() as http:
            wire = wire_for(http, harness.transport)
            original = wire.create
            created: list[str] = []

            async def create_then_hang(record: Any, lines: Any) -> str:
                created.append(await original(record, lines))
                await asyncio.Event().wait()  # killed before the batch id was recorded
                raise AssertionError("unreachable")

            wire.create = create_then_hang  # type: ignore[method-assign]
            killed = harness.rounds(http, wire)
            task = asyncio.ensure_future(killed.complete("a.md", ask("The Alder service.")))
            while not created:
                await asyncio.sleep(0.01)
            task.cancel()
            killed.halt()
            assert recorded_ids(tmp_path) == [] and len(created) == 1

            rerun = harness.rounds(http)
            completion = await rerun.complete("a.md", ask("The Alder service."))
            assert completion.outcome == "answer"
            assert completion.extra["batch_id"] == created[0]  # adopted, not created again
            assert (await stats(http, server))["twice"] == []
        await server.close()

    asyncio.run(go())
