"""Every route answers in the envelope and the keys of its recorded wire fixture."""

from __future__ import annotations

from typing import Any

from aiohttp import ClientSession

from taguru_ray import __version__
from taguru_ray.serve import ServeConfig
from tests.serve_fake import FakeStore, run_server, same_shape, wire


def _call(
    method: str, path: str, body: Any = None, *, data: bytes | None = None
) -> tuple[FakeStore, list[tuple[int, Any]]]:
    store = FakeStore()
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        kwargs: dict[str, Any] = {"json": body} if data is None else {"data": data}
        async with session.request(method, base + path, **kwargs) as response:
            answers.append((response.status, await response.json()))

    run_server(store, scenario, ServeConfig(writable=True))
    return store, answers


def _matches_fixture(name: str, path: str, body: Any = None, *, data: bytes | None = None):
    recorded = wire(name)
    _, [(status, answer)] = _call(recorded["method"], path, body, data=data)
    assert status == recorded["status"], answer
    assert same_shape(answer, recorded["response"]) == []
    return answer


def test_health_is_bare_and_names_this_version() -> None:
    answer = _matches_fixture("health", "/health")
    assert answer == {"status": "ok", "version": __version__}


def test_version_is_bare_with_the_reference_keys() -> None:
    answer = _matches_fixture("version", "/version")
    assert answer["server"] == __version__
    assert answer["batch_formats"] == [1]
    assert answer["http_contract"] == {"current": 1, "supported": [1]}


def test_contexts_list_and_one_context_match_the_directory_entry_shape() -> None:
    listed = _matches_fixture("contexts_list", "/contexts")
    assert [entry["name"] for entry in listed["result"]["contexts"]] == ["corpus-a", "corpus-c"]
    one = wire("contexts_list")["response"]["result"]["contexts"][0]
    _, [(status, answer)] = _call("GET", "/contexts/corpus-a")
    assert status == 200
    assert same_shape(answer["result"], one) == []
    assert answer["status"] == "ok" and isinstance(answer["time"], float)


def test_contexts_page_after_a_name() -> None:
    _, [(_, answer)] = _call("GET", "/contexts?after=corpus-a&limit=5")
    assert [entry["name"] for entry in answer["result"]["contexts"]] == ["corpus-c"]
    assert answer["result"]["total"] == 2


def test_embeddings_status() -> None:
    answer = _matches_fixture("embeddings_status", "/contexts/corpus-a/embeddings")
    assert answer["result"] == {"provider_model": None}


def test_sources_search_matches_the_fixture() -> None:
    recorded = wire("sources_search")
    answer = _matches_fixture(
        "sources_search", "/contexts/corpus-c/sources/search", recorded["request"]
    )
    assert answer["result"] == recorded["response"]["result"]


def test_query_matches_the_recall_shape_and_plan_names_the_context() -> None:
    answer = _matches_fixture(
        "recall", "/contexts/corpus-a/query", {"subject": "alpha", "label": None, "limit": 1}
    )
    assert answer["result"]["plan"] == {"contexts": ["corpus-a"]}


def test_sources_page_citation_and_resolve_envelopes() -> None:
    _, [(status, listed)] = _call("GET", "/contexts/corpus-a/sources?limit=1000")
    assert status == 200 and set(listed["result"]) == {"total", "sources", "entries"}
    _, [(status, cited)] = _call(
        "POST", "/contexts/corpus-a/citations", {"source": "doc.md", "paragraph": 0}
    )
    assert status == 200
    assert set(cited["result"]) == {"text", "source", "section", "locator"}
    for route in ("resolve", "resolve_label"):
        _, [(status, resolved)] = _call("POST", f"/contexts/corpus-a/{route}", {"cue": "alpha"})
        assert status == 200 and isinstance(resolved["result"], list), resolved
        assert set(resolved) == {"result", "status", "time"}


def test_citation_refusals_keep_their_code() -> None:
    _, [(status, answer)] = _call(
        "POST", "/contexts/corpus-a/citations", {"source": "other.md", "paragraph": 0}
    )
    assert (status, answer["code"]) == (404, "no_source")
    _, [(status, answer)] = _call(
        "POST", "/contexts/corpus-a/citations", {"source": "doc.md", "paragraph": 7}
    )
    assert (status, answer["code"]) == (404, "no_paragraph")
    assert set(answer) == {"status", "code", "error", "time"}


def test_unknown_context_is_no_context_on_every_route() -> None:
    recorded = wire("error_no_context")
    for method, route, body in [
        ("GET", "", None),
        ("GET", "/embeddings", None),
        ("GET", "/sources", None),
        ("POST", "/sources/search", {"query": "x"}),
        ("POST", "/resolve", {"cue": "x"}),
        ("POST", "/resolve_label", {"cue": "x"}),
        ("POST", "/query", {"subject": "x"}),
        ("POST", "/citations", {"source": "doc.md", "paragraph": 0}),
    ]:
        _, [(status, answer)] = _call(method, f"/contexts/does-not-exist{route}", body)
        assert status == 404, route
        assert same_shape(answer, recorded["response"]) == []
        assert answer["error"] == recorded["response"]["error"]


def test_import_answers_the_batches_shape() -> None:
    recorded = wire("import")
    answer = _matches_fixture("import", "/import", data=recorded["request"].encode("utf-8"))
    assert answer["result"] == recorded["response"]["result"]


def test_an_import_refusal_carries_its_extras() -> None:
    recorded = wire("import_refusal_durable_prefix")
    answer = _matches_fixture(
        "import_refusal_durable_prefix", "/import", data=recorded["request"].encode("utf-8")
    )
    assert answer["issues"] == recorded["response"]["issues"]
    assert answer["integrity"] == "durable_prefix"
