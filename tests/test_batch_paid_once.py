"""Issue 49 items 1–5, below the CLI: `BatchRounds` against the simulator's batch routes
(a real HTTP server in-process) made to misbehave by its scripted mischief — 500s on
create, poll and results, a create that answers 500 after creating, a terminal status
read again as running, damaged and repeated result lines, unknown statuses, a results
URL on another host — and a driver killed around its create. Each asserts what the
provider counted: no custom_id handed over twice unless the provider said it failed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.contract.records.batches import BATCHES
from taguru_ray.contract.settings.groups import Transport
from taguru_ray.engine.batch_rounds import BatchRounds
from taguru_ray.engine.paid_ledger import AlreadyPaid, Standing, held_by_batches
from taguru_ray.llm.batch_wire import BatchWire, wire_for
from taguru_ray.simulate import SimulatorConfig, create_app
from taguru_ray.simulate.batch_desk import BatchBehaviour
from taguru_ray.store.batch_journal import BatchJournal
from taguru_ray.store.outdir import OutDir
from tests.batch_harness import fast_retrying

APIS = ["openai", "anthropic"]


def ask(text: str) -> CompletionRequest:
    return CompletionRequest([{"role": "user", "content": f"Segment 'a.md':\n\n[0] {text}"}])


class Desk:
    """The simulator in-process, and one driver's `BatchRounds` after another over one
    --out (a rerun is a second `rounds()`)."""

    def __init__(self, server: TestServer, http: aiohttp.ClientSession, out: Path, api: str):
        self.server = server
        self.http = http
        self.out = out
        self.transport = Transport(
            model="taguru-sim",
            endpoints=(str(server.make_url("/v1")),),
            batch_api=api,
            api_key="sk-test-key",
        )
        self.said: list[str] = []

    def wire(self) -> BatchWire:
        return wire_for(self.http, self.transport, fast_retrying)

    def rounds(self, wire: BatchWire | None = None) -> BatchRounds:
        rounds = BatchRounds(
            wire or self.wire(),
            BatchJournal(OutDir(str(self.out))),
            "0123456789abcdef",
            0.01,
            self.said.append,
            quiet=0.02,
        )
        rounds.load()
        return rounds

    async def post(self, path: str, body: Any) -> Any:
        async with self.http.post(str(self.server.make_url(path)), json=body) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def mischief(self, *tricks: dict[str, Any]) -> None:
        await self.post("/batches/mischief", list(tricks))

    async def stats(self) -> dict[str, Any]:
        async with self.http.get(str(self.server.make_url("/batches/stats"))) as response:
            return dict(await response.json())

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.out / BATCHES).glob("*.json"))]


def run(api: str, tmp_path: Path, body: Callable[[Desk], Awaitable[None]]) -> None:
    async def go() -> None:
        server = TestServer(create_app(SimulatorConfig(batch=BatchBehaviour())), host="127.0.0.1")
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                await body(Desk(server, http, tmp_path / "out", api))
        finally:
            await server.close()

    asyncio.run(go())


def answered(completion: Completion) -> bool:
    return completion.outcome == "answer" and bool(json.loads(completion.text or "null"))


@pytest.mark.parametrize("api", APIS)
def test_a_read_that_fails_is_tried_again_and_pays_nothing_twice(tmp_path: Path, api: str) -> None:
    """Item 1: four 500s while polling and a 500 reading the results: still one batch."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "poll", "do": "500", "times": 4}, {"on": "results", "do": "500"})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["twice"] == []
        assert counted["played"] == {"poll/500": 4, "results/500": 1}
        assert any("still the provider's" in line for line in desk.said)

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("damage", ["cut_line", "not_json", "bad_utf8", "json_array"])
def test_a_bad_line_costs_that_line_alone_and_its_record_stays(
    tmp_path: Path, api: str, damage: str
) -> None:
    """Item 1: one damaged line fails its own request (not handed over again: it may be
    paid for); the others are answered; the record stays, and a rerun reads it again."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "results", "do": damage})
        rounds = desk.rounds()
        texts = ["The Alder service.", "The Birch bucket.", "The Cedar engine."]
        got = await asyncio.gather(*(rounds.complete(f"{t}.md", ask(t)) for t in texts))
        failed = [c for c in got if c.outcome != "answer"]
        assert len(failed) == 1 and sum(answered(c) for c in got) == 2
        assert "not handed over again" in (failed[0].error or "")
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["twice"] == []
        for text, completion in zip(texts, got, strict=True):
            rounds.delivered(f"{text}.md", completion.extra["custom_id"])
            rounds.settle(f"{text}.md")
        assert rounds.finished() == []  # the unread answer keeps its record

        rerun = desk.rounds()  # the line reads whole this time
        lost = texts[got.index(failed[0])]
        assert answered(await rerun.complete(f"{lost}.md", ask(lost)))
        assert (await desk.stats())["twice"] == []

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
def test_a_create_answered_500_after_creating_is_found_not_made_again(
    tmp_path: Path, api: str
) -> None:
    """Item 2: the provider made the batch and answered 500; the listing finds it."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "create", "do": "500_after_create"})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["twice"] == []
        found = [line for line in desk.said if "adopted, not created again" in line]
        assert len(found) == 1 and "HTTP 500" in found[0]

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
def test_a_create_refused_500_with_nothing_made_is_sent_again(tmp_path: Path, api: str) -> None:
    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "create", "do": "500"}, {"on": "list", "do": "500"})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["played"]["list/500"] == 1

    run(api, tmp_path, body)


