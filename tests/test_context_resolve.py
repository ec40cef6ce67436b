"""The lexical resolve tier (EVALUATE.md §2.2) on crafted spellings."""

from __future__ import annotations

import pytest

from taguru_ray.context.resolve import EntryIndex, Resolution, clamp_floor


def names(*spellings: str) -> EntryIndex:
    return EntryIndex((s, s) for s in spellings)


def test_exact_match_scores_one_and_skips_fuzzy() -> None:
    index = names("脅威", "脅威候補", "10大脅威選考会", "脅迫")
    assert index.resolve("脅威") == [
        Resolution("脅威", 1.0, "exact"),
        Resolution("脅威候補", 0.5, "containment"),
        Resolution("10大脅威選考会", 2 / 8, "containment"),
    ]


def test_containment_either_way_scores_shorter_over_longer() -> None:
    index = names("10大脅威選考会")
    assert index.resolve("選考会") == [Resolution("10大脅威選考会", 3 / 8, "containment")]
    hit = index.resolve("10大脅威選考会について教えて")[0]
    assert (hit.kind, hit.score) == ("containment", 8 / 15)


def test_an_alias_spelling_resolves_to_its_canonical_as_alias() -> None:
    index = EntryIndex([("青嶺酒造", "青嶺酒造"), ("Aomine Brewery", "青嶺酒造")])
    assert index.resolve("aomine brewery") == [Resolution("青嶺酒造", 1.0, "alias")]
    assert index.resolve("ＡＯＭＩＮＥ brewery")[0].kind == "alias"


def test_case_and_width_fold_before_matching() -> None:
    assert names("Apple").resolve("ａｐｐｌｅ") == [Resolution("Apple", 1.0, "exact")]


def test_fuzzy_dice_over_bigrams_with_the_floor() -> None:
    index = names("青嶺酒造")
    # 青嶺酒蔵 vs 青嶺酒造: bigrams {青嶺, 嶺酒, 酒蔵} / {青嶺, 嶺酒, 酒造}: 2·2 / (3 + 3).
    assert index.resolve("青嶺酒蔵") == [Resolution("青嶺酒造", pytest.approx(4 / 6), "fuzzy")]
    assert index.resolve("青嶺酒蔵", dice_floor=0.7) == []


def test_stop_grams_are_ignored_on_both_sides() -> None:
    # 70 names share the 株式 prefix bigram: above max(64, 71/20), a stop-gram.
    spellings = [f"株式{chr(0x4E00 + i)}{chr(0x4F00 + i)}" for i in range(70)] + ["株式会社青嶺"]
    index = names(*spellings)
    hit = index.resolve("株式会社青峰")  # shares 式会, 会社, 社青 — 株式 is a stop-gram
    # needle informative {式会, 会社, 社青, 青峰} = 4; spelling {式会, 会社, 社青, 青嶺} = 4.
    assert hit == [Resolution("株式会社青嶺", pytest.approx(2 * 3 / 8), "fuzzy")]


def test_each_canonical_keeps_its_best_and_ties_sort_by_name() -> None:
    index = EntryIndex([("beta", "beta"), ("alpha", "alpha"), ("alphabet", "beta")])
    assert index.resolve("alph") == [
        Resolution("alpha", 0.8, "containment"),
        Resolution("beta", 0.5, "containment"),
    ]
    tied = names("ab", "ba").resolve("b")
    assert [r.name for r in tied] == ["ab", "ba"]


def test_empty_cue_and_unrelated_cue_resolve_nothing() -> None:
    index = names("りんご")
    assert index.resolve("") == []
    assert index.resolve("ぶどう") == []


def test_floor_clamps_and_nan_reads_as_one() -> None:
    assert clamp_floor(None, 0.3) == 0.3
    assert clamp_floor(-1.0, 0.3) == 0.0
    assert clamp_floor(float("nan"), 0.3) == 1.0
