"""Bearer keys and roles as the reference reads them; read-only unless --writable."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientSession

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
