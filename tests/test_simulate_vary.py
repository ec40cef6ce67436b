"""`taguru-ray simulate --vary P`: answers that differ from run to run, deterministically.

The pure part (`simulate/vary.py`) with literals; the pipeline's own validate step and a
whole segment program judging varied answers; the real server in a subprocess telling
two runs apart by model name and by `--vary-run`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer

from taguru_ray.cli.simulate import main as simulate_main
from taguru_ray.contract.source_file import parse_source_file
from taguru_ray.pipeline import effects as fx
from taguru_ray.pipeline.segment_job import SegmentJob
from taguru_ray.pipeline.segment_program import extract
from taguru_ray.pipeline.segment_state import SegmentTask
from taguru_ray.pipeline.validate import Rules, collect_issues
from taguru_ray.settings import Settings
from taguru_ray.simulate import (
    SimulatorConfig,
    SimulatorProcess,
    answer,
    answer_for_turn,
    blocks_of,
    create_app,
    first_user_turn,
    overview_for_turn,
    run_of,
    vary_answer,
)
from tests.program_world import World

TURN = """Segment 'docs/a.md', part 1 of 1:

[0] # Ray Data
The Object Storage layer uses cargo-nextest and S3 with Parquet Files.

[1] Ray Serve runs Kubernetes Jobs (KJ) with KubeRay, Prometheus and Grafana.

[2] 分散処理基盤はオブジェクトストレージとデータ転送を使う。

