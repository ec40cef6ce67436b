"""The preflight's verdicts and the fail-fast streak, as literals: a status and a body in,
one line naming the setting to fix out (or None: the run goes on)."""

from __future__ import annotations

import json
import re

import pytest

from taguru_ray.contract.settings import values
from taguru_ray.gateway.fail_fast import STREAK, FatalStreak
from taguru_ray.llm.endpoint_check import (
    PROXY,
    REFUSED,
    TIMED_OUT,
    TLS,
    UNRESOLVED,
    Blame,
    Reply,
    listed_models,
    repeated_line,
    serves,
    verdict,
)
from taguru_ray.llm.preflight import models_url
from taguru_ray.settings import Settings

URL = "http://127.0.0.1:8000/v1/models"
BLAME = Blame(
    endpoint="TAGURU_EXTRACT_URL",
    key="TAGURU_EXTRACT_API_KEY",
    model="TAGURU_EXTRACT_MODEL",
    model_name="qwen3",
    key_set=True,
)


def listing(*ids: str) -> bytes:
    return json.dumps(
        {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}
    ).encode()


def test_a_refused_key_names_the_key_variable() -> None:
    line = verdict(URL, Reply(401), BLAME)
    assert line == (
        "http://127.0.0.1:8000: the API key was refused (HTTP 401 on GET /models) — set "
        "TAGURU_EXTRACT_API_KEY to a key this endpoint accepts"
    )


def test_a_401_without_a_key_asks_for_one_and_a_403_for_access() -> None:
    keyless = Blame(**{**BLAME.__dict__, "key_set": False})
    assert "none is set — export TAGURU_EXTRACT_API_KEY" in (
        verdict(URL, Reply(401), keyless) or ""
    )
    assert "HTTP 403 on GET /models" in (verdict(URL, Reply(403), BLAME) or "")


def test_a_404_is_a_url_without_the_api_and_hints_at_a_missing_v1() -> None:
    bare = verdict("http://127.0.0.1:8000/models", Reply(404), BLAME) or ""
    assert "no OpenAI-compatible API at this URL" in bare and "its path has no /v1" in bare
    assert "fix TAGURU_EXTRACT_URL" in bare
    assert "its path has no /v1" not in (verdict(URL, Reply(404), BLAME) or "")


def test_a_model_the_endpoint_does_not_list_names_the_model_variable_and_some_it_serves() -> None:
    line = verdict(URL, Reply(200, listing(*[f"m{i}" for i in range(8)])), BLAME)
    assert line == (
        "http://127.0.0.1:8000 does not serve the model 'qwen3' — set TAGURU_EXTRACT_MODEL to "
        "one it lists: m0, m1, m2, m3, m4 and 3 more"
    )


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("qwen3", ["qwen3"]),
        ("qwen3", ["llama3:latest", "qwen3:latest"]),  # Ollama's tag
        ("qwen3:latest", ["qwen3"]),
        ("m", ["taguru-sim", "*"]),  # the simulator's (and a proxy's) wildcard
        ("openai/gpt-4o", ["openai/*"]),
    ],
)
def test_a_listed_model_serves(model: str, listed: list[str]) -> None:
    assert serves(model, listed)


def test_an_unlisted_model_or_another_tag_does_not_serve() -> None:
    assert not serves("qwen3:8b", ["qwen3:latest"])
    assert not serves("qwen3", ["qwen3-coder"])


def test_what_cannot_judge_the_run_lets_it_go_on() -> None:
    for reply in (
        Reply(200, b"<html>not a list</html>"),
        Reply(200, listing()),  # an empty list names nothing
        Reply(429),
        Reply(500),
        Reply(400),
        Reply(302),
    ):
        assert verdict(URL, reply, BLAME) is None, reply
    # An Azure deployment's models live elsewhere: only the key is judged there.
    assert verdict(URL, Reply(404), BLAME, judge_listing=False) is None
    assert verdict(URL, Reply(200, listing("x")), BLAME, judge_listing=False) is None
    assert verdict(URL, Reply(401), BLAME, judge_listing=False) is not None


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (REFUSED, "connection refused — start the server, or fix TAGURU_EXTRACT_URL"),
        (UNRESOLVED, "the host name does not resolve (Name or service not known) — fix"),
        (TIMED_OUT, "no answer within 10 s — start the server, or fix TAGURU_EXTRACT_URL"),
        (TLS, "the TLS handshake failed (Name or service not known) — check http://"),
        (PROXY, "NO_PROXY"),
    ],
)
def test_no_answer_names_the_endpoint_setting(failure: str, said: str) -> None:
    line = verdict(URL, Reply(failure=failure, detail="Name or service not known"), BLAME)
    assert line is not None and line.startswith("http://127.0.0.1:8000: ") and said in line


