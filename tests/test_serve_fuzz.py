"""Hostile HTTP against a running `taguru-ray serve` (issue 37, "fuzz every reader").

One real server per module (`python -m taguru_ray serve --writable` with an admin key
and a key granted two contexts) over a real store; hypothesis sends it random JSON
shapes, random bytes, random paths, methods and media types, and random import
streams. Whatever arrives, the answer is never a 5xx, is always the JSON envelope
(`/health` and `/version` answer bare), and a refused request leaves every table of
the store as it was, as does a dry run. A scoped key's import touches no context it
was not granted. `--hypothesis-show-statistics` lists the answers each property saw.
"""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from taguru_ray.context import schema
from taguru_ray.context.store import SqliteStore
from tests.test_serve_cli import SERVE, _env, running
from tests.test_serve_store import SOURCE_FILE

pytestmark = pytest.mark.fuzz

ADMIN, SCOPED = "fuzz-admin", "fuzz-scoped"
GRANTED = ("corpus-c", "corpus-d")
KEYS = {
    "TAGURU_API_TOKENS": f"admin:{ADMIN},scoped:{SCOPED}",
    "TAGURU_KEY_SCOPES": json.dumps({"scoped": {"role": "admin", "contexts": list(GRANTED)}}),
}
BARE = ("/health", "/version")  # the two answers outside the envelope
UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"


@dataclass(frozen=True)
class Served:
    host: str
    port: int
    store: Path  # the SQLite file, read here only through a read-only connection


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("fuzzed-store")
    store = SqliteStore(folder)
    store.import_stream(SOURCE_FILE.encode("utf-8"))  # corpus-c, one passage
    store.close()
    command = (*SERVE, "--store", str(folder), "--port", "0", "--writable")
    with running(*command, env=_env(**KEYS)) as (proc, base):
        host, port = base.removeprefix("http://").rsplit(":", 1)
        yield Served(host, int(port), schema.store_file(folder))
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: sorted(conn.execute(f"SELECT * FROM {n}").fetchall(), key=repr) for n in names}
    finally:
        conn.close()


def context_names(path: Path) -> set[str]:
    return {row[1] for row in tables(path)["contexts"]}


def ask(
    served: Served, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(served.host, served.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def check(
    served: Served, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, Any]:
    """Send one request and hold its answer to the contract; returns status and answer."""
    before = tables(served.store)
    status, raw = ask(served, method, path, body, headers)
    assert status < 500, (status, raw[:300])
    answer = json.loads(raw)  # every answer is JSON, refusals included
    if status == 200 and path.split("?")[0] in BARE:
        return status, answer
    assert isinstance(answer, dict), raw[:300]
    event(f"{status} {answer.get('code', '')}")  # `--hypothesis-show-statistics` lists them
    if status == 200:
        assert answer["status"] == "ok" and "result" in answer, raw[:300]
    else:
        assert answer["status"] == "error", raw[:300]
        assert isinstance(answer["code"], str) and answer["code"], raw[:300]
        assert isinstance(answer["error"], str) and isinstance(answer["time"], float)
        assert tables(served.store) == before, f"refused {status} yet the store changed"
    return status, answer


# ---------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(
    ["query", "cue", "limit", "semantic_floor", "dice_floor", "tags", "since", "until",
     "subject", "label", "object", "source", "paragraph", "index", "after"]
)  # fmt: skip
request_objects = st.dictionaries(field_names | st.text(max_size=6), values, max_size=6)
hostile_texts = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" + "0" * 400]).map(
        lambda number: f'{{"query": "q", "cue": "q", "subject": "q", "semantic_floor": {number}}}'
    ),
    st.integers(min_value=1, max_value=200_000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(min_value=1, max_value=50_000).map(lambda d: '{"q":' * d + "1" + "}" * d),
)
json_texts = st.one_of(
    request_objects.map(lambda body: json.dumps(body, allow_nan=True)),
    values.map(lambda body: json.dumps(body, allow_nan=True)),
    hostile_texts,
)
# Weighted toward what gets past the gate (a served context, a valid key), so most
# examples reach the body readers; the rest probe the gate itself.
contexts = st.sampled_from(["corpus-c"] * 4 + ["corpus-d", "corpus-x", "", "%20", "%FF", "a%2Fb"])
# Each JSON route with a body it answers 200, to be mutated field by field.
ROUTE_BODIES = {
    "sources/search": {"query": "酒造"},
    "resolve": {"cue": "青嶺"},
    "resolve_label": {"cue": "r"},
    "query": {"subject": "a"},
    "citations": {"source": "doc.md", "paragraph": 0},
}
json_routes = st.sampled_from(sorted(ROUTE_BODIES))
routes = st.sampled_from(
    ["/health", "/version", "/contexts", "/contexts/{c}", "/contexts/{c}/embeddings",
     "/contexts/{c}/sources", "/contexts/{c}/sources/search", "/contexts/{c}/resolve",
     "/contexts/{c}/query", "/contexts/{c}/citations", "/import"]
)  # fmt: skip
segments = st.one_of(
    st.sampled_from(
        ["contexts", "corpus-c", "sources", "search", "resolve", "import", "health",
         "version", "citations", "embeddings", "", ".."]
    ),
    st.text(max_size=10).map(lambda text: quote(text, safe="")),
    st.sampled_from(["%", "%zz", "%00", "%2e%2e", "%C0%AF"]),
)  # fmt: skip
queries = st.sampled_from(
    ["", "?limit=5", "?limit=-1", "?limit=ten", "?dry_run=true", "?dry_run=maybe", "?after=%FF"]
)
media_types = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "text/plain", "application/x-ndjson",
     "application/problem+json", "", "multipart/form-data; boundary=x"]
)  # fmt: skip
tokens = st.sampled_from([ADMIN] * 5 + [SCOPED] * 2 + ["", "wrong"])


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


