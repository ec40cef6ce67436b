"""The dry-run's token counter: the model family's tokenizer, or the heuristic with why
(ADR 0060). Literals, a fake tiktoken, and the real one where its BPE file is cached."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import types
from pathlib import Path

import pytest

from taguru_ray.llm.tokenizer import load_counter
from taguru_ray.pipeline.estimate import MEASURED, RESULTS, basis, estimate_segment, measured
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.tokens import HEURISTIC, Counter, encoding_for, heuristic
from taguru_ray.text.paragraphs import split_paragraphs

REPO = Path(__file__).resolve().parents[1]


def test_openai_models_map_to_their_encodings_and_nothing_else_does() -> None:
    o200k = [
        "gpt-4o",
        "gpt-4o-mini-2024-07-18",
        "openai/gpt-4.1-mini",
        "gpt-5",
        "gpt-5.1",
        "o3-mini",
        "o1",
        "o4-mini",
        "chatgpt-4o-latest",
        "GPT-4.1",
    ]
    assert {model: encoding_for(model) for model in o200k} == dict.fromkeys(o200k, "o200k_base")
    cl100k = ["gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo"]
    assert {model: encoding_for(model) for model in cl100k} == dict.fromkeys(cl100k, "cl100k_base")
    for other in [
        "claude-sonnet-4-5",
        "gemini-2.5-flash",
        "qwen2.5:7b",
        "o10",
        "gpt-40",
        "taguru-sim",
        "",
        None,
    ]:
        assert encoding_for(other) is None


def test_the_heuristic_is_four_bytes_a_token_rounded_up() -> None:
    assert heuristic("") == 0 and heuristic("abcd") == 1 and heuristic("abcde") == 2
    assert heuristic("青嶺") == 2  # six UTF-8 bytes


def test_a_model_with_no_known_tokenizer_is_counted_by_the_heuristic_and_says_so() -> None:
    counter = load_counter("qwen2.5:7b")
    assert not counter.exact and counter.name == HEURISTIC
    assert counter.why == "no tokenizer known for model 'qwen2.5:7b'"


def test_tiktoken_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import raises ImportError
    counter = load_counter("gpt-4o")
    assert counter.why == "o200k_base needs tiktoken: pip install 'taguru-ray[tokens]'"


def fake_tiktoken(monkeypatch: pytest.MonkeyPatch, get_encoding: object) -> None:
    module = types.ModuleType("tiktoken")
    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", module)


def test_an_encoding_that_cannot_be_fetched_falls_back_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(name: str) -> object:
        raise ConnectionError("no route to openaipublic")

    fake_tiktoken(monkeypatch, refused)
    counter = load_counter("gpt-4.1-mini")
    assert counter.count("abcdefgh") == 2  # the heuristic
    assert counter.why == (
        "o200k_base's BPE file is not cached and could not be fetched (ConnectionError) — "
        "put it in TIKTOKEN_CACHE_DIR"
    )


def test_a_fetch_that_hangs_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    never = threading.Event()
    fake_tiktoken(monkeypatch, lambda name: never.wait())
    counter = load_counter("gpt-4", fetch_seconds=0.01)
    never.set()
    assert counter.why is not None and "(timed out after 0.01 s)" in counter.why


def test_a_loaded_encoding_counts_with_openai_s_chat_framing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Words:
        def encode(self, text: str, disallowed_special: object = ()) -> list[str]:
            return text.split()

    fake_tiktoken(monkeypatch, lambda name: Words())
    counter = load_counter("gpt-4o")
    assert counter.exact and counter.name == "o200k_base" and counter.why is None
    assert counter.messages("one two", "three") == 2 + 3 + 1 + 3 + 3


def test_the_estimate_counts_by_the_counter_it_is_given() -> None:
    chunks = plan_chunks(split_paragraphs("alpha beta gamma\n\ndelta epsilon\n"), 4096)
    words = Counter(lambda text: len(text.split()), "words", per_message=3, per_reply=3)
    found = estimate_segment("s y s", "a.md", chunks, gleanings=0, questions=0, counter=words)
    own = len(chunks[0].text.split())  # the chunk's words, its paragraph labels included
    assert found.completions == 1
    assert found.output_tokens == -(-own * 3 // 2)  # 1.5x the chunk
    assert found.input_tokens >= 3 + 3 + own + 3 + 3  # system, chunk, each framed; the reply
    assert "by words" in basis(words)
    assert "at 4 bytes a token (no tokenizer known" in basis(load_counter("m"))


def _cached(encoding: str) -> bool:
    url = f"https://openaipublic.blob.core.windows.net/encodings/{encoding}.tiktoken"
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    folder = folder or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return (Path(folder) / hashlib.sha1(url.encode()).hexdigest()).is_file()


@pytest.mark.skipif(not _cached("o200k_base"), reason="o200k_base's BPE file is not cached")
def test_the_real_o200k_counts_japanese_as_the_heuristic_cannot() -> None:
    counter = load_counter("gpt-4o")
    text = "青嶺酒造は雲居県霧沢町の蔵元である。"
    assert counter.exact and counter.count("hello world") == 2
    assert counter.count(text) > heuristic(text)  # 54 bytes, more than 13 tokens


def test_the_stated_errors_are_the_measured_ones() -> None:
    data = json.loads((REPO / RESULTS).read_text("utf-8"))
    plan = data["anchor"]["plan_vs_real"]
    for name, stated in MEASURED.items():
        real = plan["heuristic" if name == HEURISTIC else name]["total_error"]
        assert (stated["real_input"], stated["real_output"]) == (
            round(real["input"], 2),
            round(real["output"], 2),
        ), name
    simulator = [row["error"] for row in data["simulator"]]
    heuristic_said = MEASURED[HEURISTIC]
    for key in ("input", "output"):
        values = [round(row[key], 2) for row in simulator]
        assert heuristic_said[f"simulator_{key}"] == (min(values), max(values))


def test_the_dry_run_line_states_its_error() -> None:
    said = measured(Counter(heuristic))
    assert said.startswith("measured error: input +0%, output −18% to +84% on the simulator; ")
    assert "input +24%, output −58% on the anchor's real answers" in said
    assert measured(Counter(heuristic, "o200k_base")).startswith(
        "measured error: input +29%, output −43% on the anchor's real answers ("
    )
    assert "not measured" in measured(Counter(heuristic, "p50k_base"))
