"""evaluate's pure parts with literals: scoring by rank and label, the budget's accounting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.evalset import Case, ExpectedSource
from taguru_ray.evaluate import budget, scoring
from taguru_ray.remote.search_page import SearchShapeError, read_search_result

WIRE = Path(__file__).parent / "fixtures/anchor/tests/fixtures/wire/http"


def test_ndcg_the_worked_example_and_every_expectation_credited_once() -> None:
    a = ExpectedSource("A", (), 3)
    b = ExpectedSource("B", (), 1)
    block = scoring.recall_block([a, b], [("A", 0), ("X", 0), ("B", 4)])
    assert block is not None
    # DCG = 3/log2(2) + 1/log2(4) = 3.5; IDCG = 3/log2(2) + 1/log2(3) = 3.6309…
    assert block["ndcg"] == pytest.approx(3.5 / (3 + 1 / 1.584962500721156))
    assert (block["recall_at_k"], block["mrr"], block["matched"]) == (1.0, 1.0, 2)
    # Two expectations satisfied by one hit: DCG would pass IDCG; it is clamped at 1.
    both = scoring.recall_block([a, ExpectedSource("A", (0,), 3)], [("A", 0)])
    assert both is not None and both["ndcg"] == 1.0


def test_relevance_zero_is_not_an_expectation_and_paragraphs_pin() -> None:
    assert scoring.recall_block([ExpectedSource("A", (), 0)], [("A", 0)]) is None
    block = scoring.recall_block([ExpectedSource("A", (2,), 1)], [("A", 0), ("A", 2)])
    assert block == {"recall_at_k": 1.0, "mrr": 0.5, "ndcg": pytest.approx(0.6309297535714575),
                     "expected_total": 1, "matched": 1}  # fmt: skip
    assert scoring.recall_block([ExpectedSource("A", (2,), 1)], [])["mrr"] == 0.0  # type: ignore[index]


def test_top_tier_never_mixes_and_a_position_pins_only_on_one_candidate() -> None:
    lexical = {"name": "a", "tier": "lexical"}
    semantic = {"name": "b", "tier": "semantic"}
    assert scoring.top_tier([lexical, semantic]) == [lexical]
    assert scoring.top_tier([semantic]) == [semantic]
    assert scoring.position_outcome([], 3) == {"outcome": "not_found", "latency_ms": 3}
    assert scoring.position_outcome([lexical], 3)["outcome"] == "resolved"
    two = scoring.position_outcome([lexical, {"name": "c", "tier": "lexical"}], 3)
    assert two == {"outcome": "ambiguous", "tier": "lexical", "candidates": ["a", "c"],
                   "latency_ms": 3}  # fmt: skip


def test_coverage_folds_width_and_kana_as_normalize_entry_does() -> None:
    cues = [{"kind": "concept", "resolved_names": ["ｱｵﾐﾈ", " Sake "]}]
    assert scoring.coverage_counts(["あおみね", "SAKE", "mizu"], cues) == {
        "expected": 3, "matched": 2, "value": 2 / 3}  # fmt: skip
    assert scoring.coverage_counts([], cues) is None


def test_citation_validity_section_three_ways_and_the_quote() -> None:
    assert scoring.section_check(False, None, "x") == {"check": "not_checked"}
    assert scoring.section_check(True, None, None) == {"check": "matched", "expected": None}
    assert scoring.section_check(True, "a", None)["check"] == "mismatched"
    assert scoring.quote_matches(" 1897年に創業 ", "青嶺酒造は１８９７年に創業した。")
    resolved = {"outcome": "resolved", "section": {"check": "matched"}, "served": True}
    assert scoring.citation_valid(resolved)
    assert not scoring.citation_valid(resolved | {"quote": {"declared": "q", "matched": False}})
    assert not scoring.citation_valid({"outcome": "unresolved", "served": True})


def test_missed_keeps_three_and_counts_what_it_dropped() -> None:
    case = Case("c", "q", expected_concepts=("a", "b", "c", "d", "e"))
    shown, dropped = scoring.missed(case, [], [], [], [])
    assert shown == [f"expected_concepts: '{n}' not resolved" for n in "abc"] and dropped == 2
    silent = Case("c", "q", expected_sources=(ExpectedSource("S", (), 1),))
    assert scoring.missed(silent, None, [], [], []) == ([], 0)  # a failed passage lane


def test_a_baseline_hit_costs_what_the_servers_evidence_item_costs() -> None:
    recorded = json.loads((WIRE / "evidence_mixed_lanes.json").read_text(encoding="utf-8"))
    item = recorded["response"]["result"]["items"][1]
    envelope = budget.passage_envelope("sake", item["passage"], 2)
    size, quarters = budget.measure(envelope)
    assert (size, budget.tokens(quarters)) == (item["bytes"], item["estimated_tokens"])


def test_truncation_skips_a_hit_that_does_not_fit_and_goes_on() -> None:
    def hit(source: str, text: str) -> dict:
        return {"source": source, "paragraph": 0, "score": 1.0, "text": text, "lanes": {}}

    hits = [hit("a", "x"), hit("b", "y" * 500), hit("c", "z")]
    one = budget.measure(budget.passage_envelope("ctx", hits[0], 1))[0]
    limits = budget.Limits(10, 2 + one + 1 + one + 2 + 10, 4000)
    cut = budget.truncate("ctx", hits, limits)
    assert [h["source"] for h in cut.hits] == ["a", "c"] and cut.omitted_total == 1
    assert cut.usage["items_used"] == 2 and cut.usage["limits"]["max_items"] == 10
    assert budget.truncate("ctx", hits, budget.Limits(1, 65536, 4000)).omitted_total == 2
    assert budget.Limits.resolve(None, 5_000_000, None) == budget.Limits(40, 1024 * 1024, 4000)


def test_search_results_typed_bare_and_unrecognisable() -> None:
    typed = {"plan": {"contexts": [{"context": "c", "lanes": {"bm25": {"ran": True},
             "vector": {"ran": False, "reason": "no embedding provider is configured"}}}]},
             "hits": [{"source": "s", "paragraph": 1, "score": 0.5, "text": "t",
                       "lanes": {"bm25": {"rank": 1, "score": 0.5}}}]}  # fmt: skip
    page = read_search_result(typed)
    assert page.plan is not None and page.plan["context"] == "c"
    assert page.hits[0]["lanes"] == {"bm25": {"rank": 1, "score": 0.5}}
    bare = read_search_result([{"source": "s", "paragraph": 2}])
    assert bare.plan is None and bare.hits[0] == {"source": "s", "paragraph": 2, "score": 0.0,
                                                 "text": "", "lanes": None}  # fmt: skip
    assert read_search_result({"hits": [{"source": "s", "paragraph": 1}]}).hits[0]["paragraph"] == 1
    with pytest.raises(SearchShapeError):
        read_search_result({"foo": 1})
    with pytest.raises(SearchShapeError, match="paragraph"):
        read_search_result([{"source": "s"}])


class _Evidence:
    """A client whose ``evidence`` answers the reference's recorded package."""

    def __init__(self, result: object) -> None:
        self.result = result
        self.sent: list[dict] = []

    def evidence(self, name: str, body: dict) -> object:
        from taguru_ray.remote.client import Reply

        self.sent.append(body)
        return Reply(self.result, 7)