# ---------------------------------------------------------------- properties


@given(
    context=contexts,
    route=json_routes,
    changes=st.dictionaries(field_names, values, max_size=2),
    other=st.none() | json_texts,
    token=tokens,
)
def test_random_json_on_every_json_route_is_answered_in_the_envelope(
    served: Served,
    context: str,
    route: str,
    changes: dict[str, Any],
    other: str | None,
    token: str,
) -> None:
    """The route's own body with fields changed, or any JSON text at all."""
    text = other if other is not None else json.dumps({**ROUTE_BODIES[route], **changes})
    headers = {"Content-Type": "application/json", **auth(token)}
    check(served, "POST", f"/contexts/{context}/{route}", text.encode(), headers)


paths = st.one_of(
    st.builds(lambda route, c: route.replace("{c}", c), routes, contexts),
    st.builds(lambda route, c, rest: route.replace("{c}", c) + "/" + "/".join(rest),
              routes, contexts, st.lists(segments, min_size=1, max_size=2)),
    st.lists(segments, max_size=5).map(lambda parts: "/" + "/".join(parts)),
)  # fmt: skip


@given(
    method=st.sampled_from(["GET"] * 3 + ["POST"] * 3 + ["PUT", "DELETE", "HEAD", "FOO"]),
    path=paths,
    query=queries,
    body=st.binary(max_size=300) | json_texts.map(str.encode),
    media=media_types,
    token=tokens,
)
def test_random_bytes_on_random_paths_are_answered_in_the_envelope(
    served: Served, method: str, path: str, query: str, body: bytes, media: str, token: str
) -> None:
    headers = {"Content-Type": media, **auth(token)} if media else auth(token)
    path += query
    if method == "HEAD":  # a HEAD answer has no body to hold to the envelope
        status, _ = ask(served, method, path, body, headers)
        assert status < 500
        return
    check(served, method, path, body, headers)


# Import lines: mostly well-formed (so batches apply and the grant check is exercised),
# each field with a hostile variant.
names = st.sampled_from(["corpus-c", "corpus-d", "corpus-x", "corpus-y"]) | contexts
ids = st.sampled_from(["a.md", "b.md", "doc.md"]) | st.text(max_size=6)
numbers = st.sampled_from([1.0, -0.5, 0.25]) | st.floats(allow_nan=True, allow_infinity=True)
header_lines = st.one_of(
    st.builds(lambda c, s: {"type": "source", "id": s, "context": c}, names, ids),
    st.builds(
        lambda c, s: {"type": "source", "id": s, "context_id": UUID, "create": {"name": c}},
        names, ids,
    ),
    st.builds(lambda s: {"type": "source", "id": s, "context_id": UUID}, ids),
    st.builds(
        lambda c, s, floor: {"taguru_batch": 1, "context": c, "source": s,
                             "create": {"semantic_floor": floor}},
        names, ids, numbers,
    ),
)  # fmt: skip
item_lines = st.one_of(
    st.just({"passage": "青嶺酒造は雲居県霧沢町の蔵元である。"}),
    st.builds(lambda w: {"subject": "a", "label": "r", "object": "b", "weight": w}, numbers),
    st.builds(lambda a: {"alias": a, "canonical": "a", "kind": "concept"}, st.text(max_size=4)),
)
batches = st.builds(
    lambda header, items: [header, *items], header_lines, st.lists(item_lines, max_size=3)
).map(lambda lines: [json.dumps(line, allow_nan=True) for line in lines])
junk_lines = st.one_of(
    hostile_texts,
    st.text(max_size=20),
    request_objects.map(lambda line: json.dumps(line, allow_nan=True)),
)
streams = st.builds(
    lambda batches, junk, at: [*[ln for b in batches for ln in b][:at], *junk,
                               *[ln for b in batches for ln in b][at:]],
    st.lists(batches, min_size=1, max_size=3),
    st.just([]) | st.just([]) | junk_lines.map(lambda line: [line]),  # a third has junk
    st.integers(min_value=0, max_value=12),
)  # fmt: skip


@given(lines=streams, dry_run=st.booleans())
def test_a_scoped_keys_random_import_touches_only_granted_contexts(
    served: Served, lines: list[str], dry_run: bool
) -> None:
    before, rows = context_names(served.store), tables(served.store)
    path = "/import?dry_run=true" if dry_run else "/import"
    body = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    headers = {"Content-Type": "application/x-ndjson", **auth(SCOPED)}
    status, answer = check(served, "POST", path, body, headers)
    if status == 200:
        assert {batch["context"] for batch in answer["result"]["batches"]} <= set(GRANTED)
    assert context_names(served.store) - before <= set(GRANTED)
    if dry_run:
        assert tables(served.store) == rows  # a dry run writes nothing, answered or not
