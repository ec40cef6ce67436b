"""normalize_entry (EVALUATE.md §2.1), the BM25 term function (§2.4) and the paragraph
split it indexes, with literals."""

from __future__ import annotations

from taguru_ray.context.normalize import normalize_entry
from taguru_ray.context.terms import passage_terms, query_terms
from taguru_ray.text.paragraphs import split_paragraphs


def test_normalize_folds_case_width_and_katakana() -> None:
    assert normalize_entry("ＡＢＣ　Ｄｅｆ") == "abc def"
    assert normalize_entry("カタカナ") == "かたかな"
    assert normalize_entry("ｶﾀｶﾅ") == "かたかな"  # half-width kana: NFKC, then the kana fold


def test_normalize_keeps_long_vowel_mark_and_does_not_trim() -> None:
    assert normalize_entry("ラーメン ") == "らーめん "
    assert normalize_entry("ヷ") == "ヷ"  # U+30F7..U+30FA stay katakana


def test_normalize_lowercases_per_character_without_final_sigma() -> None:
    assert normalize_entry("ΟΔΟΣ") == "οδοσ"  # str.lower() would end in final sigma ς


def test_ascii_runs_are_words() -> None:
    assert passage_terms("Hello, world 42!") == ["hello", "world", "42"]


def test_other_alphanumeric_runs_give_bigrams_and_lone_characters() -> None:
    assert passage_terms("青嶺酒造。町") == ["青嶺", "嶺酒", "酒造", "町"]


def test_a_script_switch_breaks_the_run() -> None:
    assert passage_terms("第10篇") == ["第", "10", "篇"]


def test_combining_vowel_signs_stay_in_the_run() -> None:
    # U+0E35 (Mn, Other_Alphabetic) is alphanumeric for Rust; str.isalnum says no.
    assert passage_terms("ดี") == ["ดี"]


def test_camel_case_runs_add_piece_terms() -> None:
    assert passage_terms("AppState") == ["appstate", "app", "state"]
    assert passage_terms("HTTPServer") == ["httpserver", "http", "server"]
    assert passage_terms("U64Max") == ["u64max", "u64", "max"]
    assert passage_terms("ＡpplePie") == ["applepie", "apple", "pie"]
    assert passage_terms("plain HTTP") == ["plain", "http"]  # no boundary, no pieces


def test_query_terms_are_deduplicated_in_first_occurrence_order() -> None:
    assert query_terms("apple Apple APPLE pie") == ["apple", "pie"]


def test_paragraphs_split_on_blank_lines_including_ideographic_space() -> None:
    text = "one\r\nline two\n\u3000\n\nthree\n\u001c\nfour"
    assert [p.text for p in split_paragraphs(text)] == ["one\r\nline two", "three\n\u001c\nfour"]
