"""The vector lane and the semantic resolve tier (EVALUATE.md §1.2, §2.2, §2.4; ADR 0033):
the arithmetic on literals, the store with an in-process deterministic embedder, and the
CLI against the simulator's `POST /v1/embeddings`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from taguru_ray.cli import import_, search
from taguru_ray.context.embeddings import (
    Embedder,
    EmbeddingsConfig,
    EmbeddingsError,
    embedder_from_env,
    normalise,
    parse_response,
)
from taguru_ray.context.errors import ContextError
from taguru_ray.context.importer import read_stream
from taguru_ray.context.store import SqliteStore
from taguru_ray.context.vector_lanes import NO_VECTORS, PASSAGES_OFF
from taguru_ray.context.vectors import (
    Fact,
    LaneHit,
    best_per_paragraph,
    fuse,
    gloss_text,
    heaviest,
    lane_pool,
    merge_tiers,
    needs_semantic,
    rank_lane,
    rrf,
    top_glosses,
)
from taguru_ray.contract.items import Association, Question
from taguru_ray.simulate import SimulatorProcess
from taguru_ray.simulate.embeddings import embed as sim_embed
from tests.test_context_import import source_file

NO_PROVIDER = "no embedding provider is configured"


# ------------------------------------------------------------------ arithmetic


def f32(value: float) -> np.float32:
    return np.float32(value)


def test_each_paragraph_keeps_its_best_row() -> None:
    scores = np.array([0.1, 0.9, 0.3, 0.2, 0.7], np.float32)  # rows of paragraphs 0, 0, 1, 1, 2
    best = best_per_paragraph(scores, np.array([0, 2, 4]))
    assert best.tolist() == pytest.approx([0.9, 0.3, 0.7])


def test_the_lane_ranks_by_score_then_source_order_and_keeps_its_pool() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.2], np.float32)
    order_rank = np.array([3, 2, 1, 0])  # byte order of (source, paragraph)
    keep = scores >= f32(0.35)  # the floor drops the 0.2
    assert rank_lane(scores, order_rank, keep, pool=50).tolist() == [1, 2, 0]
    assert rank_lane(scores, order_rank, keep, pool=2).tolist() == [1, 2]
    assert (lane_pool(5), lane_pool(10), lane_pool(20)) == (50, 50, 80)


def test_rrf_fusion_sums_one_over_sixty_plus_rank_and_breaks_ties_by_source() -> None:
    bm25 = [LaneHit("a.md", 0, f32(3.0)), LaneHit("b.md", 0, f32(2.0)), LaneHit("c.md", 1, f32(1))]
    vector = [LaneHit("c.md", 1, f32(0.8)), LaneHit("a0.md", 4, f32(0.5))]
    fused = fuse({"bm25": bm25, "vector": vector})
    assert [(f.source, f.paragraph) for f in fused] == [
        ("c.md", 1),  # 1/63 + 1/61
        ("a.md", 0),  # 1/61
        ("a0.md", 4),  # 1/62, tied with b.md: source order
        ("b.md", 0),
    ]
    assert fused[0].score == f32(1.0) / f32(63) + f32(1.0) / f32(61)
    assert fused[1].score == rrf(1) == f32(1.0) / f32(61)
    assert fused[2].score == fused[3].score == f32(1.0) / f32(62)
    assert fused[0].lanes == {"bm25": (3, f32(1)), "vector": (1, f32(0.8))}
    assert fused[2].lanes == {"vector": (2, f32(0.5))}


def test_the_floor_and_the_five_best_glosses() -> None:
    names = ["g", "f", "e", "d", "c", "b", "a"]
    scores = np.array([0.9, 0.8, 0.8, 0.7, 0.6, 0.5, 0.34], np.float32)
    assert [n for n, _ in top_glosses(names, scores, 0.35)] == ["g", "e", "f", "d", "c"]
    assert [n for n, _ in top_glosses(names, scores, 0.75)] == ["g", "e", "f"]


def lexical(*scored: tuple[str, float]) -> list[dict[str, object]]:
    return [{"name": n, "score": s, "tier": "lexical", "kind": "fuzzy"} for n, s in scored]


def semantic(*names: str) -> list[dict[str, object]]:
    return [{"name": n, "score": 0.6, "tier": "semantic"} for n in names]


def test_trimming_to_the_limit_takes_the_lexical_tail_first() -> None:
    weak = lexical(("l1", 0.4), ("l2", 0.4), ("l3", 0.3), ("l4", 0.3), ("l5", 0.3))
    merged = merge_tiers(weak, semantic("s1", "s2", "s3"), 5)
    assert [c["name"] for c in merged] == ["l1", "l2", "s1", "s2", "s3"]
    # a semantic name already lexical is skipped, and no trim is needed then
    merged = merge_tiers(weak[:3], semantic("l2", "s1"), 5)
    assert [c["name"] for c in merged] == ["l1", "l2", "l3", "s1"]
    # more semantic than the limit: no lexical left, the semantic tail goes
    merged = merge_tiers(weak[:2], semantic("s1", "s2", "s3", "s4", "s5"), 3)
    assert [c["name"] for c in merged] == ["s1", "s2", "s3"]
    assert merge_tiers(weak, [], 2) == weak[:2]


def test_the_semantic_tier_runs_only_for_an_empty_or_weak_lexical_answer() -> None:
    assert needs_semantic([])
    assert needs_semantic(lexical(("x", 0.49)))
    assert not needs_semantic(lexical(("x", 0.5)))


def test_a_gloss_is_the_name_and_its_heaviest_facts_as_sentences() -> None:
    facts = [
        Fact(1, "青嶺酒造", "杜氏", "高瀬", 2.0),
        Fact(2, "高瀬", "出身", "南部杜氏", 1.0),
        Fact(3, "高瀬", "監督する", "麹造り", 1.0),
        Fact(4, "青嶺酒造", "行う", "大量生産", -1.0),
    ]
    assert gloss_text("高瀬", heaviest(facts[:3], 2), "高瀬") == (
        "高瀬。青嶺酒造の杜氏は高瀬。出身は南部杜氏。"
    )
    assert gloss_text("大量生産", heaviest(facts[3:], 1), "大量生産") == (
        "大量生産。青嶺酒造の行うは大量生産ではない。"
    )
    label = [Fact(1, "青嶺酒造", "杜氏", "高瀬", 2.0), Fact(2, "青嶺酒造", "杜氏", "山田", 1.0)]
    assert (
        gloss_text("杜氏", heaviest(label, 3), None) == "杜氏。青嶺酒造の杜氏は高瀬。杜氏は山田。"
    )


def test_the_provider_is_configured_by_the_reference_variables() -> None:
    assert embedder_from_env({}) is None
    config = EmbeddingsConfig.from_env(
        {"TAGURU_EMBED_URL": "http://h/v1/embeddings", "TAGURU_EMBED_MODEL": "m",
         "TAGURU_EMBED_PASSAGES": "true", "TAGURU_SEMANTIC_FLOOR": "0.2"}
    )  # fmt: skip
    assert config is not None and (config.model, config.passages, config.semantic_floor) == (
        "m",
        True,
        0.2,
    )
    with pytest.raises(ValueError, match="TAGURU_EMBED_MODEL is not set"):
        EmbeddingsConfig.from_env({"TAGURU_EMBED_URL": "http://h/v1/embeddings"})
    with pytest.raises(ValueError, match="TAGURU_EMBED_PASSAGES"):
        EmbeddingsConfig.from_env(
            {"TAGURU_EMBED_URL": "http://h/e", "TAGURU_EMBED_MODEL": "m",
             "TAGURU_EMBED_PASSAGES": "maybe"}
        )  # fmt: skip


def test_a_response_is_read_in_index_order_and_a_bad_one_is_an_error() -> None:
    raw = json.dumps(
        {"data": [{"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [3, 4]}]}
    )
    assert parse_response(raw.encode(), 2, "u").tolist() == [[3, 4], [0, 2]]
    assert normalise(np.array([[3, 4], [0, 0]])).tolist() == [[f32(0.6), f32(0.8)], [0, 0]]
    with pytest.raises(EmbeddingsError, match="1 vectors for 2 inputs"):
        parse_response(b'{"data": [{"embedding": [1]}]}', 2, "u")
    with pytest.raises(EmbeddingsError, match="no usable embeddings"):
        parse_response(b'{"error": "x"}', 1, "u")


def test_an_unreachable_provider_is_an_embeddings_error_naming_it() -> None:
    dead = Embedder(EmbeddingsConfig("http://127.0.0.1:9/v1/embeddings", "m", timeout_seconds=2))
    with pytest.raises(EmbeddingsError, match=r"127\.0\.0\.1:9/v1/embeddings could not be reached"):
        dead.embed(["x"])


# ------------------------------------------------------------------ the store


class HashEmbedder(Embedder):
    """The simulator's deterministic vectors, in process."""

    def __init__(self, model: str = "alpha", width: int = 64, passages: bool = True,
                 fail: bool = False, limit: int = 20_000) -> None:  # fmt: skip
        super().__init__(
            EmbeddingsConfig("http://sim/v1/embeddings", model, passages=passages,
                             passage_vector_limit=limit)
        )  # fmt: skip
        self.width, self.fail, self.calls = width, fail, 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.fail:
            raise EmbeddingsError("http://sim/v1/embeddings answered 500")
        return normalise(np.array([sim_embed(t, self.width) for t in texts], np.float32))


