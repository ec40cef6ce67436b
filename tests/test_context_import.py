"""Import into the embedded store (EVALUATE.md §4.1, §2.5) and its reads, against the
recorded wire fixtures and crafted source files written by taguru-ray's own writer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.context.errors import ContextError
from taguru_ray.context.importer import ImportRefusal, read_stream
from taguru_ray.context.store import SqliteStore
from taguru_ray.contract.items import Alias, Association, Question
from taguru_ray.contract.source_file import Header, Passage, SourceFile, render_source_file
from tests.support import CONTEXT

WIRE = Path(__file__).resolve().parent / "fixtures/anchor/tests/fixtures/wire/http"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((WIRE / f"{name}.json").read_text(encoding="utf-8"))


def source_file(
    source: str,
    passage: str | None,
    associations: list[Association] = (),  # type: ignore[assignment]
    aliases: list[Alias] = (),  # type: ignore[assignment]
    questions: list[Question] = (),  # type: ignore[assignment]
    tags: tuple[str, ...] = (),
) -> bytes:
    return render_source_file(
        SourceFile(
            Header(source, CONTEXT, "demo"),
            None if passage is None else Passage(passage, tags=tags),
            list(questions),
            list(associations),
            list(aliases),
        )
    )


def load(store: SqliteStore, *files: bytes) -> list[dict[str, Any]]:
    results = []
    for data in files:
        results += store.import_batches(read_stream(data).batches, create_missing=True)
    return results


def dump(store: SqliteStore) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(store.path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    found = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    conn.close()
    return found


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "store")


# ------------------------------------------------------------------ wire fixtures


@pytest.mark.parametrize("name", ["import", "import_with_schema"])
def test_import_answers_as_the_fixture(store: SqliteStore, name: str) -> None:
    recorded = fixture(name)
    assert store.import_stream(recorded["request"].encode()) == recorded["response"]["result"]


def test_a_refused_batch_leaves_the_batches_before_it_durable(store: SqliteStore) -> None:
    recorded = fixture("import_refusal_durable_prefix")
    with pytest.raises(ContextError) as refused:
        store.import_stream(recorded["request"].encode())
    expected = recorded["response"]
    assert (refused.value.status, refused.value.code) == (recorded["status"], expected["code"])
    assert refused.value.message == expected["error"]
    assert refused.value.extra == {k: expected[k] for k in refused.value.extra}
    assert store.query("corpus-h", subject="alpha")["total"] == 1  # batch 1 landed


def test_search_recall_contexts_and_embeddings_answer_as_the_fixtures(store: SqliteStore) -> None:
    store.import_stream(
        b'{"taguru_batch":1,"context":"corpus-c","source":"doc.md","create":{}}\n'
        + json.dumps({"passage": "青嶺酒造は雲居県霧沢町の蔵元である。"}).encode()
    )
    assert store.search("corpus-c", "酒造") == fixture("sources_search")["response"]["result"]
    store.import_stream(
        b'{"taguru_batch":1,"context":"corpus-a","source":"doc.md","create":{"description":'
        b'"wire-contract corpus"}}\n{"passage":"alpha beta"}\n'
        b'{"paragraph":0,"locator":{"kind":"page","value":"1"}}\n'
        b'{"subject":"alpha","label":"connects_to","object":"beta","weight":2.0,"paragraph":0}\n'
    )
    assert store.query("corpus-a", subject="alpha") == fixture("recall")["response"]["result"]
    listed = fixture("contexts_list")["response"]["result"]["contexts"][0]
    entry = store.context("corpus-a")
    assert entry.keys() == listed.keys() and entry["stats"].keys() == listed["stats"].keys()
    assert {k: entry["stats"][k] for k in ("associations", "concepts", "labels", "sources")} == {
        "associations": 1, "concepts": 2, "labels": 1, "sources": 1,
    }  # fmt: skip
    assert entry["stats"]["top_concepts"] == listed["stats"]["top_concepts"]
    assert store.contexts()["total"] == 2
    assert store.embeddings("corpus-a") == fixture("embeddings_status")["response"]["result"]


def test_an_unknown_context_is_no_context(store: SqliteStore) -> None:
    with pytest.raises(ContextError) as missing:
        store.search("nope", "x")
    assert (missing.value.status, missing.value.code) == (404, "no_context")
    assert str(missing.value) == "context 'nope' not found"


# ------------------------------------------------------------------ import rules


def test_a_refused_file_applies_nothing(store: SqliteStore) -> None:
    load(
        store, source_file("a.md", "青嶺酒造の話。", [Association("青嶺酒造", "所在地", "霧沢町")])
    )
    before = dump(store)
    bad = source_file(
        "b.md", "別の話。", [Association("雲居県", "含む", "霧沢町")],
        [Alias("くもい", "雲居県", "concept")],
    ) + '{"alias":"所属","canonical":"存在しない","kind":"label"}\n'.encode()  # fmt: skip
    with pytest.raises(ImportRefusal) as refused:
        load(store, bad)
    assert refused.value.line == 5 and refused.value.path == "labels['所属']"
    assert dump(store) == before


def test_a_malformed_line_names_file_line_and_path() -> None:
    data = source_file("a.md", "x").replace(b'"passage":"x"', b'"passage":"x","tags":[1]')
    with pytest.raises(ImportRefusal) as refused:
        read_stream(data, name="a.jsonl")
    assert (refused.value.file, refused.value.line, refused.value.path) == ("a.jsonl", 2, "tags[0]")
    assert str(refused.value).startswith("a.jsonl: line 2: tags[0]: expected a string")


def test_reimport_replaces_the_source(store: SqliteStore) -> None:
    load(store, source_file("a.md", "古い文章。", [Association("甲", "関係", "乙", 1.0, 0)]))
    results = load(store, source_file("a.md", "新しい本文。", [Association("甲", "別", "丙")]))
    assert results[0]["retracted"] == 1 and not results[0]["created"]
    assert store.search("demo", "古い")["hits"] == []
    assert [h["text"] for h in store.search("demo", "本文")["hits"]] == ["新しい本文。"]
    assert store.query("demo", subject="甲", label="関係")["total"] == 0
    assert store.query("demo", subject="甲")["matches"][0]["object"] == "丙"
    assert store.resolve("demo", "乙") == [
        {"name": "乙", "score": 1.0, "tier": "lexical", "kind": "exact"}
    ]  # names stay interned after a retraction
    assert store.context("demo")["stats"]["sources"] == 1


def test_associations_accumulate_with_one_attribution_per_source(store: SqliteStore) -> None:
    load(
        store,
        source_file("a.md", "一。\n\n二。", [Association("甲", "関係", "乙", 1.0, 1)]),
        source_file(
            "b.md",
            "三。",
            [Association("甲", "関係", "乙", 2.0, 0), Association("甲", "関係", "乙", 4.0)],
        ),
    )
    match = store.query("demo", subject="甲", label="関係", object="乙", limit=1)["matches"][0]
    assert (match["weight"], match["count"]) == (7.0 / 3, 3)
    found = [(a["source"], a["weight"], a["count"], a["paragraph"]) for a in match["attributions"]]
    assert found == [
        ("a.md", 1.0, 1, 1),
        ("b.md", 6.0, 2, 0),  # the first assertion set the paragraph
    ]  # fmt: skip


def test_aliases_land_on_the_canonical_and_a_rebinding_conflicts(store: SqliteStore) -> None:
    load(store, source_file("a.md", None, [Association("青嶺酒造", "所在地", "霧沢町")],
                            [Alias("青嶺", "青嶺酒造", "concept")]))  # fmt: skip
    load(store, source_file("b.md", None, [Association("青嶺", "創業", "1890年")]))
    assert {m["label"] for m in store.query("demo", subject="青嶺")["matches"]} == {
        "所在地",
        "創業",
    }
    assert store.resolve("demo", "青嶺")[0] == {
        "name": "青嶺酒造", "score": 1.0, "tier": "lexical", "kind": "alias"
    }  # fmt: skip
    conflict = source_file("c.md", None, [Association("霧沢町", "属する", "雲居県")],
                           [Alias("青嶺", "霧沢町", "concept")])  # fmt: skip
    with pytest.raises(ImportRefusal) as refused:
        load(store, conflict)
    assert (refused.value.status, refused.value.code) == (409, "conflict")
    assert store.query("demo", subject="霧沢町")["total"] == 0


def test_questions_boost_their_paragraph(store: SqliteStore) -> None:
    text = "The cellar stays cold all year.\n\nDoors at nine, closed on Mondays."
    load(store, source_file("a.md", text, questions=[Question(1, "When does it open?")]))
    hits = store.search("demo", "open")["hits"]
    assert [(h["source"], h["paragraph"]) for h in hits] == [("a.md", 1)]
    # The question's 4 terms join paragraph 1's length: 6 + 4 = 10, paragraph 0 has 6.
    conn = sqlite3.connect(store.path)
    assert [r[0] for r in conn.execute("SELECT length FROM paragraphs ORDER BY idx")] == [6, 10]


def test_citation_sections_locators_and_its_refusals(store: SqliteStore) -> None:
    store.import_stream(
        b'{"taguru_batch":1,"context":"c","source":"s","create":{}}\n'
        b'{"passage":"a\\n\\nb\\n\\nc"}\n{"paragraph":1,"section":"Two"}\n'
        b'{"paragraph":2,"locator":{"kind":"page","value":"3"}}\n'
        b'{"paragraph":9,"section":"gone"}\n'
    )
    assert store.citation("c", "s", 0) == {"text": "a", "source": "s", "section": None,
                                          "locator": None}  # fmt: skip
    assert store.citation("c", "s", 2) == {"text": "c", "source": "s", "section": "Two",
                                          "locator": {"kind": "page", "value": "3"}}  # fmt: skip
    for source, paragraph, code in (("s", 3, "no_paragraph"), ("t", 0, "no_source")):
        with pytest.raises(ContextError) as refused:
            store.citation("c", source, paragraph)
        assert (refused.value.status, refused.value.code) == (404, code)


def test_tag_filter_gates_who_answers_not_the_statistics(store: SqliteStore) -> None:
    load(
        store,
        source_file("a.md", "sake brewing", tags=("x",)),
        source_file("b.md", "sake tasting", tags=("y",)),
    )
    everything = store.search("demo", "sake")
    only_y = store.search("demo", "sake", tags=["y"])
    assert only_y["plan"]["contexts"][0]["filter"] == {"eligible_sources": 1, "total_sources": 2}
    assert [h["source"] for h in only_y["hits"]] == ["b.md"]
    assert only_y["hits"][0]["score"] == everything["hits"][1]["score"]
    with pytest.raises(ContextError):
        store.search("demo", "sake", since=5, until=5)


def test_no_terms_and_zero_limit_skip_both_lanes(store: SqliteStore) -> None:
    load(store, source_file("a.md", "text"))
    for query, limit, reason in (("!!", 5, "the query yields no searchable terms"),
                                 ("text", 0, "the requested limit is 0")):  # fmt: skip
        lanes = store.search("demo", query, limit=limit)["plan"]["contexts"][0]["lanes"]
        assert lanes == {"bm25": {"ran": False, "reason": reason},
                         "vector": {"ran": False, "reason": reason}}  # fmt: skip


def test_sources_page_in_byte_order_after_a_cursor(store: SqliteStore) -> None:
    load(store, *(source_file(name, "p") for name in ("b", "a", "c")))
    load(store, source_file("graph-only", None, [Association("x", "y", "z")]))
    first = store.sources("demo", limit=2)
    assert (first["total"], first["sources"]) == (3, ["a", "b"])
    assert store.sources("demo", after="b")["sources"] == ["c"]
    assert store.sources("demo", after="c")["sources"] == []