def test_an_assembled_package_gives_locators_never_its_text() -> None:
    from taguru_ray.evaluate.lanes import evidence_lane

    recorded = json.loads((WIRE / "evidence_mixed_lanes.json").read_text(encoding="utf-8"))
    client = _Evidence(recorded["response"]["result"])
    case = Case("c", "青嶺酒造の杜氏", cues=("青嶺酒造",))
    lane = evidence_lane(client, "sake", case, 10, budget.Limits(40, 65536, 4000), "rr")  # type: ignore[arg-type]
    assert client.sent[0]["origins"] == ["青嶺酒造"] and client.sent[0]["rerank"] == {"model": "rr"}
    assert client.sent[0]["budget"] == {"max_items": 40, "max_bytes": 65536, "max_tokens": 4000}
    # The association's citation ref, then the passage's own locator, in fused order.
    assert lane.hits == [("docs/kura.md", 0), ("docs/kura.md", 0)]
    assert lane.evidence is not None and lane.evidence["outcome"] == "assembled"
    assert [item.get("source") for item in lane.evidence["items"]] == [None, "docs/kura.md"]
    assert lane.budget == {"bytes_used": 1142, "items_used": 2, "tokens_used": 303,
                           "limits": {"max_bytes": 65536, "max_items": 40, "max_tokens": 4000},
                           "omitted_total": 0}  # fmt: skip
    assert "青嶺酒造は雲居県" not in json.dumps(lane.__dict__, ensure_ascii=False)
    one = evidence_lane(client, "sake", case, 1, budget.Limits(40, 65536, 4000), None)  # type: ignore[arg-type]
    assert one.hits == [("docs/kura.md", 0)] and "rerank" not in client.sent[1]
