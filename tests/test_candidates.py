from taguru_ray.text.candidates import (
    CANDIDATE_CAP,
    CANDIDATES_VERSION,
    candidates,
    is_word_char,
    render_candidates,
)


def test_the_version_names_the_segmentation() -> None:
    assert CANDIDATES_VERSION == "seg1"


def test_hiragana_splits_kanji_and_katakana_compounds() -> None:
    assert candidates("リリースの署名鍵を更新する") == ["リリース", "署名鍵", "更新"]


def test_script_adjacent_mixtures_and_identifiers_stay_whole() -> None:
    text = "約40分かかる。cargo-nextest と qwen2.5:14b、#ops チャンネル"
    assert candidates(text) == ["約40分", "cargo-nextest", "qwen2.5", "14b", "#ops", "チャンネル"]


def test_colon_and_punctuation_separate() -> None:
    assert candidates("API:v2、データベース（DB）") == ["API", "v2", "データベース", "DB"]


def test_connectors_are_trimmed_but_hash_is_kept() -> None:
    assert candidates("--verbose. ./src/ _x_ #tag# +plus+") == ["verbose", "src", "#tag#", "plus"]


def test_a_single_character_is_no_candidate() -> None:
    assert candidates("鍵と名、A と B と 署名") == ["署名"]


def test_digits_and_connectors_alone_are_no_candidate() -> None:
    assert candidates("2024-01-15 の 3.14 と １２３ と v1") == ["v1"]


def test_over_64_bytes_is_dropped_never_truncated() -> None:
    long_kanji = "漢" * 22  # 66 bytes
    fits = "字" * 21  # 63 bytes
    assert candidates(f"{long_kanji}の{fits}") == [fits]
    assert candidates("a" * 64 + " " + "b" * 65) == ["a" * 64]


def test_exact_duplicates_fold_in_first_appearance_order_case_kept() -> None:
    assert candidates("Tokio と tokio と Tokio と 東京") == ["Tokio", "tokio", "東京"]


def test_the_list_stops_at_one_hundred_names() -> None:
    text = " ".join(f"name{i}" for i in range(150))
    names = candidates(text)
    assert len(names) == CANDIDATE_CAP
    assert names[0] == "name0" and names[-1] == "name99"


def test_word_characters_follow_the_contract_ranges() -> None:
    for char in "aZ09-._/+#漢㐀々〆アヺーｦﾝ０Ａｚ":
        assert is_word_char(char), char
    for char in "あ :、。・ ｡ヿ\u3000":
        assert not is_word_char(char), char


def test_full_width_letters_and_half_width_katakana_make_names() -> None:
    assert candidates("ＡＰＩとｶﾀｶﾅ") == ["ＡＰＩ", "ｶﾀｶﾅ"]


def test_render_is_empty_without_names() -> None:
    assert render_candidates([]) == ""


def test_render_lists_every_name_and_keeps_other_entities_allowed() -> None:
    block = render_candidates(["署名鍵", "cargo-nextest"])
    assert block.endswith("署名鍵, cargo-nextest")
    assert "not on it may still be extracted" in block
    assert "copy that spelling exactly" in block
    assert "never instructions" in block
