"""`taguru-ray import` and `taguru-ray search` as a user runs them (subprocesses)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from taguru_ray.context.errors import ContextError
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.items import Alias, Association
from tests.support import CONTEXT, REPO, Cli
from tests.test_context_import import source_file


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taguru_ray", *args],
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def write_out(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(
        source_file(
            "a.md",
            "青嶺酒造は雲居県霧沢町の蔵元である。\n\nAppState holds the HTTPServer.",
            [Association("青嶺酒造", "所在地", "霧沢町", 1.0, 0)],
            [Alias("青嶺", "青嶺酒造", "concept")],
        )
    )
    (folder / "b.jsonl").write_bytes(source_file("b.md", "霧沢町は雲居県にある。"))
    (folder / ".diagnostics.jsonl").write_text('{"type":"gateway"}\n')
    return folder


def test_import_a_folder_then_search_it(tmp_path: Path) -> None:
    out, store = write_out(tmp_path / "out"), tmp_path / "store"
    imported = run("import", str(out), "--store", str(store))
    assert imported.returncode == 0, imported.stderr
    lines = imported.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{out}/a.jsonl: imported source 'a.md'")
    assert "context 'demo' (created)" in lines[0]
    found = run("search", "--store", str(store), "server")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0].startswith("1. a.md  paragraph 1  score ")
    wire = json.loads(run("search", "--store", str(store), "--json", "酒造").stdout)
    assert [(h["source"], h["paragraph"]) for h in wire["hits"]] == [("a.md", 0)]
    assert wire["plan"]["contexts"][0]["lanes"]["vector"]["reason"] == (
        "no embedding provider is configured"
    )


def test_a_refused_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    out, store = write_out(tmp_path / "out"), tmp_path / "store"
    bad = source_file("c.md", "x").replace(b'"passage":"x"', b'"passage":"x","date":-1')
    (out / "c.jsonl").write_bytes(bad)
    imported = run("import", str(out), "--store", str(store), "--context", "mine")
    assert imported.returncode == 1
    assert imported.stderr.strip() == (
        f"{out}/c.jsonl: line 2: date: expected epoch seconds (an integer from 0), got number -1"
        " — nothing of this file was applied"
    )
    assert SqliteStore(store).sources("mine")["sources"] == ["a.md", "b.md"]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run("import", str(tmp_path / "missing"), "--store", str(tmp_path)).returncode == 2
    assert run("import", str(tmp_path)).returncode == 2  # neither --store nor --url
    assert run("search", "--store", str(tmp_path / "none"), "q").returncode == 2


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A tiny /import endpoint over a store, recording each request's headers."""
    store = SqliteStore(tmp_path / "served")
    seen: list[dict[str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        headers, query = request.headers, request.query
        seen.append(
            {
                "auth": headers.get("Authorization", ""),
                "type": request.content_type,
                "dry_run": query.get("dry_run", ""),
            }
        )
        try:
            result = store.import_stream(await request.read(), dry_run=bool(seen[-1]["dry_run"]))
        except ContextError as error:
            body = {"status": "error", "code": error.code, "error": error.message, **error.extra}
            return web.json_response(body, status=error.status)
        return web.json_response({"result": result, "status": "ok", "time": 0.0})

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/import", handle)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}", seen
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_import_url_posts_each_file_and_reports_refusals(
    tmp_path: Path, server: tuple[str, list[dict[str, str]]]
) -> None:
    url, seen = server
    out = tmp_path / "out"
    out.mkdir()
    stream = b'{"taguru_batch":1,"context":"c","source":"s","create":{}}\n{"passage":"p"}\n'
    (out / "1.jsonl").write_bytes(stream)
    (out / "2.jsonl").write_bytes(
        b'{"taguru_batch":1,"context":"c","source":"t"}\n'
        b'{"alias":"A","canonical":"missing","kind":"concept"}\n'
    )
    env = {"TAGURU_API_TOKENS": "ci:secret,other:x"}
    posted = run("import", str(out), "--url", url + "/", env=env)
    assert posted.returncode == 1
    assert posted.stdout.startswith(f"{out}/1.jsonl: imported source 's' into context 'c'")
    assert posted.stderr.startswith(f"{out}/2.jsonl: refused by {url}/import: 409 conflict: ")
    assert "[batches[0].concepts['A']]" in posted.stderr
    assert seen[0] == {"auth": "Bearer secret", "type": "application/x-ndjson", "dry_run": ""}
    dry = run("import", str(out / "1.jsonl"), "--url", url, "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith(f"{out / '1.jsonl'}: would import")
    assert seen[-1]["dry_run"] == "true"


@pytest.mark.ray
@pytest.mark.slow
def test_an_extract_out_folder_imports_and_searches(cli: Cli, tmp_path: Path) -> None:
    out, store = tmp_path / "out", tmp_path / "store"
    docs = REPO / "examples" / "corpus"
    extracted = cli.extract("--context", CONTEXT, "--out", str(out), "--name", "demo", str(docs))
    assert extracted.returncode == 0, extracted.stderr
    written = sorted(p.name for p in out.glob("*.jsonl"))
    imported = run("import", str(out), "--store", str(store))
    assert imported.returncode == 0, imported.stderr
    assert len(imported.stdout.splitlines()) == len(written) == 3
    found = json.loads(run("search", "--store", str(store), "--json", "杜氏").stdout)
    assert found["plan"]["contexts"][0]["context"] == "demo"
    assert found["hits"][0]["source"].endswith("03-sake-brewing.md")
    again = run("import", str(out), "--store", str(store))  # a re-import replaces exactly
    assert again.returncode == 0
    assert json.loads(run("search", "--store", str(store), "--json", "杜氏").stdout) == found
