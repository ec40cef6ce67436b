"""The simulator as a provider that wants a key and serves named models (ADR 0037): 401 and
404 over real HTTP, model lists counted apart from completions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from taguru_ray.simulate import SimulatorProcess

KEY = "sk-sim-key"


@pytest.fixture(scope="module")
def guarded() -> Iterator[SimulatorProcess]:
    with SimulatorProcess("--require-key", KEY, "--served-model", "qwen3") as process:
        yield process


@pytest.fixture
def client(guarded: SimulatorProcess) -> Iterator[httpx.Client]:
    guarded.set_script([])
    guarded.reset()
    with httpx.Client(trust_env=False, timeout=10.0) as c:
        yield c


def chat(model: str = "qwen3") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "[0] Ray runs on K8s."}]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_missing_or_wrong_key_is_a_401_on_completions_and_model_lists(
    guarded: SimulatorProcess, client: httpx.Client
) -> None:
    for headers in ({}, bearer("sk-wrong")):
        completion = client.post(guarded.chat_url, json=chat(), headers=headers)
        assert completion.status_code == 401
        assert completion.json()["error"]["code"] == "invalid_api_key"
        assert client.get(f"{guarded.base_url}/models", headers=headers).status_code == 401
    assert client.post(guarded.chat_url, json=chat(), headers={"api-key": KEY}).status_code == 200
    stats = guarded.stats()
    assert stats["by_outcome"] == {"401": 2, "ok": 1} and stats["requests"] == 3
    assert stats["models"] == {"requests": 2, "by_status": {"401": 2}}


def test_served_models_are_listed_and_another_is_model_not_found(
    guarded: SimulatorProcess, client: httpx.Client
) -> None:
    listed = client.get(f"{guarded.base_url}/models", headers=bearer(KEY)).json()
    assert [m["id"] for m in listed["data"]] == ["qwen3"]
    unknown = client.post(guarded.chat_url, json=chat("llama3"), headers=bearer(KEY))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    run = client.post(guarded.chat_url, json=chat("qwen3#run2"), headers=bearer(KEY))
    assert run.status_code == 200  # a run suffix names the same model
    assert guarded.stats()["models"] == {"requests": 1, "by_status": {"200": 1}}


def test_a_key_revoked_after_n_is_a_script_rule(
    guarded: SimulatorProcess, client: httpx.Client
) -> None:
    guarded.set_script([{"fault": "403", "after": 1}])
    statuses = [
        client.post(guarded.chat_url, json=chat(), headers=bearer(KEY)).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 403, 403]


def test_by_default_any_model_is_served_and_the_list_says_so() -> None:
    with SimulatorProcess() as open_, httpx.Client(trust_env=False, timeout=10.0) as client:
        listed = [m["id"] for m in client.get(f"{open_.base_url}/models").json()["data"]]
        assert listed == ["taguru-sim", "*"]
        assert client.post(open_.chat_url, json=chat("anything")).status_code == 200