SAKE = "青嶺酒造は雲居県霧沢町の蔵元である。\n\n杜氏の高瀬が麹造りを監督する。"
CORPUS = [
    ("sake.md", SAKE,
     [Association("青嶺酒造", "杜氏", "高瀬", 2.0, 1),
      Association("高瀬", "出身", "南部杜氏", 1.0, 1)],
     [Question(1, "酒造りの責任者は誰か")]),
    ("town.md", "霧沢町は雲居県の北にある町である。",
     [Association("霧沢町", "所在県", "雲居県", 1.0, 0)], []),
    ("rice.md", "酒米の山田錦を磨いて使う。", [], []),
]  # fmt: skip


def fill(store: SqliteStore, corpus: list = CORPUS) -> None:  # type: ignore[type-arg]
    for source, text, facts, questions in corpus:
        data = source_file(source, text, facts, questions=questions)
        store.import_batches(read_stream(data).batches, create_missing=True)
    assert all(r.failure is None for r in store.refresh_embeddings())


def vector_plan(result: dict) -> dict:  # type: ignore[type-arg]
    return result["plan"]["contexts"][0]["lanes"]["vector"]


@pytest.fixture
def embedded(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "store", embedder=HashEmbedder())
    fill(store)
    return store


def test_without_a_provider_the_lane_says_so_and_scores_stay_bm25(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store")
    fill(store)
    found = store.search("demo", "霧沢町", limit=5)
    assert vector_plan(found) == {"ran": False, "reason": NO_PROVIDER}
    assert all(set(hit["lanes"]) == {"bm25"} for hit in found["hits"])
    assert found["hits"][0]["score"] == found["hits"][0]["lanes"]["bm25"]["score"]
    assert store.embeddings("demo") == {"provider_model": None}


def test_the_lane_runs_and_fuses_when_passages_are_embedded(embedded: SqliteStore) -> None:
    found = embedded.search("demo", "霧沢町の蔵元", limit=5)
    assert vector_plan(found) == {"ran": True, "floor": 0.35}
    first = found["hits"][0]
    assert (first["source"], first["paragraph"]) == ("sake.md", 0)
    assert first["lanes"]["bm25"]["rank"] == first["lanes"]["vector"]["rank"] == 1
    assert first["score"] == float(str(rrf(1) + rrf(1)))
    for hit in found["hits"]:  # every score is the sum of its lanes' reciprocal ranks
        expected = sum(float(rrf(lane["rank"])) for lane in hit["lanes"].values())
        assert hit["score"] == pytest.approx(expected, rel=1e-6)
    scores = [hit["score"] for hit in found["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_a_question_row_can_be_a_paragraphs_best_row(embedded: SqliteStore) -> None:
    found = embedded.search("demo", "酒造りの責任者は誰か", limit=5, semantic_floor=0.0)
    by_place = {(h["source"], h["paragraph"]): h for h in found["hits"]}
    assert by_place[("sake.md", 1)]["lanes"]["vector"]["rank"] == 1
    assert by_place[("sake.md", 1)]["lanes"]["vector"]["score"] == pytest.approx(1.0, abs=1e-6)


def test_a_high_floor_leaves_the_lane_ran_with_bm25_hits_fused(embedded: SqliteStore) -> None:
    found = embedded.search("demo", "雲居県", limit=5, semantic_floor=0.999)
    assert vector_plan(found) == {"ran": True, "floor": 0.999}
    assert all("vector" not in hit["lanes"] for hit in found["hits"])
    assert [hit["score"] for hit in found["hits"]] == [
        float(str(rrf(rank))) for rank in range(1, len(found["hits"]) + 1)
    ]


def test_a_tag_filter_gates_the_vector_lane_too(embedded: SqliteStore) -> None:
    found = embedded.search("demo", "霧沢町", limit=5, tags=["nothing"], semantic_floor=0.0)
    assert found["hits"] == [] and vector_plan(found)["ran"] is True


def test_passages_off_then_no_vectors_then_model_and_width_changed(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    fill(SqliteStore(folder, embedder=HashEmbedder(passages=False)))
    off = SqliteStore(folder, embedder=HashEmbedder(passages=False))
    assert vector_plan(off.search("demo", "酒造")) == {"ran": False, "reason": PASSAGES_OFF}
    assert "passages" not in off.embeddings("demo")
    on = SqliteStore(folder, embedder=HashEmbedder())
    assert vector_plan(on.search("demo", "酒造")) == {"ran": False, "reason": NO_VECTORS}
    on.refresh_embeddings()
    assert vector_plan(on.search("demo", "酒造"))["ran"] is True
    beta = SqliteStore(folder, embedder=HashEmbedder("beta"))
    assert vector_plan(beta.search("demo", "酒造"))["reason"] == (
        "stored vectors belong to model 'alpha' but the provider is 'beta' — they are never "
        "served, and the next refresh re-embeds"
    )
    narrow = SqliteStore(folder, embedder=HashEmbedder(width=32))
    assert vector_plan(narrow.search("demo", "酒造"))["reason"].startswith(
        "stored vectors are 64-dimensional but the model now answers 32"
    )
    narrow.refresh_embeddings()  # re-embeds everything at the new width
    assert narrow.embeddings("demo")["passages"] == {"model": "alpha", "width": 32, "rows": 5}
    assert narrow.embeddings("demo")["glosses"]["width"] == 32
    assert vector_plan(narrow.search("demo", "酒造"))["ran"] is True


def test_a_failed_query_embedding_degrades_to_bm25_and_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    fill(SqliteStore(folder, embedder=HashEmbedder()))
    failing = SqliteStore(folder, embedder=HashEmbedder(fail=True))
    found = failing.search("demo", "霧沢町")
    assert vector_plan(found) == {
        "ran": False,
        "reason": "the query embedding failed: http://sim/v1/embeddings answered 500",
    }
    assert found["hits"] and "vector" not in found["hits"][0]["lanes"]


def test_the_embeddings_status_counts_what_is_stored(embedded: SqliteStore) -> None:
    status = embedded.embeddings("demo")
    assert status == {
        "provider_model": "alpha",
        "glosses": {"model": "alpha", "width": 64, "concepts": 5, "labels": 3},
        "passages": {"model": "alpha", "width": 64, "rows": 5},  # 4 paragraphs + 1 question
    }
    with pytest.raises(ContextError) as refused:
        embedded.embeddings("nope")
    assert refused.value.code == "no_context"


def test_reimporting_a_source_replaces_its_vectors(embedded: SqliteStore) -> None:
    data = source_file("rice.md", "酒米を磨く。\n\n精米歩合は五割。")
    embedded.import_batches(read_stream(data).batches, create_missing=True)
    embedded.refresh_embeddings(["demo"])
    assert embedded.embeddings("demo")["passages"]["rows"] == 6
    found = embedded.search("demo", "精米歩合", limit=5, semantic_floor=0.0)
    assert ("rice.md", 1) in {(h["source"], h["paragraph"]) for h in found["hits"]}


def test_the_passage_vector_limit_leaves_the_rest_to_bm25(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store", embedder=HashEmbedder(limit=3))
    fill(store)
    report = store.refresh_embeddings()[0]
    assert store.embeddings("demo")["passages"]["rows"] <= 3 and report.skipped_over_limit > 0


def test_a_provider_failure_at_import_refuses_nothing_and_the_next_refresh_embeds(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "store"
    failing = SqliteStore(folder, embedder=HashEmbedder(fail=True))
    data = source_file(*CORPUS[0][:3], questions=CORPUS[0][3])
    failing.import_batches(read_stream(data).batches, create_missing=True)
    (report,) = failing.refresh_embeddings()
    assert report.failure == "http://sim/v1/embeddings answered 500"
    assert failing.sources("demo")["sources"] == ["sake.md"]  # the import stands
    working = SqliteStore(folder, embedder=HashEmbedder())
    (report,) = working.refresh_embeddings()
    assert (report.failure, report.passages) == (None, 3)
    assert vector_plan(working.search("demo", "杜氏"))["ran"] is True


def test_resolve_adds_the_semantic_tier_only_under_a_weak_lexical_answer(
    embedded: SqliteStore,
) -> None:
    confident = embedded.resolve("demo", "高瀬")
    assert [c["tier"] for c in confident] == ["lexical"]
    # only 青嶺酒造 is spelled in the cue (4 of 9 characters: weak); 高瀬's gloss,
    # 高瀬。青嶺酒造の杜氏は高瀬。…, shares the rest of its words
    found = embedded.resolve("demo", "青嶺酒造の杜氏は誰", limit=5, semantic_floor=0.3)
    assert found[0] == {"name": "青嶺酒造", "score": 4 / 9, "tier": "lexical",
                        "kind": "containment"}  # fmt: skip
    assert "高瀬" in [c["name"] for c in found if c["tier"] == "semantic"]
    assert all("kind" not in c for c in found if c["tier"] == "semantic")
    labels = embedded.resolve("demo", "青嶺酒造の杜氏は", namespace="label", semantic_floor=0.3)
    assert "杜氏" in [c["name"] for c in labels]


def test_a_provider_failure_in_resolve_is_502_only_with_nothing_lexical(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    fill(SqliteStore(folder, embedder=HashEmbedder()))
    failing = SqliteStore(folder, embedder=HashEmbedder(fail=True))
    with pytest.raises(ContextError) as refused:
        failing.resolve("demo", "まったく無関係な言葉")
    assert (refused.value.status, refused.value.code) == (502, "embeddings_failed")
    weak = failing.resolve("demo", "高瀬さんの話")  # containment 2/6: weak, still served
    assert [c["name"] for c in weak] == ["高瀬"]


# ------------------------------------------------------------------ end to end


def write_corpus(folder: Path) -> Path:
    folder.mkdir()
    for source, text, facts, questions in CORPUS:
        data = source_file(source, text, facts, questions=questions)
        (folder / f"{source}.jsonl").write_bytes(data)
    return folder


def run_cli(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_import_and_search_through_the_simulators_embeddings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out, store = write_corpus(tmp_path / "out"), str(tmp_path / "store")
    with SimulatorProcess() as sim:
        monkeypatch.setenv("TAGURU_EMBED_URL", f"{sim.base_url}/embeddings")
        monkeypatch.setenv("TAGURU_EMBED_MODEL", "sim-embed")
        monkeypatch.setenv("TAGURU_EMBED_PASSAGES", "1")
        code, said, err = run_cli(import_.main, [str(out), "--store", store], capsys)
        assert code == 0, err
        assert "embedded" in said and "paragraph rows" in said
        code, said, err = run_cli(search.main, ["--store", store, "--json", "霧沢町の蔵元"], capsys)
        assert code == 0, err
    wire = json.loads(said)
    assert vector_plan(wire) == {"ran": True, "floor": 0.35}
    both = [h for h in wire["hits"] if set(h["lanes"]) == {"bm25", "vector"}]
    assert both and (both[0]["source"], both[0]["paragraph"]) == ("sake.md", 0)
    for hit in wire["hits"]:
        expected = sum(1 / (60 + lane["rank"]) for lane in hit["lanes"].values())
        assert hit["score"] == pytest.approx(expected, rel=1e-6)
    status = SqliteStore(store).embeddings("demo")  # no provider now: the store still knows
    assert status["passages"] == {"model": "sim-embed", "width": 64, "rows": 5}
    monkeypatch.delenv("TAGURU_EMBED_URL")
    code, said, err = run_cli(search.main, ["--store", store, "--json", "霧沢町"], capsys)
    assert vector_plan(json.loads(said)) == {"ran": False, "reason": NO_PROVIDER}


def test_import_with_an_unreachable_provider_keeps_the_file_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out, store = write_corpus(tmp_path / "out"), str(tmp_path / "store")
    monkeypatch.setenv("TAGURU_EMBED_URL", "http://127.0.0.1:9/v1/embeddings")
    monkeypatch.setenv("TAGURU_EMBED_MODEL", "dead")
    monkeypatch.setenv("TAGURU_EMBED_PASSAGES", "1")
    monkeypatch.setenv("TAGURU_EMBED_TIMEOUT_SECS", "2")
    code, said, err = run_cli(import_.main, [str(out / "rice.md.jsonl"), "--store", store], capsys)
    assert code == 1 and "imported source 'rice.md'" in said
    assert "embedding context 'demo' failed" in err and "could not be reached" in err
    assert SqliteStore(store).sources("demo")["sources"] == ["rice.md"]
    monkeypatch.setenv("TAGURU_EMBED_MODEL", "")
    code, _, err = run_cli(import_.main, [str(out), "--store", store], capsys)
    assert code == 2 and "TAGURU_EMBED_MODEL is not set" in err
