"""Bearer keys and roles as the reference reads them; read-only unless --writable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from taguru_ray.contract.source_file import FORMAT_VERSION
from taguru_ray.serve import ServeConfig
from taguru_ray.serve.auth import KeyringError, Role, keyring_from_env, presented_token
from tests.serve_fake import FakeStore, run_server, wire

ENV = {
    "TAGURU_API_TOKEN": "legacy",
    "TAGURU_API_TOKENS": "boss:atok, reader:rtok, scribe:wtok, sake:stok,",
    "TAGURU_KEY_SCOPES": '{"reader": "read", "scribe": "write", '
    '"sake": {"role": "admin", "contexts": ["corpus-c"]}}',
}
IMPORT_BODY = wire("import")["request"].encode("utf-8")


def calls(
    *requests: tuple[str, str, str | None, dict[str, Any]], writable: bool = False
) -> list[tuple[int, Any, str | None]]:
    """(status, body, WWW-Authenticate) of each (method, path, token, kwargs)."""
    answers: list[tuple[int, Any, str | None]] = []
    config = ServeConfig(writable=writable, keyring=keyring_from_env(ENV))

    async def scenario(session: ClientSession, base: str) -> None:
        for method, path, token, kwargs in requests:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with session.request(method, base + path, headers=headers, **kwargs) as r:
                answers.append((r.status, await r.json(), r.headers.get("WWW-Authenticate")))

    run_server(FakeStore(), scenario, config)
    return answers


def test_the_keyring_reads_names_roles_and_context_grants() -> None:
    ring = keyring_from_env(ENV)
    assert [name for name, _ in ring.keys] == ["default", "boss", "reader", "scribe", "sake"]
    assert ring.authenticate("rtok") == "reader" and ring.authenticate("nope") is None
    assert ring.scope_of("reader").role is Role.READ
    assert ring.scope_of("boss").role is Role.ADMIN  # a key the scopes do not name
    assert ring.scope_of("sake").allows("corpus-c") and not ring.scope_of("sake").allows("x")
    assert keyring_from_env({}).disabled


@pytest.mark.parametrize(
    "env",
    [
        {"TAGURU_API_TOKEN": ""},
        {"TAGURU_API_TOKENS": ""},
        {"TAGURU_API_TOKENS": "sekrit-pasted-alone"},
        {"TAGURU_API_TOKENS": "ci:"},
        {"TAGURU_API_TOKENS": ":sekrit-nameless"},
        {"TAGURU_API_TOKENS": "ci:sekrit-a,ci:sekrit-b"},
        {"TAGURU_API_TOKEN": "sekrit-x", "TAGURU_API_TOKENS": "default:sekrit-y"},
        {"TAGURU_API_TOKENS": "ci:sekrit", "TAGURU_KEY_SCOPES": '{"nobody": "read"}'},
        {"TAGURU_API_TOKENS": "ci:sekrit", "TAGURU_KEY_SCOPES": '{"ci": "owner"}'},
        {
            "TAGURU_API_TOKENS": "ci:sekrit",
            "TAGURU_KEY_SCOPES": '{"ci": {"role": "read", "contexts": []}}',
        },
        {"TAGURU_API_TOKENS": "ci:sekrit", "TAGURU_KEY_SCOPES": "not json"},
    ],
)
def test_a_malformed_credential_variable_is_refused_without_echoing_a_token(
    env: dict[str, str],
) -> None:
    with pytest.raises(KeyringError) as caught:
        keyring_from_env(env)
    assert "sekrit" not in str(caught.value)


def test_the_bearer_scheme_is_case_insensitive_and_single_valued() -> None:
    assert presented_token(["bEaReR tok"]) == "tok"
    assert presented_token(["Basic tok"]) is None
    assert presented_token(["Bearer a", "Bearer b"]) is None
    assert presented_token([]) is None


def test_missing_or_wrong_tokens_are_401_with_a_bearer_challenge_but_health_is_open() -> None:
    answers = calls(
        ("GET", "/contexts", None, {}),
        ("GET", "/contexts", "wrong", {}),
        ("GET", "/health", None, {}),
        ("GET", "/contexts", "legacy", {}),
        ("GET", "/nowhere", None, {}),
    )
    for status, body, challenge in answers[:2]:
        assert (status, body["code"], challenge) == (401, "unauthorized", "Bearer")
    assert answers[2][0] == 200 and answers[3][0] == 200
    assert answers[4][0] == 401  # unknown paths are no way around the gate


def test_a_read_key_reads_but_cannot_import() -> None:
    answers = calls(
        ("POST", "/contexts/corpus-c/sources/search", "rtok", {"json": {"query": "酒造"}}),
        ("POST", "/import", "rtok", {"data": IMPORT_BODY}),
        writable=True,
    )
    assert answers[0][0] == 200
    status, body, _ = answers[1]
    assert (status, body["code"]) == (403, "forbidden")
    assert "'reader' has role 'read'" in body["error"] and "needs 'admin'" in body["error"]


def test_import_is_refused_on_a_read_only_server_even_to_an_admin() -> None:
    [(status, body, _)] = calls(("POST", "/import", "atok", {"data": IMPORT_BODY}))
    assert (status, body["code"]) == (403, "forbidden")
    assert "--writable" in body["error"]
    # A dry run writes nothing, so it is answered read-only too.
    [(status, _, _)] = calls(("POST", "/import?dry_run=true", "atok", {"data": IMPORT_BODY}))
    assert status == 200


def test_a_writable_server_imports_for_an_admin_key_only() -> None:
    answers = calls(
        ("POST", "/import", "wtok", {"data": IMPORT_BODY}),
        ("POST", "/import", "atok", {"data": IMPORT_BODY}),
        ("POST", "/import?dry_run=maybe", "atok", {"data": IMPORT_BODY}),
        writable=True,
    )
    assert [a[0] for a in answers] == [403, 200, 400]


def test_a_context_scoped_key_sees_and_touches_its_contexts_only() -> None:
    answers = calls(
        ("GET", "/contexts", "stok", {}),
        ("GET", "/contexts/corpus-c", "stok", {}),
        ("GET", "/contexts/corpus-a", "stok", {}),
        ("POST", "/import", "stok", {"data": IMPORT_BODY}),  # its batch names corpus-f
        writable=True,
    )
    listed = answers[0][1]["result"]
    assert [e["name"] for e in listed["contexts"]] == ["corpus-c"] and listed["total"] == 1
    assert answers[1][0] == 200
    assert (answers[2][0], answers[2][1]["code"]) == (403, "forbidden")
    assert answers[3][0] == 403 and "corpus-f" in answers[3][1]["error"]


UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"
PASSAGE_LINE = {"passage": "青嶺酒造は雲居県霧沢町の蔵元である。"}


def _stream(*headers: dict[str, Any]) -> bytes:
    """One batch per header, each with a passage: a stream POST /import applies."""
    lines = [line for header in headers for line in (header, PASSAGE_LINE)]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def _import_as_scoped_key(folder: Path, body: bytes) -> tuple[int, Any, list[str]]:
    """POST /import with the key granted corpus-c only, on a writable server over a real
    store: (status, answer, the store's context names afterwards)."""
    from taguru_ray.context.store import SqliteStore

    store = SqliteStore(folder)
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        headers = {"Authorization": "Bearer stok"}
        async with session.post(base + "/import", data=body, headers=headers) as response:
            answers.append((response.status, await response.json()))

    try:
        run_server(store, scenario, ServeConfig(writable=True, keyring=keyring_from_env(ENV)))
        names = [entry["name"] for entry in store.contexts()["contexts"]]
    finally:
        store.close()
    [(status, answer)] = answers
    return status, answer, names


@pytest.mark.parametrize(
    ("header", "named"),
    [
        # taguru-ray's own source file: a context id and its name in the create block
        ({"type": "source", "version": FORMAT_VERSION, "id": "doc.md", "context_id": UUID,
          "create": {"name": "corpus-x"}}, "corpus-x"),
        ({"type": "source", "id": "doc.md", "context_id": UUID}, UUID),  # named by its id
        # the ADR 0042 step: a context name in `context`
        ({"type": "source", "id": "doc.md", "context": "corpus-x",
          "create": {"description": "d"}}, "corpus-x"),
        ({"taguru_batch": 1, "context": "corpus-x", "source": "doc.md", "create": {}},
         "corpus-x"),
    ],
)  # fmt: skip
def test_a_scoped_key_imports_into_no_ungranted_context_in_any_header_shape(
    tmp_path: Path, header: dict[str, Any], named: str
) -> None:
    status, answer, names = _import_as_scoped_key(tmp_path, _stream(header))
    assert (status, answer["code"]) == (403, "forbidden"), answer
    assert f"no grant on context '{named}'" in answer["error"]
    assert names == []  # refused before anything applied


def test_one_ungranted_batch_refuses_the_whole_stream_before_any_batch_applies(
    tmp_path: Path,
) -> None:
    granted = {"type": "source", "id": "a.md", "context": "corpus-c", "create": {}}
    other = {"type": "source", "id": "b.md", "context_id": UUID, "create": {"name": "corpus-x"}}
    status, answer, names = _import_as_scoped_key(tmp_path, _stream(granted, other))
    assert status == 403 and "corpus-x" in answer["error"]
    assert names == []


def test_a_scoped_key_imports_its_own_context_in_the_newest_header_shape(tmp_path: Path) -> None:
    header = {"type": "source", "version": FORMAT_VERSION, "id": "doc.md", "context_id": UUID,
              "create": {"name": "corpus-c"}}  # fmt: skip
    status, answer, names = _import_as_scoped_key(tmp_path, _stream(header))
    assert status == 200, answer
    assert names == ["corpus-c"]


def _as_keys(folder: Path, *requests: tuple[str, str, str, Any]) -> tuple[list[int], list[str]]:
    """Each (method, path, token, json body) on a writable server over a real store holding
    corpus-c and corpus-a: the statuses, then the store's context names."""
    from taguru_ray.context.store import SqliteStore

    store = SqliteStore(folder)
    for name in ("corpus-c", "corpus-a"):
        store.import_stream(_stream({"taguru_batch": 1, "context": name, "source": "d.md",
                                     "create": {}}))  # fmt: skip
    statuses: list[int] = []

    async def scenario(session: ClientSession, base: str) -> None:
        for method, path, token, body in requests:
            headers = {"Authorization": f"Bearer {token}"}
            async with session.request(method, base + path, json=body, headers=headers) as r:
                statuses.append(r.status)

    try:
        run_server(store, scenario, ServeConfig(writable=True, keyring=keyring_from_env(ENV)))
        names = sorted(entry["name"] for entry in store.contexts()["contexts"])
    finally:
        store.close()
    return statuses, names


def test_a_rename_cannot_move_a_context_out_of_the_keys_grant(tmp_path: Path) -> None:
    """Issue 49 item 6: admin on corpus-c only, renaming it to a name another key reads
    (or onto an existing context) is 403 and nothing moves; within the grant it moves."""
    statuses, names = _as_keys(
        tmp_path,
        ("POST", "/contexts/corpus-c/rename", "stok", {"to": "corpus-b"}),
        ("POST", "/contexts/corpus-c/rename", "stok", {"to": "corpus-a"}),
    )
    assert statuses == [403, 403]
    assert names == ["corpus-a", "corpus-c"]


def test_head_needs_what_get_needs(tmp_path: Path) -> None:
    """Issue 49 item 7: a read key's HEAD is answered as its GET is."""
    statuses, _ = _as_keys(
        tmp_path,
        ("GET", "/contexts/corpus-c", "rtok", None),
        ("HEAD", "/contexts/corpus-c", "rtok", None),
        ("HEAD", "/contexts", "rtok", None),
        ("HEAD", "/contexts/corpus-a", "stok", None),  # outside its grant: as GET, 403
    )
    assert statuses == [200, 200, 200, 403]
