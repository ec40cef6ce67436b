"""The store's write API (`context/writes.py`) on its own: what each write leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.context.errors import ContextError
from taguru_ray.context.store import SqliteStore
from taguru_ray.context.writes import AssociationOp, ContextMeta, PassageSubmission


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path)


def test_a_context_made_again_after_a_delete_knows_nothing_of_the_first(
    store: SqliteStore,
) -> None:
    store.create_context("c", ContextMeta())
    store.add_associations("c", [AssociationOp(subject="x", label="l", object="y")])
    assert [r["name"] for r in store.resolve("c", "x")] == ["x"]  # the index is cached now
    store.delete_context("c")
    store.create_context("c", ContextMeta())  # SQLite may hand out the same id again
    assert store.resolve("c", "x") == []
    assert store.context("c")["stats"]["associations"] == 0


def test_a_passage_store_replaces_the_text_and_keeps_the_facts(store: SqliteStore) -> None:
    store.create_context("c", ContextMeta())
    fact = AssociationOp(subject="s", label="l", object="o", weight=2.0, source="a.md", paragraph=1)
    store.add_associations("c", [fact, fact])
    store.store_passages("c", {"a.md": PassageSubmission(text="one\n\ntwo")})
    store.store_passages("c", {"a.md": PassageSubmission(text="uno\n\n\ndos\n")})
    assert store.lookup_passages("c", ["a.md"])["passages"] == {"a.md": "uno\n\n\ndos\n"}
    match = store.query("c", subject="s")["matches"][0]
    assert (match["weight"], match["count"]) == (2.0, 2)
    assert match["attributions"][0]["paragraph"] == 1


def test_lookup_after_a_reimport_answers_the_imported_paragraphs(store: SqliteStore) -> None:
    store.create_context("c", ContextMeta())
    store.store_passages("c", {"a.md": PassageSubmission(text="old\n\n\ntext")})
    header = {"taguru_batch": 1, "context": "c", "source": "a.md"}
    lines = [json.dumps(header), json.dumps({"passage": "new\n\ntext"})]
    store.import_stream("\n".join(lines).encode())
    assert store.lookup_passages("c", ["a.md"])["passages"] == {"a.md": "new\n\ntext"}


def test_unsourced_weight_averages_on_the_edge_with_no_attribution(store: SqliteStore) -> None:
    store.create_context("c", ContextMeta())
    store.add_associations(
        "c", [AssociationOp(subject="s", label="l", object="o", weight=w) for w in (1.0, -3.0)]
    )
    match = store.query("c", subject="s")["matches"][0]
    assert (match["weight"], match["count"], match["attributions"]) == (-1.0, 2, [])


def test_writes_to_a_missing_context_are_no_context(store: SqliteStore) -> None:
    for call in (
        lambda: store.update_context("nope", ContextMeta(pinned=True)),
        lambda: store.rename_context("nope", "other"),
        lambda: store.delete_context("nope"),
        lambda: store.add_associations("nope", []),
        lambda: store.store_passages("nope", {}),
        lambda: store.retract_source("nope", "a.md"),
    ):
        with pytest.raises(ContextError) as refused:
            call()
        assert refused.value.code == "no_context"


def test_a_rename_onto_an_existing_name_is_already_exists(store: SqliteStore) -> None:
    store.create_context("a", ContextMeta())
    store.create_context("b", ContextMeta())
    with pytest.raises(ContextError) as refused:
        store.rename_context("a", "b")
    assert (refused.value.status, refused.value.code) == (409, "already_exists")


def test_a_renamed_context_keeps_its_read_counters(store: SqliteStore) -> None:
    store.create_context("a", ContextMeta())
    store.store_passages("a", {"a.md": PassageSubmission(text="river bank")})
    store.search("a", "river")
    store.search("a", "nothing-here")
    store.rename_context("a", "b")
    usage = store.context("b")["usage"]
    assert (usage["reads"], usage["empty_reads"]) == (2, 1)
