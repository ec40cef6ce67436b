"""One check of a key's grant (issue 49, "a key kept inside its grant"): every route the
server serves × every kind of grant × the contexts a request names, in its path or its
body, against a real `taguru-ray serve --writable` over a real store.

The oracle is this file's own: which contexts a request names is read off what the
test put in it (the path's context, rename's ``to``, an import stream's batches, a
cross-context read's ``contexts``; a group or ``/flush`` reaches every context), the
role a route needs is the reference's table (`auth.required_role`). A request the
oracle forbids is answered 403 with every table of the store as it was; one it allows
is never 403.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from taguru_ray.context import schema
from taguru_ray.context.store import SqliteStore
from taguru_ray.serve import ServeConfig, create_app
from taguru_ray.serve.auth import EXEMPT_PATHS, Role, required_role
from taguru_ray.serve.grants import NAMED
from tests.serve_fake import FakeStore
from tests.test_serve_cli import SERVE, _env, running
from tests.test_serve_fuzz import Served, ask, tables

pytestmark = pytest.mark.fuzz

# name: (token, role, granted contexts or None for every one)
GRANTS: dict[str, tuple[str, Role, tuple[str, ...] | None]] = {
    "admin": ("g-admin", Role.ADMIN, None),
    "reader": ("g-reader", Role.READ, None),
    "read_c": ("g-read-c", Role.READ, ("corpus-c",)),
    "write_c": ("g-write-c", Role.WRITE, ("corpus-c",)),
    "admin_c": ("g-admin-c", Role.ADMIN, ("corpus-c",)),
    "admin_cd": ("g-admin-cd", Role.ADMIN, ("corpus-c", "corpus-d")),
}
CONTEXTS = ("corpus-c", "corpus-d", "corpus-x")


def _routes() -> list[tuple[str, str]]:
    """Every (method, route template) the server's router serves, HEAD included."""
    app = create_app(FakeStore(), ServeConfig())
    found = {
        (route.method, resource.canonical)
        for resource in app.router.resources()
        for route in resource
    }
    return sorted(found)


ROUTES = _routes()


def test_every_route_served_says_where_it_names_contexts() -> None:
    """A route is a probe, a route of one context (its path), or declared in `NAMED`: a
    route added later without a declaration is refused to a scoped key (fail closed)."""
    undeclared = [
        (method, route)
        for method, route in ROUTES
        if route not in EXEMPT_PATHS
        and not route.startswith("/contexts/{name}")
        and ("GET" if method == "HEAD" else method, route) not in NAMED
    ]
    assert undeclared == []


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("granted-store")
    store = SqliteStore(folder)
    for name in ("corpus-c", "corpus-d"):
        store.import_stream(_stream([name]))
    store.close()
    keys = {
        "TAGURU_API_TOKENS": ",".join(f"{name}:{token}" for name, (token, _, _) in GRANTS.items()),
        "TAGURU_KEY_SCOPES": json.dumps(
            {
                name: {"role": role.label, **({"contexts": list(c)} if c else {})}
                for name, (_, role, c) in GRANTS.items()
            }
        ),
    }
    command = (*SERVE, "--store", str(folder), "--port", "0", "--writable")
    with running(*command, env=_env(**keys)) as (proc, base):
        host, port = base.removeprefix("http://").rsplit(":", 1)
        yield Served(host, int(port), schema.store_file(folder))
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def _stream(contexts: list[str]) -> bytes:
    lines: list[dict[str, Any]] = []
    for index, name in enumerate(contexts):  # a source of its own each: a valid stream
        lines += [
            {"taguru_batch": 1, "context": name, "source": f"g{index}.md", "create": {}},
            {"passage": "青嶺酒造は雲居県霧沢町の蔵元である。"},
        ]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def _request(
    method: str, route: str, path_context: str, body_contexts: list[str], group: bool
) -> tuple[str, bytes, dict[str, str], list[str] | None]:
    """(path, body, headers, the contexts it names — None when it reaches every one)."""
    path = route.replace("{name}", quote(path_context, safe=""))
    named = [path_context] if route.startswith("/contexts/{name}") else []
    body: Any = {}
    if route == "/contexts/{name}/rename":
        body = {"to": body_contexts[0] if body_contexts else "corpus-y"}
        named.append(body["to"])
    elif route == "/import":
        named += body_contexts
        return path, _stream(body_contexts), {"Content-Type": "application/x-ndjson"}, named
    elif route in ("/recall", "/query", "/sources/search"):
        body = {"contexts": body_contexts, "query": "酒造", "subject": "a"}
        if group:
            body["groups"] = ["g"]
            return path, json.dumps(body).encode(), {"Content-Type": "application/json"}, None
        named += body_contexts
    elif route == "/flush" or route.startswith("/groups"):
        return path, b"{}", {"Content-Type": "application/json"}, None
    elif method in ("POST", "PUT", "PATCH"):
        body = {"query": "酒造", "cue": "青嶺", "subject": "a", "source": "g.md", "paragraph": 0}
    return path, json.dumps(body).encode(), {"Content-Type": "application/json"}, named


def _forbidden(grant: str, method: str, route: str, named: list[str] | None) -> bool:
    _, role, granted = GRANTS[grant]
    if role < required_role("GET" if method == "HEAD" else method, route):
        return True
    if granted is None:
        return False
    return named is None or any(context not in granted for context in named)


@given(
    grant=st.sampled_from(sorted(GRANTS)),
    method_route=st.sampled_from([r for r in ROUTES if r[1] not in EXEMPT_PATHS]),
    path_context=st.sampled_from(CONTEXTS),
    body_contexts=st.lists(st.sampled_from(CONTEXTS), min_size=1, max_size=3),
    group=st.booleans(),
)
def test_a_request_naming_a_context_outside_the_grant_is_403_and_changes_nothing(
    served: Served,
    grant: str,
    method_route: tuple[str, str],
    path_context: str,
    body_contexts: list[str],
    group: bool,
) -> None:
    method, route = method_route
    path, body, headers, named = _request(method, route, path_context, body_contexts, group)
    headers["Authorization"] = f"Bearer {GRANTS[grant][0]}"
    forbidden = _forbidden(grant, method, route, named)
    before = tables(served.store)
    status, raw = ask(served, method, path, body, headers)
    event(f"{'forbidden' if forbidden else 'allowed'} {status}")
    assert status < 500 or status == 501, raw[:300]  # 501: a route this server lacks
    if forbidden:
        assert status == 403, (grant, method, path, named, status, raw[:300])
        assert tables(served.store) == before, f"refused {method} {path} yet the store changed"
        if method != "HEAD":
            assert json.loads(raw)["code"] == "forbidden"
    else:
        assert status != 403, (grant, method, path, named, raw[:300])
