"""The matching form the redaction rules read: NFKC, ignorables dropped, spans traced back."""

from __future__ import annotations

import random
import unicodedata

from taguru_ray.text.matching_form import (
    FOLDED_RANGES,
    IGNORABLE_RANGES,
    PLAIN_RANGES,
    SPACE_RANGES,
    joined_form,
    matching_form,
)


def without_ignorables(text: str) -> str:
    return "".join(
        char for char in text if not any(low <= ord(char) <= high for low, high in IGNORABLE_RANGES)
    )


def reference(text: str) -> str:
    return unicodedata.normalize("NFKC", without_ignorables(text)).replace("\u1680", " ")


def test_ascii_and_normalised_text_are_their_own_form() -> None:
    for text in ["password = hunter2", "電話は本社まで。", ""]:
        form = matching_form(text)
        assert form.text == text
        assert form.original_span(0, len(text)) == (0, len(text))


def test_full_width_folds_to_ascii_and_every_space_to_a_space() -> None:
    form = matching_form("０９０－１２３４－５６７８　ｔａｒｏ＠ｅｘａｍｐｌｅ．ｃｏｍ\u00a0x")
    assert form.text == "090-1234-5678 taro@example.com x"


def test_invisible_characters_are_dropped() -> None:
    text = "ta\u200bro\u200c\u200d@exa\u2060mple\ufeff.com\u00ad \u202e!\ufe0f"
    assert matching_form(text).text == "taro@example.com !"


def test_each_character_of_the_form_traces_back_to_its_original_span() -> None:
    text = "電話：０３－１２３４\u200b－５６７８です"
    form = matching_form(text)
    start = form.text.index("03")
    end = form.text.index("5678") + 4
    assert form.text[start:end] == "03-1234-5678"
    original = form.original_span(start, end)
    assert text[slice(*original)] == "０３－１２３４\u200b－５６７８"


def test_an_expansion_maps_every_character_to_the_whole_original() -> None:
    # ㍻ is 平成 and ﬁ is fi: a part of the expansion is the whole original character.
    text = "x㍻yﬁz"
    form = matching_form(text)
    assert form.text == "x平成yfiz"
    assert form.original_span(1, 2) == (1, 2)
    assert form.original_span(2, 3) == (1, 2)
    assert form.original_span(4, 5) == (3, 4)
    assert form.original_span(6, 6) == (4, 4)  # an empty span: before the character there
    assert form.original_span(7, 7) == (5, 5)


def test_a_base_and_its_marks_are_one_cluster() -> None:
    # ｶﾞ (half-width) is ガ, e + U+0301 is é: a span never separates them.
    text = "ｶﾞe\u0301"
    form = matching_form(text)
    assert form.text == "ガé"
    assert form.original_span(0, 1) == (0, 2)
    assert form.original_span(1, 2) == (2, 4)


def test_the_form_is_the_nfkc_of_the_whole_text_however_characters_combine() -> None:
    pool = [
        "a",
        "x",
        " ",
        "e",
        "\u0301",
        "\u0316",
        "\u0334",
        "\u0344",
        "\u0345",
        "ｶ",
        "ﾞ",
        "ﾟ",
        "\u3099",
        "か",
        "カ",
        "漢",
        "\u1100",
        "\u1161",
        "\u11a8",
        "가",
        "①",
        "ﬁ",
        "㍻",
        "Å",
        "\u212b",
        "ǅ",
        "\u0f71",
        "\u0f72",
        "\u0f73",
        "\u0f81",
        "\u0b47",
        "\u0b3e",
        "\u0dd9",
        "\u0dcf",
        "\u00a0",
        "\u3000",
        "０",
        "Ａ",
        "\u200b",
        "\u00ad",
        "\ufe0f",
        "\u2011",
    ]
    draw = random.Random(8)
    for _ in range(20000):
        text = "".join(draw.choice(pool) for _ in range(draw.randint(0, 10)))
        form = matching_form(text)
        assert form.text == reference(text), text
        spans = [form.original_span(index, index + 1) for index in range(len(form.text))]
        assert spans == sorted(spans), text
        assert all(0 <= start < end <= len(text) for start, end in spans), text


def test_plain_characters_are_their_own_form_and_join_nothing() -> None:
    for low, high in PLAIN_RANGES:
        for point in range(low, high + 1):
            char = chr(point)
            assert unicodedata.normalize("NFKC", char) == char, hex(point)
            assert unicodedata.combining(char) == 0, hex(point)
            # Nothing before it composes with it.
            for before in ("a", "ｶ", "\u1100", "か"):
                together = unicodedata.normalize("NFKC", before + char)
                assert together == unicodedata.normalize("NFKC", before) + char, hex(point)


def test_folded_characters_become_one_ascii_character() -> None:
    for low, high in FOLDED_RANGES:
        for point in range(low, high + 1):
            char = chr(point)
            # U+1680 is the one space separator NFKC leaves alone.
            form = " " if char == "\u1680" else unicodedata.normalize("NFKC", char)
            assert len(form) == 1 and form.isascii(), hex(point)
            assert matching_form(char).text == form


def test_the_ignorables_are_invisible_format_or_filler_characters() -> None:
    for low, high in IGNORABLE_RANGES:
        for point in range(low, min(high, low + 64) + 1):
            category = unicodedata.category(chr(point))
            assert category in {"Cf", "Mn", "Lo", "Cn"}, (hex(point), category)


def in_ranges(point: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= point <= high for low, high in ranges)


def test_every_format_character_is_ignorable_and_every_space_separator_folds() -> None:
    for point in range(0x110000):
        category = unicodedata.category(chr(point))
        if category == "Cf":
            assert in_ranges(point, IGNORABLE_RANGES), hex(point)
        elif category == "Zs" and point != 0x20:
            assert in_ranges(point, SPACE_RANGES), hex(point)
    assert all(
        unicodedata.category(chr(point)) == "Zs"
        for low, high in SPACE_RANGES
        for point in range(low, high + 1)
    )


def test_the_joined_form_drops_every_space_character_but_u0020() -> None:
    spaces = "".join(chr(point) for low, high in SPACE_RANGES for point in range(low, high + 1))
    text = f"taro{spaces}yamada @ex\u200bample.com"
    assert matching_form(text).text == "taro" + " " * len(spaces) + "yamada @example.com"
    joined = joined_form(text)
    assert joined is not None
    assert joined.text == "taroyamada @example.com"
    assert text[slice(*joined.original_span(0, 10))] == f"taro{spaces}yamada"
    assert joined_form("no space character here") is None
    assert joined_form("全角　スペース") is not None


def test_the_joined_form_is_the_spaced_form_less_its_spaces() -> None:
    pool = ["a", " ", "\u00a0", "\u3000", "\u1680", "\u202f", "\u200b", "ｶ", "ﾞ", "e", "\u0301"]
    draw = random.Random(37)
    for _ in range(5000):
        text = "".join(draw.choice(pool) for _ in range(draw.randint(0, 10)))
        joined = joined_form(text)
        dropped = "".join(char for char in text if not in_ranges(ord(char), SPACE_RANGES))
        expected = matching_form(dropped).text
        assert (joined.text if joined else matching_form(text).text) == expected, text
        if joined is not None:
            spans = [joined.original_span(i, i + 1) for i in range(len(joined.text))]
            assert spans == sorted(spans), text