async def kill_in_create(desk: Desk, reached: bool) -> None:
    """A driver killed while its create is in flight: `reached` — after the provider made
    the batch (its answer never read); else before the create left."""
    wire = desk.wire()
    original = wire.create
    sent = asyncio.Event()

    async def create_then_die(record: Any, lines: Any) -> str:
        if reached:
            await original(record, lines)
        sent.set()
        await asyncio.Event().wait()  # SIGKILL: nothing after this runs
        raise AssertionError("unreachable")

    wire.create = create_then_die  # type: ignore[method-assign]
    killed = desk.rounds(wire)
    task = asyncio.ensure_future(killed.complete("a.md", ask("The Alder service.")))
    await sent.wait()
    task.cancel()
    killed.halt()
    [record] = desk.records()
    assert record["batch_id"] is None and record["created_after"]  # recorded before create


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("reached", [True, False])
def test_a_driver_killed_in_its_create_is_rerun_and_pays_once(
    tmp_path: Path, api: str, reached: bool
) -> None:
    """Item 3: the record is written before the create; the rerun finds the batch the
    create made (Anthropic: by time and request count), or makes it once."""

    async def body(desk: Desk) -> None:
        await kill_in_create(desk, reached)
        rerun = desk.rounds()
        completion = await rerun.complete("a.md", ask("The Alder service."))
        assert answered(completion)
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["twice"] == []
        assert any("found at the provider" in line for line in desk.said) == reached

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
def test_the_first_terminal_status_is_trusted(tmp_path: Path, api: str) -> None:
    """Item 4: a read after `completed` that says `in_progress` changes nothing."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "poll", "do": "flip", "times": 3})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["batches"] == 1 and counted["twice"] == []

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
def test_an_unknown_status_is_polled_with_a_line_naming_the_batch(tmp_path: Path, api: str) -> None:
    """Item 5: a status never seen before is polled on, and said."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "poll", "do": "unknown_status", "times": 2})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        [batch_id] = [r["batch_id"] for r in desk.records()]
        waiting = [line for line in desk.said if line.startswith(f"waiting on batch {batch_id}")]
        assert len(waiting) == 1 and "paused_by_simulator" in waiting[0]
        assert "does not know" in waiting[0]

    run(api, tmp_path, body)


@pytest.mark.parametrize("api", APIS)
def test_a_repeated_custom_id_never_overrides_a_success(tmp_path: Path, api: str) -> None:
    """Item 5: the success line, then a failed copy of it: the success is the answer."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "results", "do": "duplicate"})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["played"] == {"results/duplicate": 1} and counted["twice"] == []
        assert any("repeated" in line for line in desk.said)

    run(api, tmp_path, body)


def test_the_key_goes_to_the_configured_host_only(tmp_path: Path) -> None:
    """Item 5: a results_url naming another host is read from the configured one."""

    async def body(desk: Desk) -> None:
        await desk.mischief({"on": "results", "do": "other_host"})
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        counted = await desk.stats()
        assert counted["played"] == {"results/other_host": 1}
        assert list(counted["key_hosts"]) == [f"127.0.0.1:{desk.server.port}"]
        assert any("not the configured API host" in line for line in desk.said)

    run("anthropic", tmp_path, body)


def test_the_ledger_refuses_what_a_record_holds_and_a_live_run_sees_it(tmp_path: Path) -> None:
    """The one accounting: a held request is never handed over again, by any path."""

    async def body(desk: Desk) -> None:
        rounds = desk.rounds()
        assert answered(await rounds.complete("a.md", ask("The Alder service.")))
        [record] = rounds.ledger.records()
        [cid] = record.custom_ids
        assert rounds.ledger.standing(cid) is Standing.HELD
        again = record.model_copy(update={"key": "f" * 16, "batch_id": None})
        with pytest.raises(AlreadyPaid):
            await rounds.ledger.intend(again)
        assert held_by_batches(OutDir(str(desk.out))) == (1, 1, "openai")

    run("openai", tmp_path, body)
