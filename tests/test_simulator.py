"""The simulator as a client sees it: a real server in a subprocess, real HTTP.

Plus the pure parts of faults (rule semantics, rates) and the slot queue.
Nothing here asserts wall-clock timing; concurrency is proven by counters.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from taguru_ray.cli.simulate import main as simulate_main
from taguru_ray.pipeline.overview import (
    OVERVIEW_SYSTEM,
    Overview,
    opening_units,
    overview_user,
    parse_overview,
)
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.structure import Unit, units
from taguru_ray.simulate import (
    FAULT_KINDS,
    Script,
    ScriptError,
    ScriptRule,
    SimulatorConfig,
    SimulatorProcess,
    parse_script_text,
    pick_rate_fault,
    prompt_key,
)
from taguru_ray.simulate.faults import FENCE_PROSE, FOREIGN_LABEL, RUNAWAY_BYTES
from taguru_ray.simulate.server import Slots
from taguru_ray.text.paragraphs import split_paragraphs

TURN = """Segment 'docs/a.md', part 1 of 2:

[0] # Ray Data
The Object Storage layer uses cargo-nextest and S3.

[1] 分散処理基盤はオブジェクトストレージとデータ転送を使う。"""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimulatorProcess]:
    with SimulatorProcess() as process:
        yield process


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=10.0) as c:
        yield c


@pytest.fixture(autouse=True)
def fresh(request: pytest.FixtureRequest) -> None:
    if "sim" in request.fixturenames:
        server: SimulatorProcess = request.getfixturevalue("sim")
        server.set_script([])
        server.reset()


def body(user_turn: str = TURN, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Extract."}, {"role": "user", "content": user_turn}]
    return {"model": "m", "temperature": 0, "messages": messages, **extra}


def chat(client: httpx.Client, sim: SimulatorProcess, **extra: Any) -> httpx.Response:
    return client.post(sim.chat_url, json=body(**extra))


def content_of(response: httpx.Response) -> str | None:
    return response.json()["choices"][0]["message"]["content"]


def finish_of(response: httpx.Response) -> str:
    return response.json()["choices"][0]["finish_reason"]


# --- the server, over HTTP ---------------------------------------------------


def test_port_zero_prints_the_base_url_as_the_first_line() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "taguru_ray.cli.simulate", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert re.fullmatch(r"http://127\.0\.0\.1:[1-9]\d*/v1\n", first)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
        proc.stdout.close()


def test_models_lists_the_simulator(sim: SimulatorProcess, client: httpx.Client) -> None:
    got = client.get(sim.base_url + "/models").json()
    assert got["object"] == "list"
    assert got["data"][0]["id"] == "taguru-sim" and got["data"][0]["object"] == "model"


def test_normal_answer_is_json_whose_names_occur_in_the_prompt(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    response = chat(client, sim)
    assert response.status_code == 200
    got = response.json()
    assert got["object"] == "chat.completion" and got["model"] == "m"
    assert finish_of(response) == "stop"
    out = json.loads(content_of(response) or "")
    assert set(out) == {"associations", "aliases", "questions"}
    assert out["associations"]
    for a in out["associations"]:
        assert a["subject"] in TURN and a["object"] in TURN
        assert a["paragraph"] in (0, 1)
    usage = got["usage"]
    assert usage["prompt_tokens"] == -(-len(("Extract." + TURN).encode()) // 4)
    assert usage["completion_tokens"] == -(-len(content_of(response).encode()) // 4)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_same_request_twice_gives_the_same_content(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    assert content_of(chat(client, sim)) == content_of(chat(client, sim))


@pytest.mark.parametrize(
    "response_format",
    [{"type": "json_schema", "json_schema": {"name": "ModelOutput", "schema": {}}}, None],
)
def test_response_format_gets_the_plain_json_object(
    sim: SimulatorProcess, client: httpx.Client, response_format: dict[str, Any] | None
) -> None:
    plain = content_of(chat(client, sim, response_format={"type": "json_object"}))
    extra = {"response_format": response_format} if response_format else {}
    assert content_of(chat(client, sim, **extra)) == plain


def test_max_tokens_cuts_the_answer_with_finish_reason_length(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    full = content_of(chat(client, sim)) or ""
    response = chat(client, sim, max_tokens=7)
    cut = content_of(response) or ""
    assert finish_of(response) == "length"
    assert full.startswith(cut) and 0 < len(cut.encode()) <= 28
    assert response.json()["usage"]["completion_tokens"] <= 7
    assert sim.stats()["by_outcome"] == {"ok": 1, "length": 1}


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"not json", "not JSON"),
        (b'{"model": "m"}', "messages"),
        (json.dumps(body(max_tokens=0)).encode(), "max_tokens"),
    ],
)
def test_bad_request_is_400_with_an_openai_error(
    sim: SimulatorProcess, client: httpx.Client, raw: bytes, why: str
) -> None:
    response = client.post(sim.chat_url, content=raw)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and why in error["message"]
    assert sim.stats()["by_outcome"] == {"bad_request": 1}


def test_stats_count_requests_outcomes_and_prompts(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    chat(client, sim)
    chat(client, sim)
    chat(client, sim, user_turn="Segment 'b':\n\n[0] Other text.")
    stats = sim.stats()
    assert stats["requests"] == 3
    assert stats["by_outcome"] == {"ok": 3}
    assert stats["prompts"] == {
        prompt_key(TURN): 2,
        prompt_key("Segment 'b':\n\n[0] Other text."): 1,
    }
    assert stats["in_flight"] == 0 and stats["queued"] == 0 and stats["max_in_flight"] == 1


def test_reset_zeroes_every_counter(sim: SimulatorProcess, client: httpx.Client) -> None:
    chat(client, sim)
    stats = sim.reset()
    assert stats["requests"] == 0 and stats["by_outcome"] == {} and stats["prompts"] == {}
    assert stats["max_in_flight"] == 0 and stats["completion_tokens"] == 0


@pytest.mark.parametrize(
    ("kind", "retry_after", "header"), [("429", None, "1"), ("429", 7, "7"), ("500", None, None)]
)
def test_http_faults_answer_with_an_openai_error(
    sim: SimulatorProcess,
    client: httpx.Client,
    kind: str,
    retry_after: int | None,
    header: str | None,
) -> None:
    rule: dict[str, Any] = {"fault": kind}
    if retry_after is not None:
        rule["retry_after"] = retry_after
    sim.set_script([rule])
    response = chat(client, sim)
    assert response.status_code == int(kind)
    assert response.headers.get("Retry-After") == header
    assert response.json()["error"]["message"]
    assert sim.stats()["by_outcome"] == {kind: 1}


def test_503_is_service_unavailable(sim: SimulatorProcess, client: httpx.Client) -> None:
    sim.set_script([{"fault": "503"}])
    assert chat(client, sim).status_code == 503


def _check_content_fault(kind: str, content: str | None, finish: str, normal: str) -> None:
    if kind == "malformed":
        with pytest.raises(json.JSONDecodeError):
            json.loads(content or "")
        assert finish == "stop"
    elif kind == "fenced":
        prose, fence, *inner, closing = (content or "").split("\n")
        assert (prose, fence, closing) == (FENCE_PROSE, "```json", "```")
        assert "\n".join(inner) == normal and finish == "stop"
    elif kind == "truncated":
        assert normal.startswith(content or "x") and len(content or "") < len(normal)
        assert finish == "length"
    elif kind == "runaway":
        assert len((content or "").encode()) == RUNAWAY_BYTES and finish == "length"
    elif kind == "empty":
        assert (content, finish) == ("", "stop")
    elif kind == "refusal":
        assert (content, finish) == (None, "content_filter")
    elif kind == "fabricated":
        extra = json.loads(content or "")["associations"][-1]
        assert extra["object"] not in TURN and finish == "stop"
    elif kind == "foreign":
        extra = json.loads(content or "")["associations"][-1]
        assert extra["label"] == FOREIGN_LABEL and finish == "stop"


@pytest.mark.parametrize(
    "kind",
    [
        "malformed",
        "fenced",
        "truncated",
        "runaway",
        "empty",
        "refusal",
        "fabricated",
        "foreign",
    ],
)
def test_content_faults_look_like_a_misbehaving_model(
    sim: SimulatorProcess, client: httpx.Client, kind: str
) -> None:
    normal = content_of(chat(client, sim)) or ""
    sim.set_script([{"fault": kind, "match": "docs/a.md"}])
    response = chat(client, sim)
    assert response.status_code == 200
    _check_content_fault(kind, content_of(response), finish_of(response), normal)
    assert sim.stats()["by_outcome"] == {"ok": 1, kind: 1}


def overview_request() -> tuple[dict[str, Any], list[Unit]]:
    """An overview ask as --chunk-context overview sends it, and the units it lists."""
    paragraphs = split_paragraphs(
        "# Ray Data\nRay Data reads from Object Storage.\n\n## Setup\nWorkers run on k8s."
    )
    [chunk] = plan_chunks(paragraphs, 100_000)
    opening = opening_units(units(paragraphs), chunk)
    messages = [
        {"role": "system", "content": OVERVIEW_SYSTEM},
        {"role": "user", "content": overview_user("docs/ray.md", chunk, opening)},
    ]
    return {"model": "m", "temperature": 0, "messages": messages}, opening


def test_a_scripted_fault_hits_an_overview_request(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    request, opening = overview_request()
    normal = parse_overview(content_of(client.post(sim.chat_url, json=request)) or "", opening)
    assert isinstance(normal, Overview) and normal.units and normal.cast
    sim.set_script([{"match": "Units opening in this part", "fault": "malformed"}])
    response = client.post(sim.chat_url, json=request)
    assert response.status_code == 200
    assert isinstance(parse_overview(content_of(response) or "", opening), str)
    assert "associations" in json.loads(content_of(chat(client, sim)) or "")  # not matched
    assert sim.stats()["by_outcome"] == {"ok": 2, "malformed": 1}


@pytest.mark.parametrize("kind", ["bad_weight", "shadow_alias", "fabricated", "foreign"])
def test_faults_that_need_associations_leave_an_overview_answer_as_it_is(
    sim: SimulatorProcess, client: httpx.Client, kind: str
) -> None:
    request, _ = overview_request()
    normal = content_of(client.post(sim.chat_url, json=request))
    sim.set_script([{"match": "Units opening in this part", "fault": kind}])
    response = client.post(sim.chat_url, json=request)
    assert response.status_code == 200 and content_of(response) == normal


def test_stall_hangs_then_answers_normally(sim: SimulatorProcess, client: httpx.Client) -> None:
    normal = content_of(chat(client, sim))
    sim.set_script([{"fault": "stall", "stall_seconds": 0.2}])
    response = chat(client, sim)
    assert content_of(response) == normal and finish_of(response) == "stop"
    assert sim.stats()["by_outcome"] == {"ok": 1, "stall": 1}


def test_stall_survives_a_client_that_gives_up(sim: SimulatorProcess) -> None:
    sim.set_script([{"fault": "stall", "stall_seconds": 60, "times": 1}])
    with (
        httpx.Client(trust_env=False, timeout=0.3) as impatient,
        pytest.raises(httpx.ReadTimeout),
    ):
        impatient.post(sim.chat_url, json=body())
    # The abandoned request frees its slot; the server keeps answering.
    deadline = time.monotonic() + 5
    while sim.stats()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sim.stats()["in_flight"] == 0
    with httpx.Client(trust_env=False, timeout=10) as c:
        assert chat(c, sim).status_code == 200
    assert sim.stats()["by_outcome"] == {"stall": 1, "ok": 1}


def test_after_skips_and_times_limits_matching_requests(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    sim.set_script([{"match": "alpha", "fault": "500", "after": 1, "times": 2}])
    alpha = "Segment 'alpha.md':\n\n[0] Ray."
    codes = []
    for turn in (alpha, "Segment 'beta.md':\n\n[0] Ray.", alpha, alpha, alpha):
        codes.append(chat(client, sim, user_turn=turn).status_code)
    assert codes == [200, 200, 500, 500, 200]


def test_the_first_rule_that_fires_wins(sim: SimulatorProcess, client: httpx.Client) -> None:
    sim.set_script([{"fault": "429", "times": 1}, {"fault": "503", "times": 1}])
    assert [chat(client, sim).status_code for _ in range(3)] == [429, 503, 200]


def test_posting_a_script_replaces_rules_and_restarts_their_counters(
    sim: SimulatorProcess, client: httpx.Client
) -> None:
    rules = [{"fault": "empty", "times": 1}]
    assert sim.set_script(rules) == rules
    assert [finish_of(chat(client, sim)) for _ in range(2)] == ["stop", "stop"]
    assert sim.stats()["by_outcome"] == {"empty": 1, "ok": 1}
    sim.set_script(rules)
    assert content_of(chat(client, sim)) == ""
    assert sim.script() == rules


def test_an_invalid_script_is_refused_with_400(sim: SimulatorProcess, client: httpx.Client) -> None:
    sim.set_script([{"fault": "429"}])
    response = client.post(sim.root_url + "/script", json=[{"fault": "explode"}])
    assert response.status_code == 400
    assert "'fault' must be one of" in response.json()["error"]["message"]
    assert sim.script() == [{"fault": "429"}]


def test_fault_rate_with_a_seed_gives_a_reproducible_sequence(tmp_path: Path) -> None:
    script = tmp_path / "rules.jsonl"
    script.write_text('{"match": "scripted", "fault": "503"}\n', encoding="utf-8")
    args = ["--fault-rate", "500=0.3", "--fault-rate", "empty=0.3", "--seed", "7"]
    rates = {"500": 0.3, "empty": 0.3}
    rng = random.Random(7)
    expected = [pick_rate_fault(rates, rng) or "ok" for _ in range(12)]
    assert len(set(expected)) == 3  # the seed exercises every branch
    process = SimulatorProcess(*args, "--script", str(script))
    with process as sim, httpx.Client(trust_env=False, timeout=10) as c:

        def outcomes() -> list[str]:
            seen = []
            for _ in range(12):
                response = chat(c, sim)
                seen.append("500" if response.status_code == 500 else "ok")
                if response.status_code == 200 and content_of(response) == "":
                    seen[-1] = "empty"
            return seen

        assert outcomes() == expected
        sim.reset()
        assert outcomes() == expected
        assert chat(c, sim, user_turn="Segment 'scripted':\n\n[0] Ray.").status_code == 503
    assert process.stop() is None  # already stopped by `with`


def test_sigterm_exits_zero() -> None:
    process = SimulatorProcess().start()
    assert process.stop() == 0


def test_slots_cap_the_requests_generating_at_once() -> None:
    with SimulatorProcess("--slots", "2", "--latency-ms", "200") as sim:

        async def burst() -> list[int]:
            async with httpx.AsyncClient(trust_env=False, timeout=10) as c:
                sent = [c.post(sim.chat_url, json=body()) for _ in range(6)]
                return [r.status_code for r in await asyncio.gather(*sent)]

        assert asyncio.run(burst()) == [200] * 6
        stats = sim.stats()
        assert stats["max_in_flight"] == 2
        assert stats["requests"] == 6 and stats["by_outcome"] == {"ok": 6}
        assert stats["in_flight"] == 0 and stats["queued"] == 0


# --- the CLI -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--slots", "0"], "--slots"),
        (["--latency-ms", "-5"], "--latency-ms"),
        (["--tokens-per-s", "fast"], "--tokens-per-s"),
        (["--port", "70000"], "--port"),
        (["--fault-rate", "explode=0.1"], "--fault-rate"),
        (["--fault-rate", "500=1.5"], "--fault-rate"),
        (["--fault-rate", "500=0.6", "--fault-rate", "503=0.6"], "--fault-rate"),
        (["--script", "/nonexistent/rules.json"], "--script"),
        (["--retry-after", "-1"], "--retry-after"),
    ],
)
def test_bad_flag_is_a_usage_error(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("taguru-ray: simulate: ") and f"argument {flag}" in err


def test_invalid_script_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rules.json"
    path.write_text('[{"fault": "429", "times": -1}]', encoding="utf-8")
    assert simulate_main(["--script", str(path)]) == 2
    assert "'times' must be a whole number >= 0" in capsys.readouterr().err


def test_bad_flag_exits_2_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "taguru_ray.cli.simulate", "--slots", "many"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=30,
    )
    assert done.returncode == 2 and "--slots" in done.stderr and done.stdout == ""


# --- pure parts --------------------------------------------------------------


def test_script_rule_counts_only_the_requests_it_matches() -> None:
    script = Script([ScriptRule(fault="500", match="a", after=1, times=1)])
    picks = [script.pick(turn) for turn in ("a", "b", "a", "a")]
    assert [p.kind if p else None for p in picks] == [None, None, "500", None]


def test_rule_counters_are_safe_under_concurrency() -> None:
    script = Script([ScriptRule(fault="429", times=50)])
    fired: list[int] = []

    def hammer() -> None:
        fired.append(sum(script.pick("x") is not None for _ in range(100)))

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(fired) == 50


def test_script_file_is_a_json_array_or_jsonl() -> None:
    array = '[{"fault": "429", "retry_after": 2}, {"match": "x", "fault": "stall"}]'
    jsonl = '{"fault": "429", "retry_after": 2}\n\n{"match": "x", "fault": "stall"}\n'
    assert parse_script_text(array) == parse_script_text(jsonl)
    assert parse_script_text(array)[0] == ScriptRule(fault="429", retry_after=2.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"fault": "429", "when": 1}]', "unknown key 'when'"),
        ('[{"match": "x"}]', "'fault' must be one of"),
        ('[{"fault": "stall", "stall_seconds": "long"}]', "'stall_seconds' must be a number"),
        ('{"fault": "429"}\n{"fault": ', "script line 2: not JSON"),
    ],
)
def test_bad_rules_are_named(text: str, message: str) -> None:
    with pytest.raises(ScriptError, match=re.escape(message)):
        parse_script_text(text)


def test_rate_kinds_are_checked_in_a_fixed_order() -> None:
    class Fixed(random.Random):
        def random(self) -> float:
            return 0.25

    assert pick_rate_fault({"empty": 0.2, "500": 0.2}, Fixed()) == "empty"
    assert pick_rate_fault({"500": 0.3}, Fixed()) == "500"
    assert pick_rate_fault({}, Fixed()) is None
    assert FAULT_KINDS.index("500") < FAULT_KINDS.index("empty")


def test_service_time_is_first_token_plus_decoding() -> None:
    assert SimulatorConfig(latency_ms=200, tokens_per_s=100).service_seconds(50) == 0.7
    assert SimulatorConfig(latency_ms=0, tokens_per_s=0).service_seconds(10_000) == 0.0


def test_slots_queue_is_first_in_first_out_and_drops_cancelled_waiters() -> None:
    async def scenario() -> list[int]:
        slots = Slots(1)
        order: list[int] = []

        async def worker(n: int) -> None:
            async with slots:
                order.append(n)
                await asyncio.sleep(0)

        await slots.__aenter__()
        tasks = [asyncio.create_task(worker(n)) for n in range(4)]
        await asyncio.sleep(0)
        assert slots.queued == 4
        tasks[1].cancel()
        await asyncio.sleep(0)
        assert slots.queued == 3
        await slots.__aexit__(None, None, None)
        await asyncio.gather(*tasks, return_exceptions=True)
        assert slots.in_flight == 0 and slots.max_in_flight == 1
        return order

    assert asyncio.run(scenario()) == [0, 2, 3]