[3] The Ray Dashboard shows Prometheus metrics beside Grafana Panels."""
PARAGRAPHS = 4
BASE = answer_for_turn(TURN)


def varied(rate: float, seed: int = 0, run: int = 0, turn: str = TURN) -> str:
    return vary_answer(answer_for_turn(turn), turn, rate=rate, seed=seed, run=run)


def triples(text: str) -> list[tuple[Any, ...]]:
    return [
        (a["subject"], a["label"], a["object"], a["weight"], a["paragraph"])
        for a in json.loads(text)["associations"]
    ]


# --- the pure variation -------------------------------------------------------


def test_rate_zero_answers_todays_answer_byte_for_byte() -> None:
    for seed, run in ((0, 0), (7, 3), (-1, 99)):
        assert varied(0.0, seed, run) == BASE


def test_the_same_seed_and_run_answer_the_same() -> None:
    first = varied(0.3, seed=5, run=2)
    vary_answer.cache_clear()
    assert varied(0.3, seed=5, run=2) == first
    assert first != BASE  # and it did vary


def test_another_run_answers_differently() -> None:
    answers = {varied(0.3, seed=5, run=run) for run in range(1, 6)}
    assert len(answers) == 5


def test_another_seed_answers_differently() -> None:
    assert varied(0.3, seed=1, run=1) != varied(0.3, seed=2, run=1)


def test_an_association_is_decided_on_its_own_not_by_its_position() -> None:
    # Without the first association, every other one varies exactly as before.
    base = json.loads(BASE)
    shorter = dict(base, associations=base["associations"][1:])
    text = json.dumps(shorter, ensure_ascii=False, separators=(",", ":"))
    first = {base["associations"][0]["subject"], base["associations"][0]["object"]}
    others = [t for t in triples(varied(0.5, run=4)) if {t[0], t[2]} != first]
    assert triples(vary_answer(text, TURN, rate=0.5, seed=0, run=4)) == others


@pytest.mark.parametrize(
    ("model", "default", "run"),
    [
        ("taguru-sim", 0, 0),
        ("taguru-sim", 3, 3),
        ("taguru-sim#run2", 0, 2),
        ("qwen2.5:7b#run02", 5, 2),
        ("m#run", 4, 4),  # no number: not a run suffix
        ("m#run2x", 4, 4),
        ("m#RUN2", 4, 4),
    ],
)
def test_the_run_is_the_model_names_suffix_else_the_default(
    model: str, default: int, run: int
) -> None:
    assert run_of(model, default) == run


def test_every_kind_of_variation_shows_up_across_runs() -> None:
    base = {(s, o): (label, w, p) for s, label, o, w, p in triples(BASE)}
    seen: set[str] = set()
    for run in range(40):
        got = triples(varied(0.5, run=run))
        pairs = {(s, o) for s, _, o, _, _ in got}
        if set(base) - pairs:
            seen.add("drop")
        for s, label, o, w, p in got:
            if (s, o) not in base:
                seen.add("extra")
                continue
            old_label, old_w, old_p = base[(s, o)]
            if w < 0:
                seen.add("flip")
            elif w != old_w:
                seen.add("weight")
            if p != old_p:
                seen.add("paragraph")
            if label != old_label:
                assert label.casefold() == old_label.casefold()
                seen.add("label")
    assert seen == {"drop", "extra", "flip", "weight", "paragraph", "label"}


def test_an_overview_answer_passes_unchanged() -> None:
    text = overview_for_turn(TURN)
    assert vary_answer(text, TURN, rate=1.0, seed=0, run=1) == text


def test_aliases_follow_their_canonical() -> None:
    for run in range(30):
        out = json.loads(varied(1.0, run=run))
        named = {a["subject"] for a in out["associations"]}
        named |= {a["object"] for a in out["associations"]}
        for alias in out["aliases"]:
            assert alias["canonical"] in named and alias["alias"] not in named
    # the alias survives when its canonical does
    assert json.loads(BASE)["aliases"] == [
        {"alias": "KJ", "canonical": "Kubernetes Jobs", "kind": "concept"}
    ]


# --- still valid under the extract contract -------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_varied_answer_at_rate_one_is_a_valid_answer(seed: int) -> None:
    labelled = {block.paragraph: block.text for block in blocks_of(TURN)}
    for run in range(25):
        out = json.loads(varied(1.0, seed=seed, run=run))
        assert collect_issues(out, Rules(paragraph_count=PARAGRAPHS, questions_cap=0)) == []
        for a in out["associations"]:
            assert a["paragraph"] in labelled
            assert a["subject"] in TURN and a["object"] in TURN and a["subject"] != a["object"]
            assert len(a["label"].strip()) >= 2
            assert math.isfinite(a["weight"]) and a["weight"] != 0 and abs(a["weight"]) <= 2
        pairs = [(a["subject"], a["label"], a["object"]) for a in out["associations"]]
        assert len(pairs) == len(set(pairs))


CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
SEGMENT = (
    "# Ray Data\n\nThe Object Storage layer uses cargo-nextest and S3 with Parquet Files.\n\n"
    "Ray Serve runs Kubernetes Jobs with KubeRay, Prometheus and Grafana.\n\n"
    "The Ray Dashboard shows Prometheus metrics beside Grafana Panels."
)


class SimulatedWorld(World):
    """Every effect of one segment program handled in memory; completions answered as
    the simulator answers them under `--vary`."""

    def __init__(self, config: SimulatorConfig, model: str) -> None:
        super().__init__()
        self.config, self.model = config, model

    def answer(self, ask: fx.Ask) -> str:
        messages = ask.request.messages
        turn = first_user_turn(messages) or ""
        run = run_of(self.model, int(self.config.vary_run))
        return vary_answer(
            answer(messages), turn, rate=self.config.vary, seed=self.config.vary_seed, run=run
        )


def extract_with(config: SimulatorConfig, model: str) -> bytes:
    settings = Settings.of(paths=("d",), out="out", context=CONTEXT, model=model)
    job = SegmentJob(0, "docs/ray.md", SEGMENT.encode(), "docs/ray.md", ())
    world = SimulatedWorld(config, model)
    outcome = world.run(extract(SegmentTask(job, settings, "run1")))
    assert outcome.status == "written", outcome.notes
    assert world.files is not None
    return world.files[0]


def test_extract_writes_a_varied_answer_and_two_runs_write_different_files() -> None:
    config = SimulatorConfig(vary=1.0, vary_seed=3)
    first = extract_with(config, "taguru-sim#run1")
    second = extract_with(config, "taguru-sim#run2")
    again = extract_with(SimulatorConfig(vary=1.0, vary_seed=3, vary_run=1), "taguru-sim")
    for written in (first, second):
        parsed = parse_source_file(written)
        assert parsed.associations
        for a in parsed.associations:
            assert a.subject in SEGMENT and a.object in SEGMENT
    assert first != second

    def body(written: bytes) -> list[str]:  # the header names the model; the rest must match
        return written.decode().splitlines()[1:]

    assert body(again) == body(first)


# --- the server ---------------------------------------------------------------


def chat_body(model: str, turn: str = TURN) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Extract."}, {"role": "user", "content": turn}]
    return {"model": model, "temperature": 0, "messages": messages}


def test_the_server_at_rate_zero_answers_todays_answer() -> None:
    async def ask() -> str:
        config = SimulatorConfig(vary=0.0, vary_seed=9, vary_run=4)
        async with TestClient(TestServer(create_app(config))) as client:
            response = await client.post("/v1/chat/completions", json=chat_body("m#run3"))
            assert response.status == 200
            return (await response.json())["choices"][0]["message"]["content"]

    assert asyncio.run(ask()) == BASE


@pytest.mark.parametrize("flag", [["--vary", "1.5"], ["--vary", "-0.1"], ["--vary-run", "-1"]])
def test_out_of_range_vary_flags_are_usage_errors(flag: list[str]) -> None:
    assert simulate_main(flag) == 2


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=10.0) as c:
        yield c


def content(client: httpx.Client, sim: SimulatorProcess, model: str) -> str:
    response = client.post(sim.chat_url, json=chat_body(model))
    assert response.status_code == 200
    assert response.json()["model"] == model
    return response.json()["choices"][0]["message"]["content"]


def test_a_real_simulator_answers_two_runs_differently(client: httpx.Client) -> None:
    with SimulatorProcess(vary=0.3, vary_seed=11) as shared:
        run1 = content(client, shared, "taguru-sim#run1")
        run2 = content(client, shared, "taguru-sim#run2")
        assert run1 != run2
        assert content(client, shared, "taguru-sim#run1") == run1  # asked again: the same
        assert run1 == varied(0.3, seed=11, run=1)
    # One simulator per run: `--vary-run 2` answers a plain model name as run 2.
    with SimulatorProcess(vary=0.3, vary_seed=11, vary_run=2) as second:
        assert content(client, second, "taguru-sim") == run2


def test_seen_answers_the_kth_ask_of_a_prompt_as_run_k(client: httpx.Client) -> None:
    """A benchmark's runs of one model ask its endpoint one after another: with
    `--vary-run seen` they differ with nothing to configure, and in the same way on
    every simulator started alike."""
    with SimulatorProcess(vary=0.3, vary_seed=11, vary_run="seen") as sim:
        asked = [content(client, sim, "taguru-sim") for _ in range(3)]
    assert asked == [varied(0.3, seed=11, run=k) for k in (1, 2, 3)]
    assert len(set(asked)) == 3
