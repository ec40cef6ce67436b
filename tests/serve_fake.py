"""A small in-memory `ContextStore` answering the recorded wire shapes, and a loopback
server around it, for the `serve` tests (the real store is tested on its own).

The fake answers each method with the `result` of the reference's wire fixture
for that route (`wire/http/*.json`), records every call it gets, and can hold
its searches at a barrier to prove two are answered at once.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from taguru_ray.context.errors import ContextError, Namespace, Position, no_context
from taguru_ray.serve import ServeConfig, create_app

_HERE = Path(__file__).resolve().parent
WIRE = _HERE / "fixtures" / "anchor" / "tests" / "fixtures" / "wire" / "http"


def wire(name: str) -> dict[str, Any]:
    """One recorded exchange: `{method, route, request, response, status, …}`."""
    return json.loads((WIRE / f"{name}.json").read_text(encoding="utf-8"))


def result_of(name: str) -> Any:
    return wire(name)["response"]["result"]


class FakeStore:
    """Contexts named by the fixtures; everything else is `no_context`."""

    def __init__(self, search_barrier: threading.Barrier | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.search_barrier = search_barrier
        self.imports_running = 0
        self.most_imports_at_once = 0
        self._lock = threading.Lock()
        listed = result_of("contexts_list")
        extra = copy.deepcopy(listed["contexts"][0])
        extra["name"] = "corpus-c"
        self.entries = {e["name"]: e for e in [*listed["contexts"], extra]}

    def _note(self, method: str, *args: Any, **kwargs: Any) -> None:
        with self._lock:
            self.calls.append((method, args, kwargs))

    def _known(self, name: str) -> None:
        if name not in self.entries:
            raise no_context(name)

    def contexts(self) -> dict[str, Any]:
        self._note("contexts")
        entries = sorted(self.entries.values(), key=lambda e: e["name"])
        return {"contexts": copy.deepcopy(entries), "total": len(entries)}

    def context(self, name: str) -> dict[str, Any]:
        self._note("context", name)
        self._known(name)
        return copy.deepcopy(self.entries[name])

    def embeddings(self, name: str) -> dict[str, Any]:
        self._note("embeddings", name)
        self._known(name)
        return result_of("embeddings_status")

    def sources(
        self, name: str, *, limit: int = 1000, after: str | None = None, prefix: str | None = None
    ) -> dict[str, Any]:
        self._note("sources", name, limit=limit, after=after, prefix=prefix)
        self._known(name)
        ids = [s for s in ("doc.md",) if (after is None or s > after)][:limit]
        return {"total": 1, "sources": ids, "entries": [{"name": s} for s in ids]}

    def search(
        self,
        name: str,
        query: str,
        *,
        limit: int = 5,
        semantic_floor: float | None = None,
        tags: Sequence[str] = (),
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        self._note(
            "search",
            name,
            query,
            limit=limit,
            semantic_floor=semantic_floor,
            tags=tuple(tags),
            since=since,
            until=until,
        )
        self._known(name)
        if query == "boom":
            raise RuntimeError("the fake store fails on purpose")
        if self.search_barrier is not None:
            self.search_barrier.wait()
        found = result_of("sources_search")
        if limit == 0:
            found["hits"] = []
        return found

    def resolve(
        self,
        name: str,
        cue: str,
        *,
        namespace: Namespace = "concept",
        limit: int = 1000,
        dice_floor: float | None = None,
        semantic_floor: float | None = None,
    ) -> list[dict[str, Any]]:
        self._note(
            "resolve",
            name,
            cue,
            namespace=namespace,
            limit=limit,
            dice_floor=dice_floor,
            semantic_floor=semantic_floor,
        )
        self._known(name)
        return [{"name": "alpha", "score": 1.0, "tier": "lexical", "kind": "exact"}][:limit]

    def query(
        self,
        name: str,
        *,
        subject: Position = None,
        label: Position = None,
        object: Position = None,
        limit: int = 100,
        since: int | None = None,
        until: int | None = None,
    ) -> dict[str, Any]:
        self._note(
            "query",
            name,
            subject=subject,
            label=label,
            object=object,
            limit=limit,
            since=since,
            until=until,
        )
        self._known(name)
        found = result_of("recall")
        found["plan"]["contexts"] = [name]
        return found

    def citation(self, name: str, source: str, paragraph: int) -> dict[str, Any]:
        self._note("citation", name, source, paragraph)
        self._known(name)
        if source != "doc.md":
            raise ContextError(404, "no_source", f"source '{source}' not found in '{name}'")
        if paragraph > 0:
            raise ContextError(404, "no_paragraph", f"paragraph {paragraph} out of range")
        text = "青嶺酒造は雲居県霧沢町の蔵元である。"
        return {"text": text, "source": source, "section": None, "locator": None}

    def import_stream(self, data: bytes, *, dry_run: bool = False) -> dict[str, Any]:
        self._note("import_stream", data, dry_run=dry_run)
        with self._lock:
            self.imports_running += 1
            self.most_imports_at_once = max(self.most_imports_at_once, self.imports_running)
        try:
            threading.Event().wait(0.05)  # long enough for a second import to overlap
            refused = wire("import_refusal_durable_prefix")
            if data == refused["request"].encode("utf-8"):
                body = dict(refused["response"])
                extra = {k: v for k, v in body.items() if k not in ("status", "code", "error")}
                extra.pop("time")
                raise ContextError(refused["status"], body["code"], body["error"], extra)
            return result_of("import")
        finally:
            with self._lock:
                self.imports_running -= 1


Scenario = Callable[[ClientSession, str], Awaitable[None]]


def run_server(store: Any, scenario: Scenario, config: ServeConfig | None = None) -> None:
    """Serve `store` on loopback and run `scenario(session, base_url)` against it."""

    async def main() -> None:
        server = TestServer(create_app(store, config), host="127.0.0.1")
        await server.start_server()
        try:
            async with ClientSession() as session:
                await scenario(session, str(server.make_url("")).rstrip("/"))
        finally:
            await server.close()

    asyncio.run(main())


def same_shape(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Where `actual` differs from `expected` in keys or JSON types (values may differ);
    a list is compared element by element against the expected list's first element."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: {type(actual).__name__}, expected an object"]
        problems = [f"{path}: keys {sorted(actual)} != {sorted(expected)}"]
        problems = problems if set(actual) != set(expected) else []
        for key in expected.keys() & actual.keys():
            problems += same_shape(actual[key], expected[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: {type(actual).__name__}, expected an array"]
        return [p for item in actual[:3] if expected for p in same_shape(item, expected[0], path)]
    if isinstance(expected, bool):
        fits = isinstance(actual, bool)
    elif isinstance(expected, int | float):
        fits = isinstance(actual, int | float) and not isinstance(actual, bool)
    elif isinstance(expected, str):
        fits = isinstance(actual, str)
    else:
        fits = actual is None
    return [] if fits else [f"{path}: {actual!r} is not of the type of {expected!r}"]
