"""The foreign-ideograph check (taguru ADR 0039): spellings in another language's repertoire."""

from __future__ import annotations

import pytest

from taguru_ray.text.occurrence import Haystack
from taguru_ray.text.scripts import (
    foreign_ideographs,
    foreign_reason,
    in_jis_x0208,
    is_ideograph,
)
from tests.anchor import load_fixture, requires_anchor

JAPANESE = "前二項の罪は、刑法第二条の例に従う。適用法律は刑法とする。"


def foreign(spelling: str, text: str = JAPANESE) -> list[str]:
    return foreign_ideographs(spelling, Haystack(text))


# --- the repertoire -------------------------------------------------------------------------


def test_repertoire_holds_jis_x0208s_6356_ideographs() -> None:
    block = [chr(code_point) for code_point in range(0x4E00, 0xA000)]
    assert sum(in_jis_x0208(char) for char in block) == 6356


@pytest.mark.parametrize(
    ("char", "inside"),
    [
        ("適", True),
        ("适", False),  # simplified 適
        ("一", True),  # U+4E00, the block's first
        ("龠", True),  # U+9FA0, JIS X 0208's last
        ("\u9fff", False),  # the block's last, not in JIS X 0208
        ("辭", True),  # an older form JIS X 0208 carries: passes (taguru ADR 0039 section 4)
        ("髙", False),  # a cp932 vendor extension, not JIS X 0208
        ("㐀", False),  # Extension A: outside the block, outside the repertoire
        ("﨑", False),  # a compatibility ideograph
        ("あ", False),  # not an ideograph at all
    ],
)
def test_repertoire_edges(char: str, inside: bool) -> None:
    assert in_jis_x0208(char) is inside


@pytest.mark.parametrize(
    ("char", "ideograph"),
    [
        ("\u3400", True),
        ("\u4dbf", True),
        ("\u4e00", True),
        ("\u9fff", True),
        ("\uf900", True),
        ("\ufaff", True),
        ("\U00020000", True),
        ("\U0003347f", True),
        ("\u33ff", False),
        ("\u4dc0", False),  # Yijing hexagram symbols, between Extension A and the block
        ("\ua000", False),
        ("\U00033480", False),
        ("々", False),
        ("〇", False),
        ("ア", False),
        ("ｱ", False),  # half-width katakana
        ("한", False),
        ("A", False),
    ],
)
def test_ideograph_ranges(char: str, ideograph: bool) -> None:
    assert is_ideograph(char) is ideograph


# --- which characters are flagged -----------------------------------------------------------


@requires_anchor
def test_foreign_ideograph_label_fixture() -> None:
    fixture = load_fixture("removed", "association_foreign_ideograph_label")
    haystack = Haystack(fixture["segment"])
    flagged = [
        (field, item[field], foreign_ideographs(item[field], haystack))
        for item in fixture["answer"]["associations"]
        for field in ("label", "subject", "object")
    ]
    assert [entry for entry in flagged if entry[2]] == [("label", "适用法律", ["适"])]
    reason = foreign_reason([("label", "适用法律", ["适"])])
    assert fixture["removed"] == [f"associations[0]: {reason}"]


def test_japanese_spellings_are_never_flagged() -> None:
    assert foreign("適用法律") == []
    assert foreign("届出義務") == []  # not in the text, but inside the repertoire
    assert foreign("辭任") == []


def test_flagged_in_first_appearance_order_each_once() -> None:
    assert foreign("连带责任连带") == ["连", "带", "责"]
    assert foreign("处罚处分") == ["处", "罚"]


def test_a_segment_that_writes_the_character_clears_it() -> None:
    assert foreign("适用法律", "本条所称适用法律，是指……") == []
    assert foreign("适用法律", "中国語では「适」と書く。") == []


def test_chinese_text_clears_its_own_characters() -> None:
    chinese = "本法所称的规定适用于合同当事人之间的连带责任。"
    assert foreign("规定", chinese) == []
    assert foreign("连带责任", chinese) == []
    assert foreign("类型", chinese) == ["类"]  # a character this text never writes


def test_korean_text_and_hangul_are_not_judged() -> None:
    korean = "대한민국 헌법 제1조"
    assert foreign("헌법", korean) == []
    assert foreign("大韓民國", korean) == []  # all inside JIS X 0208
    assert foreign("适用", korean) == ["适"]


def test_kana_half_width_katakana_and_latin_are_not_judged() -> None:
    assert foreign("ｶﾀｶﾅ ﾃｽﾄ", "") == []
    assert foreign("カタカナ と ひらがな", "") == []
    assert foreign("PostgreSQL 16", "") == []


def test_ideographs_outside_the_block_are_outside_the_repertoire() -> None:
    assert foreign("𠮷野家", "吉野家") == ["𠮷"]  # Extension B
    assert foreign("𠮷野家", "𠮷野家") == []
    assert foreign("髙橋", "高橋") == ["髙"]  # taguru ADR 0039 section 4's accepted limit
    assert foreign("﨑", "崎") == ["﨑"]


def test_haystack_folding_does_not_hide_a_character() -> None:
    assert foreign("适用", "ＡＢＣ 适\u3000用") == []


# --- the reason -----------------------------------------------------------------------------


def test_reason_for_one_character_is_singular() -> None:
    assert foreign_reason([("label", "适用法律", ["适"])]) == (
        'label "适用法律" uses 适 — an ideograph outside the segment\'s script'
    )


def test_reason_names_every_offending_field_in_one_record() -> None:
    assert foreign_reason([("label", "适用法律", ["适"]), ("object", "处分", ["处"])]) == (
        'label "适用法律" uses 适, object "处分" uses 处 — ideographs outside the segment\'s script'
    )


def test_reason_with_two_characters_in_one_field_is_plural() -> None:
    assert foreign_reason([("alias", "处罚", ["处", "罚"])]) == (
        'alias "处罚" uses 处, 罚 — ideographs outside the segment\'s script'
    )


def test_reason_quotes_the_way_issues_do() -> None:
    assert foreign_reason([("subject", '适"\n', ["适"])]) == (
        'subject "适\\"\\n" uses 适 — an ideograph outside the segment\'s script'
    )
