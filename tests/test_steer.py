from taguru_ray.contract.items import Alias, Association
from taguru_ray.pipeline.steer import Contribution, LabelLedger, LabelUse, render_vocabulary


def test_labels_rank_most_reused_first_ties_in_first_seen_order() -> None:
    ledger = LabelLedger()
    ledger.absorb(
        Contribution.of(
            [
                Association("a", "uses", "b"),
                Association("b", "part of", "c"),
                Association("c", "uses", "d"),
            ],
            [],
        )
    )
    ledger.absorb(Contribution.of([Association("x", "runs on", "y")], []))
    ranked = ledger.ranked()
    assert [(u.label, u.count) for u in ranked] == [("uses", 2), ("part of", 1), ("runs on", 1)]


def test_a_label_alias_counts_for_its_canonical() -> None:
    contribution = Contribution.of(
        [Association("a", "uses", "b")],
        [Alias("utilises", "uses", "label"), Alias("A", "a", "concept")],
    )
    assert [(u.label, u.count) for u in contribution.labels] == [("uses", 2)]


def test_vocabulary_block_marks_counts_above_one() -> None:
    ledger = LabelLedger({"uses": 3, "part of": 1})
    assert render_vocabulary(ledger.ranked()) == "- uses (×3)\n- part of"


def test_the_cap_keeps_the_most_used() -> None:
    ledger = LabelLedger({f"l{i}": i for i in range(10)})
    assert [u.label for u in ledger.ranked(cap=3)] == ["l9", "l8", "l7"]


def test_the_cap_keeps_first_seen_order_among_equal_counts() -> None:
    ledger = LabelLedger({"c": 1, "a": 2, "d": 1, "b": 2, "e": 1})
    assert [u.label for u in ledger.ranked(cap=4)] == ["a", "b", "c", "d"]


def test_a_ranking_reuses_the_objects_of_labels_whose_count_did_not_change() -> None:
    # Pickle ships an object once per call: the jobs of one call share their labels.
    ledger = LabelLedger()
    ledger.absorb(Contribution(labels=(LabelUse("uses", 2), LabelUse("part of", 1))))
    first = ledger.ranked()
    assert ledger.ranked() is first  # nothing absorbed since: the same tuple
    ledger.absorb(Contribution(labels=(LabelUse("part of", 1),)))
    second = ledger.ranked()
    assert [(u.label, u.count) for u in second] == [("uses", 2), ("part of", 2)]
    assert second[0] is first[0] and second[1] is not first[1]
    ledger.absorb(Contribution())  # no labels: the ranking stands
    assert ledger.ranked() is second
