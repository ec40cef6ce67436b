"""BM25 in f32 as the reference scores it (EVALUATE.md §2.4): the wire fixture's number
and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from taguru_ray.context.bm25 import Postings, idf, score, wire_f32
from taguru_ray.context.terms import passage_terms


def bm25_f64(df: int, n: int, tf: int, length: int, average: float) -> float:
    """The formula by hand, in f64: k1 = 1.2, b = 0.75."""
    inverse = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return inverse * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))


def postings(*rows: tuple[int, int, int]) -> Postings:
    table = np.array(rows, dtype=np.int64)
    return Postings(table[:, 0], table[:, 1].astype(np.float32), table[:, 2].astype(np.float32))


def test_the_wire_fixture_scores_0_28768212() -> None:
    paragraph = passage_terms("青嶺酒造は雲居県霧沢町の蔵元である。")
    assert len(paragraph) == 16 and paragraph.count("酒造") == 1
    keys, scores = score([postings((0, 1, 16))], live=1, total_length=16)
    assert keys.tolist() == [0]
    assert json_number(scores[0]) == "0.28768212"


def json_number(value: np.float32) -> str:
    import json

    return json.dumps(wire_f32(value))


def test_two_paragraphs_by_hand() -> None:
    # P0 "apple banana" (length 2), P1 "apple apple cherry date" (length 4): N 2, avg 3.
    keys, scores = score([postings((0, 1, 2), (1, 2, 4))], live=2, total_length=6)
    assert keys.tolist() == [0, 1]
    assert scores[0] == pytest.approx(bm25_f64(2, 2, 1, 2, 3.0), rel=1e-6)  # 0.21110917
    assert scores[1] == pytest.approx(bm25_f64(2, 2, 2, 4, 3.0), rel=1e-6)  # 0.22920424
    assert [json_number(s) for s in scores] == ["0.2111092", "0.2292043"]
    keys, scores = score([postings((0, 1, 2))], live=2, total_length=6)  # "banana", df 1
    assert json_number(scores[0]) == "0.80259144"
    assert scores[0] == pytest.approx(bm25_f64(1, 2, 1, 2, 3.0), rel=1e-6)


def test_scores_add_in_query_term_order_in_f32() -> None:
    both = score([postings((0, 1, 2), (1, 2, 4)), postings((0, 1, 2))], live=2, total_length=6)
    alone = score([postings((0, 1, 2), (1, 2, 4))], live=2, total_length=6)[1]
    assert both[1][0] == np.float32(alone[0] + np.float32(0.80259144))
    assert both[1].dtype == np.float32


def test_idf_is_computed_in_f32() -> None:
    # 1 + 0.5 / 1.5 rounds to 1.3333334 in f32, whose log is the fixture's 0.28768212;
    # the f64 ln(4/3) would read 0.2876821.
    value = idf(np.float32(1), np.float32(1))
    assert value.dtype == np.float32
    assert str(value) == "0.28768212"
    assert str(np.float32(math.log(4 / 3))) == "0.2876821"


def test_nothing_touched_or_nothing_live_scores_nothing() -> None:
    assert score([], live=3, total_length=9)[0].tolist() == []
    assert score([postings((0, 1, 2))], live=0, total_length=0)[0].tolist() == []


def test_average_length_is_at_least_one() -> None:
    # Two one-term paragraphs: mean 1. A zero-length corpus would otherwise divide by 0.
    _, scores = score([postings((0, 1, 1))], live=2, total_length=1)
    assert scores[0] == pytest.approx(bm25_f64(1, 2, 1, 1, 1.0), rel=1e-6)
