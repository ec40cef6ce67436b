"""Request validation, defaults and limits (EVALUATE.md §1, §2.3), and the refusals
of a bad request: the error envelope with its code, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientSession

from taguru_ray.serve import ServeConfig
from tests.serve_fake import FakeStore, run_server

SEARCH = "/contexts/corpus-c/sources/search"

Exchange = tuple[str, str, dict[str, Any]]  # method, path, aiohttp request kwargs


def exchange(
    *calls: Exchange, config: ServeConfig | None = None
) -> tuple[FakeStore, list[tuple[int, Any]]]:
    store = FakeStore()
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        for method, path, kwargs in calls:
            async with session.request(method, base + path, **kwargs) as response:
                answers.append((response.status, await response.json()))

    run_server(store, scenario, config)
    return store, answers


def post(path: str, body: Any) -> Exchange:
    return ("POST", path, {"json": body})


def refused(answer: tuple[int, Any]) -> tuple[int, str]:
    status, body = answer
    assert body["status"] == "error" and isinstance(body["error"], str), body
    assert isinstance(body["time"], float)
    return status, body["code"]


def last_call(store: FakeStore, method: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    found = [(args, kwargs) for name, args, kwargs in store.calls if name == method]
    assert found, store.calls
    return found[-1]


def test_search_limit_defaults_to_5_and_is_capped_at_1000() -> None:
    store, answers = exchange(post(SEARCH, {"query": "酒造"}))
    assert answers[0][0] == 200
    assert last_call(store, "search")[1]["limit"] == 5
    store, _ = exchange(post(SEARCH, {"query": "酒造", "limit": 5000}))
    assert last_call(store, "search")[1]["limit"] == 1000


def test_search_limit_0_reaches_the_store_and_answers_no_hits() -> None:
    store, [(status, body)] = exchange(post(SEARCH, {"query": "酒造", "limit": 0}))
    assert status == 200 and body["result"]["hits"] == []
    assert last_call(store, "search")[1]["limit"] == 0


def test_the_evaluate_request_with_every_key_present_is_read_as_sent() -> None:
    body = {
        "query": "酒造",
        "limit": 10,
        "semantic_floor": None,
        "tags": ["a", "b"],
        "since": 5,
        "until": 9,
        "unknown_key": {"ignored": True},
    }
    store, [(status, _)] = exchange(post(SEARCH, body))
    assert status == 200
    args, kwargs = last_call(store, "search")
    assert args == ("corpus-c", "酒造")
    assert kwargs == {
        "limit": 10,
        "semantic_floor": None,
        "tags": ("a", "b"),
        "since": 5,
        "until": 9,
    }


def test_floors_are_clamped_to_0_1() -> None:
    store, _ = exchange(post(SEARCH, {"query": "q", "semantic_floor": 3}))
    assert last_call(store, "search")[1]["semantic_floor"] == 1.0
    store, _ = exchange(post("/contexts/corpus-a/resolve", {"cue": "a", "dice_floor": -0.5}))
    assert last_call(store, "resolve")[1]["dice_floor"] == 0.0


def test_a_window_with_since_not_before_until_is_invalid_argument() -> None:
    _, answers = exchange(
        post(SEARCH, {"query": "q", "since": 9, "until": 9}),
        post("/contexts/corpus-a/query", {"subject": "a", "since": 10, "until": 2}),
    )
    assert [refused(a) for a in answers] == [(400, "invalid_argument")] * 2


def test_filter_tags_are_bounded() -> None:
    _, answers = exchange(
        post(SEARCH, {"query": "q", "tags": [f"t{i}" for i in range(33)]}),
        post(SEARCH, {"query": "q", "tags": ["x" * 129]}),
        post(SEARCH, {"query": "q", "tags": [""]}),
        post(SEARCH, {"query": "q", "tags": [f"t{i}" for i in range(32)]}),
    )
    assert [refused(a) for a in answers[:3]] == [
        (400, "invalid_argument"),
        (400, "over_limit"),
        (400, "invalid_argument"),
    ]
    assert answers[3][0] == 200


@pytest.mark.parametrize(
    "body",
    [
        {},  # query missing
        {"query": 5},
        {"query": "q", "limit": -1},
        {"query": "q", "limit": 2.5},
        {"query": "q", "limit": True},
        {"query": "q", "limit": "5"},
        {"query": "q", "tags": "a"},
        {"query": "q", "since": -3},
        ["query"],
    ],
)
def test_a_body_of_the_wrong_shape_is_422_malformed_request(body: Any) -> None:
    _, [answer] = exchange(post(SEARCH, body))
    assert refused(answer) == (422, "malformed_request")


def test_broken_json_is_400_and_a_wrong_media_type_415() -> None:
    headers = {"Content-Type": "application/json"}
    _, answers = exchange(
        ("POST", SEARCH, {"data": b'{"query": ', "headers": headers}),
        ("POST", SEARCH, {"data": b'{"query": "a", "query": "b"}', "headers": headers}),
        ("POST", SEARCH, {"data": b'{"query": "a"}', "headers": {"Content-Type": "text/plain"}}),
        ("POST", SEARCH, {"data": b"\xff\xfe", "headers": headers}),
    )
    assert [refused(a) for a in answers] == [
        (400, "malformed_request"),
        (422, "malformed_request"),
        (415, "malformed_request"),
        (400, "malformed_request"),
    ]


def test_resolve_limit_defaults_to_the_ceiling_and_namespaces_follow_the_route() -> None:
    store, _ = exchange(
        post("/contexts/corpus-a/resolve", {"cue": "alpha"}),
        post("/contexts/corpus-a/resolve_label", {"cue": "alpha", "limit": 5}),
    )
    resolves = [kwargs for name, _, kwargs in store.calls if name == "resolve"]
    assert [(k["namespace"], k["limit"]) for k in resolves] == [("concept", 1000), ("label", 5)]


def test_query_needs_a_pinned_position_and_its_limit_defaults_to_100() -> None:
    store, answers = exchange(
        post("/contexts/corpus-a/query", {"label": None, "limit": 1}),
        post("/contexts/corpus-a/query", {"subject": ["alpha", "Alpha"]}),
        post("/contexts/corpus-a/query", {"object": "beta", "limit": 99999}),
        post("/contexts/corpus-a/query", {"subject": 7}),
    )
    assert refused(answers[0]) == (400, "invalid_argument")
    assert refused(answers[3]) == (422, "malformed_request")
    queries = [kwargs for name, _, kwargs in store.calls if name == "query"]
    assert queries[0]["subject"] == ("alpha", "Alpha") and queries[0]["limit"] == 100
    assert queries[1]["object"] == "beta" and queries[1]["limit"] == 1000


def test_citation_needs_a_source_and_a_paragraph() -> None:
    _, answers = exchange(
        post("/contexts/corpus-a/citations", {"source": "", "paragraph": 0}),
        post("/contexts/corpus-a/citations", {"source": "doc.md"}),
        post("/contexts/corpus-a/citations", {"source": "doc.md", "paragraph": -1}),
        post("/contexts/corpus-a/citations", {"source": "doc.md", "index": 0}),
    )
    assert [refused(a) for a in answers[:3]] == [
        (400, "invalid_argument"),
        (422, "malformed_request"),
        (422, "malformed_request"),
    ]
    assert answers[3][0] == 200  # the pre-rename spelling the reference still reads


def test_the_sources_page_limit_is_clamped_to_1_1000() -> None:
    store, answers = exchange(
        ("GET", "/contexts/corpus-a/sources", {}),
        ("GET", "/contexts/corpus-a/sources?limit=0&after=a&prefix=d", {}),
        ("GET", "/contexts/corpus-a/sources?limit=5000", {}),
        ("GET", "/contexts/corpus-a/sources?limit=ten", {}),
    )
    pages = [kwargs for name, _, kwargs in store.calls if name == "sources"]
    assert [p["limit"] for p in pages] == [1000, 1, 1000]
    assert pages[1] == {"limit": 1, "after": "a", "prefix": "d"}
    assert refused(answers[3]) == (400, "malformed_request")


def test_unknown_paths_and_methods_answer_in_the_envelope() -> None:
    _, answers = exchange(
        ("GET", "/nowhere", {}),
        ("POST", "/health", {}),
        ("GET", "/contexts/corpus-a/sources/search", {}),
    )
    assert [refused(a) for a in answers] == [
        (404, "unknown_path"),
        (405, "method_not_allowed"),
        (405, "method_not_allowed"),
    ]


def test_a_body_past_the_cap_is_413() -> None:
    _, [answer] = exchange(
        post(SEARCH, {"query": "x" * 4096}), config=ServeConfig(max_body_bytes=1024)
    )
    assert refused(answer) == (413, "payload_too_large")


def test_a_store_failure_is_500_internal_with_one_line_and_no_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    _, [answer] = exchange(post(SEARCH, {"query": "boom"}))
    assert refused(answer) == (500, "internal")
    assert "fails on purpose" not in answer[1]["error"]  # store internals stay in the log
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and "RuntimeError" in err


def test_bad_requests_write_nothing_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    exchange(
        post(SEARCH, {"query": 1}),
        ("POST", SEARCH, {"data": b"{", "headers": {"Content-Type": "application/json"}}),
        ("GET", "/nowhere", {}),
    )
    assert capfd.readouterr().err == ""


def raw(path: str, text: str) -> Exchange:
    return ("POST", path, {"data": text.encode(), "headers": {"Content-Type": "application/json"}})


@pytest.mark.parametrize(
    "number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" + "0" * 400, "9" * 5000]
)
def test_a_non_finite_number_anywhere_in_a_body_is_400_invalid_argument(number: str) -> None:
    store, answers = exchange(
        raw(SEARCH, f'{{"query": "q", "semantic_floor": {number}}}'),
        raw("/contexts/corpus-a/resolve", f'{{"cue": "a", "dice_floor": {number}}}'),
        raw("/contexts/corpus-a/query", f'{{"subject": "a", "limit": {number}}}'),
        raw("/contexts/corpus-a/citations", f'{{"source": "doc.md", "paragraph": {number}}}'),
        raw(SEARCH, f'{{"query": "q", "unread": [{{"deeper": {number}}}]}}'),
    )
    assert [refused(a) for a in answers] == [(400, "invalid_argument")] * 5
    assert "not a finite number" in answers[0][1]["error"]
    assert store.calls == []  # refused before the store is asked


def test_finite_floors_past_0_1_are_still_clamped_not_refused() -> None:
    store, [(status, _)] = exchange(raw(SEARCH, '{"query": "q", "semantic_floor": 1e308}'))
    assert status == 200 and last_call(store, "search")[1]["semantic_floor"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 50_000 + "1" + "}" * 50_000,
        '{"query": "q", "unread": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ],
)
def test_a_deeply_nested_body_is_400_malformed_request_not_500(
    text: str, capfd: pytest.CaptureFixture[str]
) -> None:
    store, [answer] = exchange(raw(SEARCH, text))
    assert refused(answer) == (400, "malformed_request")
    assert "nested too deeply" in answer[1]["error"]
    assert store.calls == [] and capfd.readouterr().err == ""
