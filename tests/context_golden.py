"""The search answers issue 42's index must keep byte for byte (captured before it).

Three corpora, each imported through the store's public `import_stream`:

- the wire fixture's (`sources_search.json`: corpus-c's one paragraph, query 酒造);
- the evaluate fixture's corpus (`tests/fixtures/evaluate/corpus`), every case's query
  and cue;
- a generated corpus (the context benchmark's files, 300 of 10 paragraphs, 40 of them
  imported twice so retracted postings are in its history), the benchmark's 40 queries
  and a few hand-picked ones (camel case, one character, ASCII and kana mixed), at
  limits 1, 10 and 50, and with a tag filter and a time filter.

`answers(work)` returns every search's JSON text (ensure_ascii=False, as the wire);
the golden file holds what today's store answered. Regenerate it only when a change
of the scores is intended: ``python -m tests.context_golden``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.context import queries, source_file_bytes
from taguru_ray.context.store import SqliteStore

HERE = Path(__file__).parent
GOLDEN = HERE / "fixtures" / "context-golden" / "search.json"
EVALUATE = HERE / "fixtures" / "evaluate"
WIRE_PASSAGE = "青嶺酒造は雲居県霧沢町の蔵元である。"
FILES, PARAGRAPHS, REIMPORTED = 300, 10, 40
_YEAR_2100 = 4_102_444_800  # every stored_at passes the window: the filtered path, all eligible
EXTRA_QUERIES = (
    "AppState HTTPServer", "酒", "の", "bruto", "第10篇 杜氏", "はどこですか", "x",
    "酒造米麹水 kaiza", "ＡＢＣ　ｱｲｳ",
)  # fmt: skip


def _wire(store: SqliteStore) -> dict[str, Any]:
    header = {"taguru_batch": 1, "context": "corpus-c", "source": "doc.md", "create": {}}
    lines = [header, {"passage": WIRE_PASSAGE}]
    store.import_stream("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode())
    return {"wire 酒造": store.search("corpus-c", "酒造")}


def _evaluate(store: SqliteStore) -> dict[str, Any]:
    for path in sorted((EVALUATE / "corpus").glob("*.jsonl")):
        store.import_stream(path.read_bytes())
    found: dict[str, Any] = {}
    for line in (EVALUATE / "eval.jsonl").read_text().splitlines():
        case = json.loads(line)
        for text in [case.get("query"), *case.get("cues", [])]:
            if text:
                found[f"evaluate {text}"] = store.search("sake", text, limit=10)
    return found


def _generated(store: SqliteStore) -> dict[str, Any]:
    for index in range(FILES):
        store.import_stream(source_file_bytes(index, PARAGRAPHS))
    for index in range(0, FILES, FILES // REIMPORTED):
        store.import_stream(source_file_bytes(index, PARAGRAPHS))  # a retraction, then again
    found: dict[str, Any] = {}
    for text in [*queries(), *EXTRA_QUERIES]:
        for limit in (1, 10, 50):
            found[f"bench {limit} {text}"] = store.search("bench", text, limit=limit)
        found[f"bench tags {text}"] = store.search("bench", text, limit=10, tags=["t3", "t5"])
        found[f"bench window {text}"] = store.search(
            "bench", text, limit=10, since=0, until=_YEAR_2100
        )
    return found


def answers(work: Path) -> dict[str, str]:
    found: dict[str, Any] = {}
    for name, part in (("wire", _wire), ("evaluate", _evaluate), ("generated", _generated)):
        store = SqliteStore(work / name)
        try:
            found.update(part(store))
        finally:
            store.close()
    return {
        key: json.dumps(value, ensure_ascii=False, sort_keys=True) for key, value in found.items()
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        written = answers(Path(scratch))
    GOLDEN.write_text(json.dumps(written, ensure_ascii=False, indent=0, sort_keys=True) + "\n")
    print(f"{GOLDEN}: {len(written)} answers")