def test_a_line_never_shows_userinfo_a_path_or_a_query() -> None:
    url = "https://user:sk-secret@api.example.com/v1/models?key=sk-other"
    for reply in (Reply(401), Reply(404), Reply(failure=REFUSED), Reply(200, listing("x"))):
        line = verdict(url, reply, BLAME) or ""
        assert line.startswith("https://api.example.com") and "sk-" not in line, line


def test_blame_names_the_flag_or_the_variable_the_endpoint_came_from() -> None:
    common = {"paths": ("d",), "out": "o", "context": "c", "model": "m"}
    from_url = Settings.of(**common, url="http://h/v1", endpoints=("http://h/v1",))
    from_flag = Settings.of(**common, endpoints=("http://a/v1", "http://b/v1"))
    assert Blame.of(from_url.transport).endpoint == "TAGURU_EXTRACT_URL"
    assert Blame.of(from_flag.transport).endpoint == "--endpoint"
    assert Blame.of(from_flag.transport).key == "TAGURU_EXTRACT_API_KEY"
    assert Blame.of(from_flag.transport).model == "TAGURU_EXTRACT_MODEL"
    assert not Blame.of(from_flag.transport).key_set


def test_the_model_list_sits_beside_chat_completions() -> None:
    assert models_url("http://h:8000/v1/chat/completions") == ("http://h:8000/v1/models", True)
    azure = "https://r.openai.azure.com/openai/deployments/gpt/chat/completions?api-version=2024"
    assert models_url(azure) == ("https://r.openai.azure.com/openai/models?api-version=2024", False)


def test_listed_models_reads_the_openai_shape_only() -> None:
    assert listed_models(listing("a", "b")) == ["a", "b"]
    assert listed_models(b'{"data": "nope"}') == []
    assert listed_models(b"[1, 2]") == []


@pytest.mark.parametrize(
    "text",
    [
        "10.0.0.5:8000/v1",
        "localhost:8000/v1",
        "ftp://h/v1",
        "http:///v1",
        "http://h:port/v1",
        "http://h:0/v1",
        "http://h /v1",
    ],
)
def test_a_malformed_endpoint_url_is_refused_without_echoing_it(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape("e.g. http://127.0.0.1:8000/v1")) as refused:
        values.endpoint(text)
    assert text not in str(refused.value)


def test_a_well_formed_endpoint_url_passes_trimmed() -> None:
    assert values.endpoint(" https://api.openai.com/v1\n") == "https://api.openai.com/v1"
    assert values.endpoint("http://[::1]:8000/v1") == "http://[::1]:8000/v1"


def test_three_identical_refusals_in_a_row_trip_once() -> None:
    streak = FatalStreak(1)
    assert [streak.observe(0, "http_401") for _ in range(STREAK)] == [None, None, 401]
    assert streak.observe(0, "http_401") is None  # said once


def test_a_success_or_another_refusal_starts_the_streak_over() -> None:
    streak = FatalStreak(1)
    for outcome in ("http_401", "http_401", "ok", "http_401", "http_404", "http_401"):
        assert streak.observe(0, outcome) is None
    assert streak.observe(0, "http_401") is None
    assert streak.observe(0, "http_401") == 401


def test_retryable_failures_neither_count_nor_break_a_streak() -> None:
    streak = FatalStreak(1)
    outcomes = ["http_404", "http_429", "timeout", "http_503", "http_404", "http_400", "transport"]
    assert [streak.observe(0, o) for o in outcomes] == [None] * len(outcomes)
    assert streak.observe(0, "http_404") == 404


def test_streaks_are_per_endpoint() -> None:
    streak = FatalStreak(2)
    for _ in range(STREAK - 1):
        assert streak.observe(0, "http_403") is None
        assert streak.observe(1, "ok") is None  # another endpoint's success says nothing of 0
    assert streak.observe(0, "http_403") == 403


def test_the_fail_fast_line_names_the_fix_and_the_resume() -> None:
    refused = repeated_line("http://h:1/v1/chat/completions", 401, 3, BLAME)
    assert refused.startswith("http://h:1: the API key was refused (HTTP 401 on 3 requests")
    assert "TAGURU_EXTRACT_API_KEY" in refused and refused.endswith("chunk checkpoints are kept")
    unknown = repeated_line("http://h:1/v1/chat/completions", 404, 3, BLAME)
    assert "the model 'qwen3' or the URL is not known there" in unknown
    assert "TAGURU_EXTRACT_MODEL" in unknown and "TAGURU_EXTRACT_URL" in unknown
