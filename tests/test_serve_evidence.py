"""Evidence assembly on the embedded store reproduces the reference's recorded packages
(`wire/http/evidence_*.json`) byte for byte: items, their bytes and token estimates,
the budget, omissions and the plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.context.evidence_request import EvidenceRequest
from taguru_ray.context.store import SqliteStore
from taguru_ray.context.writes import AssociationOp, ContextMeta
from tests.serve_fake import result_of


def _stream(context: str, source: str, text: str, *ops: dict[str, Any]) -> bytes:
    header = {"taguru_batch": 1, "context": context, "source": source, "create": {}}
    lines = [header, {"passage": text}, *ops]
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode()


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path)


def test_mixed_lanes_package_equals_the_recorded_one(store: SqliteStore) -> None:
    store.import_stream(
        _stream(
            "sake",
            "docs/kura.md",
            "青嶺酒造は雲居県霧沢町の蔵元である。杜氏は高瀬である。",
            {"paragraph": 0, "locator": {"kind": "page", "value": "1"}},
            {
                "subject": "青嶺酒造",
                "label": "杜氏",
                "object": "高瀬",
                "weight": 1.0,
                "paragraph": 0,
            },
        )
    )
    package = store.evidence("sake", EvidenceRequest(origins=("青嶺酒造",)))
    assert package == result_of("evidence_mixed_lanes")


def test_contradicting_facts_are_one_unit_and_name_each_other(store: SqliteStore) -> None:
    store.import_stream(
        _stream(
            "zoo",
            "s1.md",
            "猫は哺乳類である。",
            {"paragraph": 0, "locator": {"kind": "page", "value": "1"}},
            {"subject": "猫", "label": "is_a", "object": "哺乳類", "weight": 1.0, "paragraph": 0},
        )
    )
    store.import_stream(
        _stream(
            "zoo",
            "s2.md",
            "猫は爬虫類だと主張する文献もある。",
            {"subject": "猫", "label": "is_a", "object": "爬虫類", "weight": 1.0, "paragraph": 0},
        )
    )
    package = store.evidence("zoo", EvidenceRequest(origins=("猫",)))
    assert package == result_of("evidence_contradiction_group")


def test_a_near_duplicate_passage_is_omitted_naming_the_kept_one(store: SqliteStore) -> None:
    text = "the quick brown fox jumps over the lazy dog"
    store.import_stream(_stream("dup-corpus", "a.md", text))
    store.import_stream(_stream("dup-corpus", "b.md", text))
    request = EvidenceRequest(origins=(), text_fallback_query="quick brown fox")
    assert store.evidence("dup-corpus", request) == result_of("evidence_duplicate_passage")


def test_a_budget_skips_what_does_not_fit_and_counts_it(store: SqliteStore) -> None:
    text = "the quick brown fox jumps over the lazy dog"
    store.import_stream(_stream("c", "a.md", text))
    store.import_stream(_stream("c", "b.md", "a slow green turtle sleeps under the tree"))
    request = EvidenceRequest(origins=(), text_fallback_query="fox turtle", max_items=1)
    package = store.evidence("c", request)
    assert package["budget"]["items_used"] == 1
    assert package["omitted_by_reason"] == {"budget_exceeded": 1}
    assert package["omitted_total"] == 1
    # bytes = "[" item "]" + "[]": the item's own bytes plus four.
    assert package["budget"]["bytes_used"] == package["items"][0]["bytes"] + 4


def _unsourced(store: SqliteStore, context: str, *triples: tuple[str, str, str]) -> None:
    store.create_context(context, ContextMeta())
    store.add_associations(
        context, [AssociationOp(subject=s, label=lb, object=o) for s, lb, o in triples]
    )


def test_a_constrained_budget_admits_two_and_omits_three(store: SqliteStore) -> None:
    _unsourced(store, "c", *[(f"s{i}", "rel", f"o{i}") for i in range(5)])
    request = EvidenceRequest(origins=tuple(f"s{i}" for i in range(5)), max_items=2)
    assert store.evidence("c", request) == result_of("evidence_budget_constrained")


def test_communities_and_a_reranker_are_declined_in_the_plan(store: SqliteStore) -> None:
    _unsourced(store, "comm-corpus", ("alpha", "rel", "beta"))
    request = EvidenceRequest(
        origins=("alpha",), include_communities=True, rerank_model="not-configured"
    )
    package = store.evidence("comm-corpus", request)
    recorded = result_of("evidence_communities_degrade_and_rerank_reason")
    lanes, wanted = package["plan"]["lanes"], recorded["plan"]["lanes"]
    assert lanes.pop("communities")["ran"] is wanted.pop("communities")["ran"] is False
    assert package == recorded


def test_an_unknown_context_is_no_context(store: SqliteStore) -> None:
    with pytest.raises(Exception) as caught:
        store.evidence("missing", EvidenceRequest(origins=("x",)))
    assert getattr(caught.value, "code", None) == "no_context"


def test_evaluate_assembly_runs_end_to_end_against_serve(tmp_path: Path) -> None:
    """`evaluate --assembly` on the evaluate fixture corpus, through a real `serve`
    subprocess; the origin case's metrics worked out by hand below."""
    from taguru_ray.cli import main as cli
    from tests.test_evaluate_cli import CORPUS, EVAL
    from tests.test_serve_cli import SERVE, running

    store = tmp_path / "store"
    assert cli(["import", *map(str, CORPUS), "--store", str(store)]) == 0
    out = tmp_path / "assembly.json"
    with running(*SERVE, "--store", str(store), "--port", "0") as (_, base):
        code = cli(
            [
                "evaluate",
                "--eval",
                str(EVAL),
                "--context",
                "sake",
                "--url",
                base,
                "--out",
                str(out),
                "--assembly",
            ]
        )
    assert code == 0
    artifact = json.loads(out.read_text(encoding="utf-8"))
    assert artifact["inputs"]["mode"] == "assembly"
    cases = {case["case_id"]: case for case in artifact["cases"]}
    origin = cases["origin"]
    # Cue 青嶺酒造 anchors activation: its three facts (|sum| 1 each) tie at strength
    # 0.5 and rank by edge id (杜氏, 所在地, 醸造元); the passage search ranks brewery p0
    # first. Fused: 杜氏 and the passage tie at 1/61 (association sorts first), then
    # 1/62, 1/63. Hits = each item's own locator, then its citation refs.
    items = origin["evidence"]["items"]
    assert [item["candidate_id"].split("\0")[-1] for item in items] == [
        "高瀬",
        "0",
        "霧沢町",
        "青嶺酒造",
    ]
    hits = [(h["source"], h["paragraph"]) for h in origin["passage"]["hits"]]
    assert hits == [("corpus/brewery.md", 1)] + [("corpus/brewery.md", 0)] * 3
    # brewery p0 (rel 3) first at index 1, water (rel 1) missed: recall 1/2, MRR 1/2,
    # nDCG = (3/log2 3) / (3/log2 2 + 1/log2 3).
    log3 = 1.584962500721156
    assert origin["recall"] == {
        "recall_at_k": 0.5,
        "mrr": 0.5,
        "ndcg": pytest.approx((3 / log3) / (3 + 1 / log3)),
        "expected_total": 2,
        "matched": 1,
    }
    assert origin["budget"]["items_used"] == 4 and origin["budget"]["omitted_total"] == 0
    # toji: the cue 杜氏 names a label, not a concept: no anchor, the passage lane alone.
    assert [i["kind"] for i in cases["toji"]["evidence"]["items"]] == ["passage"]
    assert cases["toji"]["recall"]["mrr"] == 1.0
    # not-found: nothing resolves, nothing matches: an empty package is still assembled.
    assert cases["not-found"]["evidence"]["items"] == []
    assert cases["not-found"]["budget"]["bytes_used"] == 4  # "[]" and "[]"
    metrics = artifact["metrics"]
    assert metrics["recall.mrr"]["mean"] == pytest.approx((0.5 + 1 + 0 + 0.5) / 4)
    assert metrics["latency.evidence_ms"]["n"] == 5
