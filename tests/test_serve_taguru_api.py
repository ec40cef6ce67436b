"""Taguru's HTTP surface of `taguru-ray serve`, route by route, through a plain HTTP
client against a real subprocess started only by environment variables — the way the
reference SDK's integration harness starts Taguru (tests/taguru_start.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.taguru_start import READER, SESSION_ENV, client, spawned, taguru_env
from tests.test_serve_cli import SERVE

AOMINE = (
    "青嶺酒造は雲居県霧沢町の蔵元である。\n\n杜氏は高瀬である。\n\n\n仕込み水は霧沢の伏流水。\n"
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("taguru") / "data"  # missing: it becomes a store
    with spawned(data, **SESSION_ENV) as url:
        yield url


def _name(request: pytest.FixtureRequest) -> str:
    return "t-" + request.node.name[-40:].replace("[", "-").replace("]", "")


def _error(response: object, status: int, code: str) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body["status"] == "error" and body["code"] == code and body["error"]


def test_no_arguments_an_empty_data_dir_and_the_listening_line(tmp_path: Path) -> None:
    data = tmp_path / "empty"
    data.mkdir()
    with spawned(data) as url, client(url, None) as http:
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        assert http.get("/health").json()["status"] == "ok"
        assert http.put("/contexts/c", json={}).json()["result"] is True  # writable
    assert (data / "taguru-context.sqlite3").is_file()


def test_a_data_dir_holding_foreign_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "image.bin").write_bytes(b"not ours")
    done = subprocess.run(
        SERVE, env=taguru_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "TAGURU_DATA_DIR" in done.stderr and done.stderr.count("\n") == 1


def test_probes_answer_without_a_token(base: str) -> None:
    with client(base, None) as http:
        assert http.get("/live").status_code == 200
        assert http.get("/health").json()["status"] == "ok"
        metrics = http.get("/metrics")
        assert metrics.status_code == 200 and "taguru_http_requests_total" in metrics.text
        assert metrics.headers["content-type"].startswith("text/plain")
        version = http.get("/version").json()
        assert version["http_contract"]["supported"] == [1]


def test_a_wrong_or_missing_token_is_401(base: str) -> None:
    with client(base, "wrong") as wrong, client(base, None) as anonymous:
        _error(wrong.get("/contexts"), 401, "unauthorized")
        _error(anonymous.get("/contexts"), 401, "unauthorized")
    with client(base) as right:
        assert right.get("/contexts").status_code == 200  # the same route with the key


def test_context_lifecycle(base: str, request: pytest.FixtureRequest) -> None:
    name = _name(request)
    with client(base) as http:
        _error(http.get(f"/contexts/{name}"), 404, "no_context")
        assert http.put(f"/contexts/{name}", json={"description": "d1"}).json()["result"] is True
        _error(http.put(f"/contexts/{name}", json={}), 409, "already_exists")
        assert http.get(f"/contexts/{name}").json()["result"]["description"] == "d1"
        meta = http.patch(f"/contexts/{name}", json={"description": "d2", "pinned": True})
        assert meta.json()["result"] == {
            "description": "d2",
            "pinned": True,
            "dice_floor": None,
            "semantic_floor": None,
        }
        seen, after = [], None
        while True:  # keyset paging until an empty page, as the SDK's iterator does
            params = {"limit": 2} | ({"after": after} if after else {})
            page = http.get("/contexts", params=params).json()["result"]["contexts"]
            if not page:
                break
            seen += [entry["name"] for entry in page]
            after = page[-1]["name"]
        assert name in seen
        renamed = name + "-r"
        assert http.post(f"/contexts/{name}/rename", json={"to": renamed}).json()["result"]
        _error(http.get(f"/contexts/{name}"), 404, "no_context")
        entry = http.get(f"/contexts/{renamed}").json()["result"]
        assert entry["description"] == "d2" and entry["pinned"] is True
        assert http.delete(f"/contexts/{renamed}").json()["result"] is True
        _error(http.get(f"/contexts/{renamed}"), 404, "no_context")
        _error(http.delete(f"/contexts/{renamed}"), 404, "no_context")


def test_associations_average_weight_over_attributions_and_validate(
    base: str, request: pytest.FixtureRequest
) -> None:
    name = _name(request)
    triple = {"subject": "s", "label": "l", "object": "o"}
    with client(base) as http:
        http.put(f"/contexts/{name}", json={})
        ops = f"/contexts/{name}/associations"
        assert http.post(ops, json=[triple | {"weight": 1.0, "source": "a"}]).json()["result"] == 1
        assert http.post(ops, json=[triple | {"weight": 3.0, "source": "b"}]).json()["result"] == 1
        found = http.post(f"/contexts/{name}/query", json={"subject": "s", "label": "l"})
        result = found.json()["result"]
        assert result["total"] == 1
        match = result["matches"][0]
        assert match["weight"] == 2.0 and match["count"] == 2  # (1 + 3) / 2
        assert {a["source"] for a in match["attributions"]} == {"a", "b"}
        _error(http.post(ops, json=[triple | {"weight": 1e300}]), 400, "invalid_argument")
        _error(http.post(ops, json=[triple | {"subject": ""}]), 400, "invalid_argument")
        nan = b'[{"subject":"s","label":"l","object":"o","weight":NaN}]'
        headers = {"Content-Type": "application/json"}
        _error(http.post(ops, content=nan, headers=headers), 400, "invalid_argument")
        _error(http.post(ops, json=[triple] * 10_001), 400, "over_limit")
        _error(http.post("/contexts/t-absent/associations", json=[triple]), 404, "no_context")
        # Nothing of a refused request was applied.
        again = http.post(f"/contexts/{name}/query", json={"subject": "s"}).json()["result"]
        assert again["matches"][0]["count"] == 2


def test_passages_store_look_up_search_cite_and_retract(
    base: str, request: pytest.FixtureRequest
) -> None:
    name = _name(request)
    with client(base) as http:
        http.put(f"/contexts/{name}", json={})
        stored = http.post(
            f"/contexts/{name}/sources",
            json={
                "passages": {"docs/aomine.md": AOMINE, "other.md": "別の文書。"},
                "questions": {
                    "docs/aomine.md": [
                        {"paragraph": 1, "question": "杜氏は誰か"},
                        {"paragraph": 9, "question": "範囲外"},
                    ]
                },
                "sections": {
                    "docs/aomine.md": [
                        {"paragraph": 0, "section": "沿革"},
                        {"paragraph": 8, "section": "範囲外"},
                    ]
                },
                "locators": {
                    "docs/aomine.md": [{"paragraph": 1, "locator": {"kind": "page", "value": "2"}}]
                },
                "tags": {"docs/aomine.md": ["sake"]},
            },
        )
        assert stored.json()["result"] == {
            "stored": 2,
            "questions_stored": 1,
            "questions_dropped": 1,
            "sections_stored": 1,
            "sections_dropped": 1,
            "locators_stored": 1,
            "locators_dropped": 0,
        }
        listed = http.get(f"/contexts/{name}/sources").json()["result"]
        assert listed["sources"] == ["docs/aomine.md", "other.md"]
        looked = http.post(
            f"/contexts/{name}/sources/lookup", json={"sources": ["docs/aomine.md", "missing.md"]}
        ).json()["result"]
        assert looked == {"passages": {"docs/aomine.md": AOMINE}, "missing": ["missing.md"]}
        hits = http.post(
            f"/contexts/{name}/sources/search", json={"query": "杜氏は高瀬である", "limit": 3}
        ).json()["result"]["hits"]
        assert (hits[0]["source"], hits[0]["paragraph"]) == ("docs/aomine.md", 1)
        cited = http.post(
            f"/contexts/{name}/citations", json={"source": "docs/aomine.md", "paragraph": 1}
        ).json()["result"]
        assert cited["text"] == "杜氏は高瀬である。" and cited["locator"] == {
            "kind": "page",
            "value": "2",
        }
        # A passage store keeps the source's facts; a retraction removes both.
        http.post(
            f"/contexts/{name}/associations",
            json=[
                {
                    "subject": "青嶺酒造",
                    "label": "杜氏",
                    "object": "高瀬",
                    "source": "docs/aomine.md",
                    "paragraph": 1,
                }
            ],
        )
        http.post(f"/contexts/{name}/sources", json={"passages": {"docs/aomine.md": AOMINE}})
        query = {"subject": "青嶺酒造"}
        assert http.post(f"/contexts/{name}/query", json=query).json()["result"]["total"] == 1
        retracted = http.post(
            f"/contexts/{name}/sources/retract", json={"source": "docs/aomine.md"}
        ).json()["result"]
        assert retracted == {"associations_touched": 1, "passage_removed": True}
        assert http.get(f"/contexts/{name}/sources").json()["result"]["sources"] == ["other.md"]
        assert http.post(f"/contexts/{name}/query", json=query).json()["result"]["total"] == 0
        _error(
            http.post(
                f"/contexts/{name}/sources", json={"passages": {"a": "x"}, "questions": {"b": []}}
            ),
            400,
            "invalid_argument",
        )


WRITES = [
    ("PUT", "/contexts/{n}", {}),
    ("PATCH", "/contexts/{n}", {"description": "x"}),
    ("DELETE", "/contexts/{n}", None),
    ("POST", "/contexts/{n}/rename", {"to": "elsewhere"}),
    ("POST", "/contexts/{n}/associations", [{"subject": "s", "label": "l", "object": "o"}]),
    ("POST", "/contexts/{n}/sources", {"passages": {"a.md": "x"}}),
    ("POST", "/contexts/{n}/sources/retract", {"source": "a.md"}),
    ("POST", "/flush", None),
]


@pytest.mark.parametrize("context", ["t-reader-target", "t-does-not-exist"])
def test_a_read_key_is_refused_every_write_before_routing_answers(base: str, context: str) -> None:
    with client(base) as admin, client(base, READER) as reader:
        admin.put("/contexts/t-reader-target", json={})
        for method, route, body in WRITES:
            answer = reader.request(method, route.replace("{n}", context), json=body)
            _error(answer, 403, "forbidden")
        imported = reader.post(
            "/import", content=b"{}", headers={"Content-Type": "application/x-ndjson"}
        )
        _error(imported, 403, "forbidden")
        assert reader.get("/contexts/t-reader-target").status_code == 200
        search = reader.post("/contexts/t-reader-target/sources/search", json={"query": "x"})
        assert search.status_code == 200


def test_flush_names_the_contexts_written_since_the_last(
    base: str, request: pytest.FixtureRequest
) -> None:
    name = _name(request)
    with client(base) as http:
        http.post("/flush")
        http.put(f"/contexts/{name}", json={})
        assert name in http.post("/flush").json()["result"]
        assert name not in http.post("/flush").json()["result"]


@pytest.mark.parametrize("route", ["recall", "explore", "paths", "communities/search"])
def test_graph_routes_answer_501_with_a_code_and_a_line(base: str, route: str) -> None:
    with client(base) as http:
        answer = http.post(f"/contexts/any/{route}", json={"origins": ["x"]})
        _error(answer, 501, "not_implemented")
        assert answer.json()["error"].startswith("taguru-ray serve does not implement POST")
        _error(http.get("/contexts/any/communities"), 501, "not_implemented")


def test_the_body_cap_answers_413(tmp_path: Path) -> None:
    env = {"TAGURU_API_TOKEN": "cap-token", "TAGURU_MAX_BODY_BYTES": "1024"}
    with spawned(tmp_path / "data", **env) as url, client(url, "cap-token") as http:
        assert http.put("/contexts/c", json={}).json()["result"] is True
        ops = [{"subject": f"s{i}", "label": "l", "object": "o"} for i in range(200)]
        _error(http.post("/contexts/c/associations", json=ops), 413, "payload_too_large")
        assert http.post("/contexts/c/associations", json=ops[:2]).status_code == 200


def test_the_rate_limit_answers_429_with_retry_after_and_spares_probes(tmp_path: Path) -> None:
    env = {"TAGURU_API_TOKEN": "rl-token", "TAGURU_RATE_LIMIT_PER_MIN": "3"}
    with spawned(tmp_path / "data", **env) as url, client(url, "rl-token") as http:
        for probe in ("/version", "/live", "/health"):  # the SDK's start-up calls: free
            assert http.get(probe).status_code == 200
        answers = [http.get("/contexts") for _ in range(10)]
        limited = [a for a in answers if a.status_code == 429]
        assert limited, [a.status_code for a in answers]
        _error(limited[0], 429, "rate_limited")
        assert int(limited[0].headers["Retry-After"]) > 0
        assert http.get("/health").status_code == 200


def test_evidence_answers_over_http(base: str, request: pytest.FixtureRequest) -> None:
    name = _name(request)
    with client(base) as http:
        http.put(f"/contexts/{name}", json={})
        http.post(f"/contexts/{name}/sources", json={"passages": {"a.md": AOMINE}})
        http.post(
            f"/contexts/{name}/associations",
            json=[
                {
                    "subject": "青嶺酒造",
                    "label": "杜氏",
                    "object": "高瀬",
                    "source": "a.md",
                    "paragraph": 1,
                }
            ],
        )
        package = http.post(
            f"/contexts/{name}/evidence", json={"origins": ["青嶺酒造"], "budget": {"max_items": 1}}
        ).json()["result"]
        assert [item["kind"] for item in package["items"]] == ["association"]
        assert package["citations"][0]["citation"]["text"] == "杜氏は高瀬である。"
        assert package["budget"]["limits"]["max_items"] == 1
        assert package["omitted_by_reason"] == {"budget_exceeded": 1}
        _error(
            http.post(f"/contexts/{name}/evidence", json={"origins": "x", "budget": "no"}),
            422,
            "malformed_request",
        )
    assert json.loads(json.dumps(package))  # plain JSON throughout
