"""The simulator's batch APIs as a client sees them: OpenAI's files and batches, Anthropic's
message batches, answered by the live route's machinery, with expiry, partial failure and
the count of every request by custom_id. No wall-clock asserts: a batch is polled until
it ends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

from taguru_ray.simulate import SimulatorConfig, create_app
from taguru_ray.simulate.batch_desk import BatchBehaviour

TURN = "Segment 'a.md':\n\n[0] The Alder service writes the Birch bucket."


def chat(content: str = TURN) -> dict[str, Any]:
    return {"model": "taguru-sim", "messages": [{"role": "user", "content": content}]}


def openai_lines(ids: list[str]) -> bytes:
    lines = [
        {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": chat()}
        for cid in ids
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


async def client_for(behaviour: BatchBehaviour) -> TestClient:
    client = TestClient(TestServer(create_app(SimulatorConfig(batch=behaviour))))
    await client.start_server()
    return client


async def openai_batch(client: TestClient, ids: list[str]) -> dict[str, Any]:
    form = aiohttp.FormData()
    form.add_field("purpose", "batch")
    form.add_field("file", openai_lines(ids), filename="round.jsonl")
    uploaded = await (await client.post("/v1/files", data=form)).json()
    created = await client.post(
        "/v1/batches",
        json={
            "input_file_id": uploaded["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        },
    )
    batch = await created.json()
    while batch["status"] in ("validating", "in_progress", "finalizing"):
        await asyncio.sleep(0.01)
        batch = await (await client.get(f"/v1/batches/{batch['id']}")).json()
    return batch


async def lines_of(client: TestClient, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    text = await (await client.get(f"/v1/files/{file_id}/content")).text()
    return [json.loads(line) for line in text.splitlines()]


def test_an_openai_batch_answers_every_line_as_the_live_route_does() -> None:
    async def go() -> None:
        client = await client_for(BatchBehaviour())
        try:
            batch = await openai_batch(client, ["a-1", "a-2"])
            assert batch["status"] == "completed"
            assert batch["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
            out = await lines_of(client, batch["output_file_id"])
            live = await (await client.post("/v1/chat/completions", json=chat())).json()
            assert [line["custom_id"] for line in out] == ["a-1", "a-2"]
            body = out[0]["response"]["body"]
            assert body["choices"][0]["message"] == live["choices"][0]["message"]
            stats = await (await client.get("/batches/stats")).json()
            assert stats["submitted"] == {"a-1": 1, "a-2": 1} and stats["twice"] == []
            listed = await (await client.get("/v1/batches?limit=1")).json()
            assert [b["id"] for b in listed["data"]] == [batch["id"]]
        finally:
            await client.close()

    asyncio.run(go())


def test_an_expired_batch_answers_nothing_and_a_resubmission_counts_twice() -> None:
    async def go() -> None:
        client = await client_for(BatchBehaviour(expire=1))
        try:
            first = await openai_batch(client, ["x-1"])
            assert first["status"] == "expired" and first["output_file_id"] is None
            [error] = await lines_of(client, first["error_file_id"])
            assert error["error"]["code"] == "batch_expired"
            second = await openai_batch(client, ["x-1"])
            assert second["status"] == "completed"
            stats = await (await client.get("/batches/stats")).json()
            assert stats["twice"] == ["x-1"]
        finally:
            await client.close()

    asyncio.run(go())


def test_a_line_failing_alone_lands_in_the_error_file() -> None:
    async def go() -> None:
        client = await client_for(BatchBehaviour(fail_rate=1.0))
        try:
            batch = await openai_batch(client, ["f-1"])
            assert batch["status"] == "completed" and batch["output_file_id"] is None
            [error] = await lines_of(client, batch["error_file_id"])
            assert error["response"]["status_code"] == 500
        finally:
            await client.close()

    asyncio.run(go())


def test_a_repeated_custom_id_fails_the_batch_at_validation() -> None:
    async def go() -> None:
        client = await client_for(BatchBehaviour())
        try:
            batch = await openai_batch(client, ["d", "d"])
            assert batch["status"] == "failed"
            assert "repeated" in batch["errors"]["data"][0]["message"]
        finally:
            await client.close()

    asyncio.run(go())


def test_an_anthropic_message_batch_ends_with_messages_in_its_results() -> None:
    async def go() -> None:
        client = await client_for(BatchBehaviour())
        try:
            params = {
                "model": "taguru-sim",
                "max_tokens": 1000,
                "system": "extract",
                "messages": [{"role": "user", "content": TURN}],
            }
            created = await client.post(
                "/v1/messages/batches", json={"requests": [{"custom_id": "m-1", "params": params}]}
            )
            batch = await created.json()
            while batch["processing_status"] == "in_progress":
                await asyncio.sleep(0.01)
                batch = await (await client.get(f"/v1/messages/batches/{batch['id']}")).json()
            assert batch["request_counts"]["succeeded"] == 1
            assert batch["results_url"].endswith(f"/v1/messages/batches/{batch['id']}/results")
            text = await (await client.get(f"/v1/messages/batches/{batch['id']}/results")).text()
            [line] = [json.loads(x) for x in text.splitlines()]
            assert line["custom_id"] == "m-1" and line["result"]["type"] == "succeeded"
            message = line["result"]["message"]
            assert message["stop_reason"] == "end_turn"
            assert json.loads(message["content"][0]["text"])["associations"]
        finally:
            await client.close()

    asyncio.run(go())
