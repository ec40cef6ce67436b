"""Every recorded wire fixture, replayed against the real server over a real store.

The test walks `wire/http/`. A fixture of a route this server answers is
replayed on loopback against `create_app(SqliteStore)` — the state it needs
imported first through `POST /import` on a writable server — and the answer
must carry the fixture's status, envelope, keys and JSON types (recursively;
every element of a list against the fixture's first). A fixture of a route
this server does not answer is named in `NOT_SERVED` and its recorded request
must answer 404 `unknown_path`, 405 `method_not_allowed` or 501 `not_implemented`. A fixture in
neither table fails, so a new recording is classified before it is forgotten.

Some fixtures record a route this server does not answer but a shape it does:
`recall` is the shape of `POST …/query` (EVALUATE.md §1.4), and the `error_*`
fixtures, recorded on `…/evidence`, are the error envelope every route uses.
Those are replayed on the served route that gives the same answer (`Replay.route`),
and their recorded route must still answer 404, 405 or 501 `not_implemented`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from taguru_ray.context.store import SqliteStore
from taguru_ray.serve import ServeConfig
from taguru_ray.serve.auth import Keyring, Role, Scope
from tests.serve_fake import WIRE, run_server, wire

ADMIN, SCOPED = "admin-token", "scoped-token"
KEYRING = Keyring(
    (("admin", ADMIN), ("scoped", SCOPED)),
    {"scoped": Scope(Role.READ, frozenset({"corpus-c"}))},
)
PASSAGE = "青嶺酒造は雲居県霧沢町の蔵元である。"
# What the fixtures were recorded against: corpus-a holds one sourced, located fact
# (contexts_list, recall), corpus-c one paragraph (sources_search) and a fact of its own,
# so every directory entry fills the arrays the recorded one fills.
SEED = "".join(
    json.dumps(record, ensure_ascii=False) + "\n"
    for record in (
        {"taguru_batch": 1, "context": "corpus-a", "source": "doc.md",
         "create": {"description": "wire-contract corpus"}},
        {"passage": "alpha beta"},
        {"paragraph": 0, "locator": {"kind": "page", "value": "1"}},
        {"subject": "alpha", "label": "connects_to", "object": "beta", "weight": 2.0,
         "paragraph": 0},
        {"taguru_batch": 1, "context": "corpus-c", "source": "doc.md", "create": {}},
        {"passage": PASSAGE},
        {"subject": "青嶺酒造", "label": "所在地", "object": "霧沢町", "weight": 1.0},
    )
)  # fmt: skip


@dataclass(frozen=True)
class Replay:
    """How a served fixture is replayed. By default: its own method, route and request."""

    context: str = "corpus-a"  # fills the route's {name}
    route: str | None = None  # a served route standing in for a recorded one it does not serve
    request: Any = None  # with `route`: the body sent there instead of the recorded one
    token: str = ADMIN
    same_result: bool = False  # the `result` must equal the recording, value for value
    same_fields: tuple[str, ...] = ()  # envelope fields that must equal the recording's
    error: str = ""  # with `route`: how the stand-in's error text must begin
    empty: frozenset[str] = field(default_factory=frozenset)  # arrays legitimately empty here


# This server speaks none of these formats or protocols, so it lists none.
_UNSPOKEN = frozenset(
    {"$.communities_formats", "$.image_formats", "$.mcp_contract.supported",
     "$.mcp_protocol.supported"}
)  # fmt: skip

SERVED: dict[str, Replay] = {
    "health": Replay(),
    "version": Replay(empty=_UNSPOKEN),
    "contexts_list": Replay(),
    "embeddings_status": Replay(same_result=True),
    "sources_search": Replay(context="corpus-c", same_result=True),
    "import": Replay(same_result=True),
    "import_with_schema": Replay(same_result=True),
    "import_refusal_durable_prefix": Replay(
        same_fields=("code", "error", "integrity", "issues", "issues_total", "durable_batches")
    ),
    "recall": Replay(route="/contexts/{name}/query", request={"subject": "alpha"},
                     same_result=True),
    "error_no_context": Replay(context="does-not-exist", same_fields=("code", "error")),
    "error_malformed_request": Replay(
        same_fields=("code",), error="Failed to deserialize the JSON body into the target "
        'type: budget: invalid type: string "not-an-object", expected ',
    ),
    "error_over_limit": Replay(same_fields=("code", "error")),
    "error_forbidden": Replay(
        token=SCOPED, same_fields=("code",),
        error="key 'scoped' has no grant on context 'corpus-a'",
    ),
    "store_passages": Replay(same_result=True),
    "associations_store": Replay(same_result=True),
}  # fmt: skip

# Routes of the reference's write, graph-walk and assembly surface, which the embedded
# context does not serve (ADR 0032; EVALUATE.md §1.1 lists what evaluate calls).
NOT_SERVED = frozenset(
    {
        "activate",
        "aliases_list",
        "aliases_register",
        "aliases_remove",
        "changes",
        "changes_stale_cursor",
        "communities_search",
        "consolidation_audit",
        "drift_audit",
        "explore",
        "labels",
        "paths",
        "promote",
        "promote_dry_run",
        "unreachable_from",
        "vocabulary_audit",
    }
)

# Served routes whose recording needs a corpus of its own or a feature this store lacks:
# held to the recording elsewhere, or only to its status and `result` here.
ELSEWHERE = {
    "evidence_mixed_lanes": "equal as JSON in tests/test_serve_evidence.py",
    "evidence_contradiction_group": "equal as JSON in tests/test_serve_evidence.py",
    "evidence_duplicate_passage": "equal as JSON in tests/test_serve_evidence.py",
    "evidence_budget_constrained": "equal as JSON in tests/test_serve_evidence.py",
    "evidence_communities_degrade_and_rerank_reason": "shape in tests/test_serve_evidence.py",
    "add_associations_warn": "no schema here, so no `issues`; see associations_store",
}

FIXTURES = sorted(path.stem for path in WIRE.glob("*.json"))


def shape_problems(
    actual: Any, expected: Any, empty: frozenset[str] = frozenset(), path: str = "$"
) -> list[str]:
    """Where `actual` departs from `expected` in keys or JSON types (values may differ).
    Every element of an array is held to the expected array's first; an array the
    recording fills may be empty only at a path named in `empty`. Integers and
    fractions are distinct types, as serde writes a u32 and an f32 distinctly."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: {type(actual).__name__}, expected an object"]
        problems = []
        if set(actual) != set(expected):
            problems.append(f"{path}: keys {sorted(actual)} != {sorted(expected)}")
        for key in sorted(expected.keys() & actual.keys()):
            problems += shape_problems(actual[key], expected[key], empty, f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: {type(actual).__name__}, expected an array"]
        if not expected:
            return []
        if not actual and path not in empty:
            return [f"{path}: empty, but the recording has {len(expected)} element(s)"]
        return [p for item in actual for p in shape_problems(item, expected[0], empty, path)]
    kinds = (bool, int, float, str, type(None))
    wanted = next(kind for kind in kinds if isinstance(expected, kind))
    if type(actual) is not wanted:
        return [f"{path}: {actual!r} is not of the type of {expected!r}"]
    return []


def _body(request: Any) -> dict[str, Any]:
    if request is None:
        return {}
    if isinstance(request, str):  # a batch stream
        return {"data": request.encode("utf-8")}
    return {"json": request}


def _exchange(name: str, folder: Path) -> tuple[dict[str, Any], dict[str, tuple[int, Any]]]:
    """Seed a fresh store, then send the fixture's replay and its recorded request."""
    recorded = wire(name)
    replay = SERVED.get(name)
    sends: dict[str, tuple[str, str, dict[str, Any], str]] = {}
    if replay is not None:
        route = replay.route or recorded["route"]
        request = replay.request if replay.route else recorded["request"]
        path = route.replace("{name}", replay.context)
        sends["replay"] = (recorded["method"], path, _body(request), replay.token)
    if replay is None or replay.route is not None:
        path = recorded["route"].replace("{name}", "corpus-a")
        sends["recorded"] = (recorded["method"], path, _body(recorded["request"]), ADMIN)
    answers: dict[str, tuple[int, Any]] = {}

    async def scenario(session: ClientSession, base: str) -> None:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        async with session.post(base + "/import", data=SEED.encode(), headers=headers) as seeded:
            assert seeded.status == 200, await seeded.text()
        for key, (method, path, body, token) in sends.items():
            headers = {"Authorization": f"Bearer {token}"}
            async with session.request(method, base + path, headers=headers, **body) as response:
                answers[key] = (response.status, json.loads(await response.text()))

    store = SqliteStore(folder)
    try:
        run_server(store, scenario, ServeConfig(writable=True, keyring=KEYRING))
    finally:
        store.close()
    return recorded, answers


def test_the_tables_name_only_recorded_fixtures_and_each_once() -> None:
    assert not SERVED.keys() & NOT_SERVED and not ELSEWHERE.keys() & (SERVED.keys() | NOT_SERVED)
    assert (SERVED.keys() | NOT_SERVED | ELSEWHERE.keys()) - set(FIXTURES) == set()  # no stale


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_is_answered_in_its_recorded_shape_or_not_served(
    name: str, tmp_path: Path
) -> None:
    assert name in SERVED or name in NOT_SERVED or name in ELSEWHERE, (
        f"wire fixture {name!r} is new: replay it in SERVED or name it in NOT_SERVED"
    )
    if name in ELSEWHERE:
        return
    recorded, answers = _exchange(name, tmp_path)
    if "replay" in answers:
        replay = SERVED[name]
        status, answer = answers["replay"]
        expected = recorded["response"]
        assert status == recorded["status"], answer
        assert shape_problems(answer, expected, replay.empty) == []
        if replay.same_result:
            assert answer["result"] == expected["result"]
        for key in replay.same_fields:
            assert answer[key] == expected[key], key
        assert answer.get("error", "").startswith(replay.error)
    if "recorded" in answers:  # a route this server does not answer
        status, answer = answers["recorded"]
        assert (status, answer["code"]) in {
            (404, "unknown_path"), (405, "method_not_allowed"), (501, "not_implemented")
        }
        assert shape_problems(answer, wire("error_no_context")["response"]) == []
