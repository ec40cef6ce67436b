"""End to end over the real embedded store: import a small source file through
`POST /import`, then search it over HTTP — the answer is the recorded wire fixture."""

from __future__ import annotations

import json
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from taguru_ray.serve import ServeConfig
from tests.serve_fake import run_server, same_shape, wire

store_module = pytest.importorskip("taguru_ray.context.store")

PASSAGE = "青嶺酒造は雲居県霧沢町の蔵元である。"
SOURCE_FILE = (
    "\n".join(
        json.dumps(record, ensure_ascii=False)
        for record in (
            {
                "taguru_batch": 1,
                "context": "corpus-c",
                "source": "doc.md",
                "create": {"description": "d"},
            },
            {"passage": PASSAGE},
        )
    )
    + "\n"
)


def _open(folder: Path) -> Any:
    opener = getattr(store_module, "open_store", None) or store_module.SqliteStore
    return opener(str(folder))


def _import_directly(folder: Path) -> None:
    store = _open(folder)
    store.import_stream(SOURCE_FILE.encode("utf-8"))
    store.close()


def test_import_then_search_answers_the_recorded_fixture(tmp_path: Path) -> None:
    recorded = wire("sources_search")
    answers: dict[str, tuple[int, str]] = {}

    async def scenario(session: ClientSession, base: str) -> None:
        for key, method, path, kwargs in [
            ("import", "POST", "/import", {"data": SOURCE_FILE.encode("utf-8")}),
            ("search", "POST", "/contexts/corpus-c/sources/search", {"json": recorded["request"]}),
            ("context", "GET", "/contexts/corpus-c", {}),
            ("sources", "GET", "/contexts/corpus-c/sources", {}),
            (
                "cite",
                "POST",
                "/contexts/corpus-c/citations",
                {"json": {"source": "doc.md", "paragraph": 0}},
            ),
            (
                "missing",
                "POST",
                "/contexts/corpus-c/citations",
                {"json": {"source": "doc.md", "paragraph": 1}},
            ),
        ]:
            async with session.request(method, base + path, **kwargs) as response:
                answers[key] = (response.status, await response.text())

    store = _open(tmp_path)
    try:
        run_server(store, scenario, ServeConfig(writable=True))
    finally:
        store.close()
    body = {key: (status, json.loads(text)) for key, (status, text) in answers.items()}
    assert body["import"][0] == 200
    assert same_shape(body["import"][1], wire("import")["response"]) == []
    status, found = body["search"]
    assert status == 200
    assert found["result"] == recorded["response"]["result"]
    assert '"score":0.28768212' in answers["search"][1]  # the f32's shortest text, raw
    entry = wire("contexts_list")["response"]["result"]["contexts"][0]
    assert same_shape(body["context"][1]["result"], {**entry, "dice_floor": None}) == []
    assert body["sources"][1]["result"]["sources"] == ["doc.md"]
    assert body["cite"][1]["result"] == {
        "text": PASSAGE,
        "source": "doc.md",
        "section": None,
        "locator": None,
    }
    assert (body["missing"][0], body["missing"][1]["code"]) == (404, "no_paragraph")


def test_the_cli_serves_an_imported_store(tmp_path: Path) -> None:
    from tests.test_serve_cli import running

    _import_directly(tmp_path)
    command = (sys.executable, "-m", "taguru_ray", "serve", "--store", str(tmp_path), "--port", "0")
    with running(*command) as (proc, base):
        request = urllib.request.Request(
            base + "/contexts/corpus-c/sources/search",
            data=json.dumps({"query": "酒造"}).encode("utf-8"),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            found = json.loads(response.read())
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert found["result"] == wire("sources_search")["response"]["result"]


def test_an_empty_folder_is_no_store_and_stays_empty(tmp_path: Path) -> None:
    import subprocess

    from tests.test_serve_cli import _env

    done = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "serve", "--store", str(tmp_path), "--port", "0"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def _post_import(folder: Path, body: bytes) -> tuple[int, Any, dict[str, list[Any]]]:
    """POST /import to a writable server over a real store holding SOURCE_FILE:
    (status, answer, the store's tables afterwards)."""
    from tests.test_context_import import dump

    _import_directly(folder)
    answers: list[tuple[int, Any]] = []

    async def scenario(session: ClientSession, base: str) -> None:
        async with session.post(base + "/import", data=body) as response:
            answers.append((response.status, await response.json()))

    store = _open(folder)
    try:
        before = dump(store)
        run_server(store, scenario, ServeConfig(writable=True))
        assert dump(store) == before  # every case here is refused, so nothing changed
        tables = dump(store)
    finally:
        store.close()
    [(status, answer)] = answers
    return status, answer, tables


@pytest.mark.parametrize("number", ["NaN", "Infinity", "1e999", "-1" + "0" * 400])
def test_a_non_finite_number_in_an_import_line_is_400_invalid_argument(
    tmp_path: Path, number: str
) -> None:
    header = '{"taguru_batch":1,"context":"corpus-n","source":"new.md",'
    body = f'{header}"create":{{"semantic_floor":{number}}}}}\n{{"passage":"p"}}\n'
    status, answer, _ = _post_import(tmp_path, body.encode())
    assert (status, answer["code"]) == (400, "invalid_argument"), answer
    assert "not a finite number" in answer["error"] and "line 1" in answer["error"]
    assert answer["integrity"] == "nothing_written"


def test_a_deeply_nested_import_line_is_400_not_500(tmp_path: Path) -> None:
    deep = ('{"a":' * 50_000) + "1" + ("}" * 50_000)
    body = SOURCE_FILE.replace("doc.md", "new.md") + deep + "\n"
    status, answer, _ = _post_import(tmp_path, body.encode())
    assert (status, answer["code"]) == (400, "malformed_request"), answer
    assert "nested too deeply" in answer["error"] and "line 3" in answer["error"]
