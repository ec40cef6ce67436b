"""The three shapes every measured value takes (BENCHMARK.md §2.2, EVALUATE.md §3.4).

Shared by `benchmark compare`, `benchmark search` and `evaluate`, as the reference
shares its `measure` module.

- `Distribution` — ``{n, min, p50, p90, p99, max, mean, sum}`` over samples,
  nearest-rank percentiles;
- `Ratio` — ``{value, n, numerator}``: a share of ``n`` items;
- `Count` — ``{value, n}``: a pooled total, union size or cross-unit rate and
  how many items it pooled.

Each shape knows its JSON object (keys in the contract's order), its CSV rows
(one per field, same order) and its sample size, the CSV's ``n`` column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# The percentiles a Distribution reports, in its field order.
PERCENTILES = (50, 90, 99)

Scalar = int | float | None


def nearest_rank(ordered: list[float], percentile: int) -> float:
    """The nearest-rank percentile of an ascending, non-empty list.

    The rank is ``ceil(p·n/100)`` in integer arithmetic (a float product could
    round 90·10/100 up past 9) clamped to [1, n], 1-based.
    """
    count = len(ordered)
    rank = -(-percentile * count // 100)
    return ordered[min(max(rank, 1), count) - 1]


@dataclass(frozen=True)
class Distribution:
    """Summary of a sample; every statistic is None when it is empty (n = 0)."""

    n: int
    min: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    mean: float | None = None
    sum: float | None = None

    statistic = "distribution"

    @classmethod
    def of(cls, samples: Iterable[float | int | None]) -> Distribution:
        """Drop missing and non-finite samples, sort, and summarise the rest."""
        ordered = sorted(float(s) for s in samples if s is not None and math.isfinite(s))
        if not ordered:
            return cls(n=0)
        total = 0.0
        for sample in ordered:  # left to right over the sorted list, as the reference sums
            total += sample
        p50, p90, p99 = (nearest_rank(ordered, p) for p in PERCENTILES)
        n = len(ordered)
        return cls(n, ordered[0], p50, p90, p99, ordered[-1], total / n, total)

    def to_json(self) -> dict[str, Any]:
        return dict(self.rows())

    def rows(self) -> list[tuple[str, Scalar]]:
        return [
            ("n", self.n),
            ("min", self.min),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("max", self.max),
            ("mean", self.mean),
            ("sum", self.sum),
        ]

    @property
    def sample_size(self) -> int:
        return self.n


@dataclass(frozen=True)
class Ratio:
    """``numerator`` of ``n`` items; value and numerator are None when n = 0."""

    value: float | None
    n: int
    numerator: int | None

    statistic = "ratio"

    def to_json(self) -> dict[str, Any]:
        return dict(self.rows())

    def rows(self) -> list[tuple[str, Scalar]]:
        return [("value", self.value), ("n", self.n), ("numerator", self.numerator)]

    @property
    def sample_size(self) -> int:
        return self.n


@dataclass(frozen=True)
class Count:
    """A pooled value over ``n`` items (None with n = 0 when nothing pooled)."""

    value: float | None
    n: int

    statistic = "count"

    def to_json(self) -> dict[str, Any]:
        return dict(self.rows())

    def rows(self) -> list[tuple[str, Scalar]]:
        return [("value", self.value), ("n", self.n)]

    @property
    def sample_size(self) -> int:
        return self.n


@dataclass(frozen=True)
class Tally:
    """How many of ``n`` items fell under each word, words in name order (a run's bound,
    say): ``{word: count}``, one CSV row per word."""

    counts: tuple[tuple[str, int], ...]

    statistic = "tally"

    @classmethod
    def of(cls, words: Iterable[str | None]) -> Tally:
        """Count the words given; a missing one (None) counts under none."""
        found: dict[str, int] = {}
        for word in words:
            if word is not None:
                found[word] = found.get(word, 0) + 1
        return cls(tuple(sorted(found.items())))

    def to_json(self) -> dict[str, Any]:
        return dict(self.counts)

    def rows(self) -> list[tuple[str, Scalar]]:
        return list(self.counts)

    @property
    def sample_size(self) -> int:
        return sum(count for _, count in self.counts)


MetricValue = Distribution | Ratio | Count | Tally
MetricsMap = dict[str, MetricValue]


def ratio(numerator: int, n: int) -> Ratio:
    """``numerator / n``; the empty ratio keeps its keys with nulls."""
    if n == 0:
        return Ratio(None, 0, None)
    return Ratio(numerator / n, n, numerator)


def count(value: float | None, n: int) -> Count:
    """A Count; a missing value always pools nothing."""
    if value is None:
        return Count(None, 0)
    return Count(float(value), n)


@dataclass(frozen=True)
class Definition:
    """One ``definitions`` entry: what a metric is, in which unit and shape, where from."""

    unit: str
    statistic: str  # distribution | ratio | count
    scopes: tuple[str, ...]
    description: str
    source: str
    caveat: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry's JSON object, keys in the contract's order."""
        return {
            "unit": self.unit,
            "statistic": self.statistic,
            "scopes": list(self.scopes),
            "description": self.description,
            "source": self.source,
            "caveat": self.caveat,
        }
