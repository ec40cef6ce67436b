"""The value shapes of benchmark compare (BENCHMARK.md §2.2): nearest-rank percentiles,
empty shapes that keep their keys, Ratio and Count."""

from __future__ import annotations

import math

from taguru_ray.measure import Count, Distribution, Tally, count, nearest_rank, ratio


def test_nearest_rank_of_one_sample_is_that_sample() -> None:
    d = Distribution.of([7])
    assert (d.min, d.p50, d.p90, d.p99, d.max) == (7.0, 7.0, 7.0, 7.0, 7.0)


def test_nearest_rank_of_two_samples_takes_the_lower_for_the_median() -> None:
    d = Distribution.of([2, 1])
    assert (d.p50, d.p90) == (1.0, 2.0)


def test_nearest_rank_percentiles_on_longer_lists() -> None:
    assert Distribution.of([1, 2, 3, 4]).p50 == 2.0
    assert nearest_rank([float(i) for i in range(1, 11)], 90) == 9.0
    assert nearest_rank([float(i) for i in range(1, 101)], 99) == 99.0


def test_empty_distribution_keeps_every_key_null() -> None:
    assert Distribution.of([]).to_json() == {
        "n": 0,
        "min": None,
        "p50": None,
        "p90": None,
        "p99": None,
        "max": None,
        "mean": None,
        "sum": None,
    }


def test_missing_and_non_finite_samples_are_dropped() -> None:
    d = Distribution.of([None, math.nan, math.inf, 3.0, 1.0])
    assert (d.n, d.sum, d.mean, d.min, d.max) == (2, 4.0, 2.0, 1.0, 3.0)


def test_empty_ratio_has_null_value_and_numerator() -> None:
    assert ratio(0, 0).to_json() == {"value": None, "n": 0, "numerator": None}


def test_ratio_of_three_in_thirty_one() -> None:
    assert ratio(3, 31).to_json() == {"value": 3 / 31, "n": 31, "numerator": 3}


def test_count_without_a_value_pools_nothing() -> None:
    assert count(None, 5) == Count(None, 0)
    assert count(2, 1).to_json() == {"value": 2.0, "n": 1}


def test_csv_rows_follow_the_shape_order() -> None:
    assert [s for s, _ in Distribution.of([1]).rows()] == [
        "n", "min", "p50", "p90", "p99", "max", "mean", "sum"
    ]  # fmt: skip
    assert [s for s, _ in ratio(1, 2).rows()] == ["value", "n", "numerator"]
    assert [s for s, _ in count(1, 1).rows()] == ["value", "n"]


def test_a_tally_counts_words_in_name_order() -> None:
    tally = Tally.of(["window", "endpoint", None, "window"])
    assert tally.to_json() == {"endpoint": 1, "window": 2}
    assert tally.rows() == [("endpoint", 1), ("window", 2)] and tally.sample_size == 3
    assert Tally.of([]).to_json() == {} and Tally.of([]).sample_size == 0
