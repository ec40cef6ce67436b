"""The occurrence check (taguru ADR 0013 section 4 + taguru ADR 0036): which subject/object
names survive."""

from __future__ import annotations

import random
import sys
import unicodedata

import pytest

from taguru_ray.text.char_classes import is_alphabetic, is_alphanumeric
from taguru_ray.text.occurrence import Haystack, fold, name_occurs, occurrence_reason
from tests.anchor import load_fixture, requires_anchor


def occurs(name: str, text: str, allowlist: frozenset[str] = frozenset()) -> bool:
    return name_occurs(name, Haystack(text), allowlist)


class CountingHaystack(Haystack):
    """A haystack that counts its containment probes, for the cost guard."""

    __slots__ = ("probes",)

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.probes = 0

    def contains(self, folded: str) -> bool:
        self.probes += 1
        return super().contains(folded)


# --- the reference's removed/ fixtures -------------------------------------------------------


@requires_anchor
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("staging 環境", True),
        ("PostgreSQL 16", True),
        ("プール最大接続数", True),  # the segment says プールの最大接続数: covered, not a substring
        ("100", True),
        ("MongoDB", False),
    ],
)
def test_fabricated_object_fixture(name: str, expected: bool) -> None:
    fixture = load_fixture("removed", "association_fabricated_object")
    assert occurs(name, fixture["document"]) is expected


@requires_anchor
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("会計年度任用職員", True),
        ("一会計年度", True),
        ("adaptive continuous router", True),
        ("number of exits", True),
        ("exit selection", True),  # `exit` a whole word, `select` a stem of `selects`
        ("a permanent position", False),
        ("Kubernetes cluster autoscaler", False),
    ],
)
def test_fabricated_sparse_object_fixture(name: str, expected: bool) -> None:
    fixture = load_fixture("removed", "association_fabricated_sparse_object")
    # The haystack is the labelled chunk, `[0] ` and all.
    assert occurs(name, fixture["segment"]) is expected


@requires_anchor
def test_fixture_reasons_match_the_removal_records() -> None:
    sparse = load_fixture("removed", "association_fabricated_sparse_object")
    assert sparse["removed"] == [
        "associations[0]: " + occurrence_reason([("object", "a permanent position")]),
        "associations[4]: " + occurrence_reason([("object", "Kubernetes cluster autoscaler")]),
    ]
    older = load_fixture("removed", "association_fabricated_object")
    # The older fixture predates taguru ADR 0040's "segment" wording.
    assert [line.replace("document text", "segment text") for line in older["removed"]] == [
        "associations[2]: " + occurrence_reason([("object", "MongoDB")])
    ]


# --- the reason -----------------------------------------------------------------------------


def test_reason_names_both_fields_when_both_fail() -> None:
    assert occurrence_reason([("subject", "Redis"), ("object", "MongoDB")]) == (
        'subject "Redis" does not appear in the segment text, '
        'object "MongoDB" does not appear in the segment text'
    )


def test_reason_quotes_the_way_issues_do() -> None:
    assert occurrence_reason([("object", 'say "hi"\n')]) == (
        'object "say \\"hi\\"\\n" does not appear in the segment text'
    )
    long_name = "x" * 70
    assert occurrence_reason([("object", long_name)]).startswith(f'object "{"x" * 64}"… does')


# --- folding --------------------------------------------------------------------------------


def test_fold_drops_unicode_white_space_and_lowercases() -> None:
    assert fold("Postgre SQL\u3000１６\u00a0\t\nX") == "postgresql１６x"


def test_fold_keeps_information_separators_python_calls_space() -> None:
    assert fold("a\u001cb") == "a\u001cb"


def test_fold_lowercases_per_character_like_the_reference() -> None:
    # str.lower() would give a final sigma (οδος); Rust's char::to_lowercase does not.
    assert fold("ΟΔΟΣ") == "οδοσ"
    assert fold("İ") == "i\u0307"


def test_whitespace_and_case_blind() -> None:
    assert occurs("PostgreSQL16", "we run PostgreSQL 16 in staging")
    assert occurs("postgresql 16", "we run PostgreSQL16 in staging")
    assert occurs("CI テストランナー", "CI の テストランナー")


def test_dropped_particle_passes_by_coverage() -> None:
    assert occurs("プール最大接続数", "プールの最大接続数は 100。")


# --- short names ----------------------------------------------------------------------------


def test_short_names_must_appear_verbatim() -> None:
    assert occurs("S3", "objects go to S3 buckets")
    assert not occurs("k6", "load tests run with k 8 and k9")
    assert not occurs("東京阪", "東京と大阪")


def test_four_characters_may_pass_by_coverage() -> None:
    assert occurs("東京大阪", "東京と大阪")


def test_empty_name_is_not_this_checks_finding() -> None:
    assert occurs("", "anything")
    assert occurs(" \u3000", "anything")


# --- sparse-script names (taguru ADR 0036) --------------------------------------------------


ABSTRACT = (
    "Early-exit networks save compute by stopping inference at an intermediate layer. "
    "An adaptive continuous router dynamically selects both the number and identity of exits, "
    "trained end to end with a permutation-invariant loss. On language modeling it matches "
    "the baseline perplexity while cutting latency by a third, and the entire pipeline runs "
    "on one consumer GPU."
)


@pytest.mark.parametrize(
    "name",
    ["a permanent position", "Kubernetes cluster autoscaler", "MongoDB", "a fixed-term role"],
)
def test_latin_name_built_from_unused_words_fails_against_english_text(name: str) -> None:
    # The first three are fully covered by letter pairs of this abstract: taguru ADR 0013's
    # pair rule alone would keep them.
    assert not occurs(name, ABSTRACT)


def test_latin_name_the_text_spells_passes() -> None:
    assert occurs("adaptive continuous router", ABSTRACT)
    assert occurs("permutation-invariant loss", ABSTRACT)
    assert occurs("GPU pipeline", ABSTRACT)  # two whole words, never adjacent in the text
    assert not occurs("consumer GPUs", ABSTRACT)  # `gpu` is a fragment of `gpus`: 8 of 12


def test_word_stems_cover_inflected_forms() -> None:
    text = "The router dynamically selects both the number and identity of exits."
    assert occurs("exit selection", text)
    assert occurs("number of exits", text)
    # `adaptive` is missing: `exit` (4) + `select` (6) cover 10 of 21.
    assert not occurs("adaptive exit selection", text)


def test_whole_word_of_three_letters_counts_two_does_not() -> None:
    assert occurs("std path", "the std crate and a path")  # 3 + 4 of 7
    assert not occurs("st path", "the st crate and a path")  # 4 of 6
    # `std` ends a word of the name but does not start one: a fragment, 4 of 8.
    assert not occurs("ostd path", "the std crate and a path")


def test_stem_of_five_letters_counts_four_does_not() -> None:
    text = "we route packets by table"
    assert occurs("routex table", text)  # `route` (5) + `table` (5) of 11
    assert not occurs("routx table", text)  # `rout` (4) is no stem: 5 of 10


def test_word_boundaries_come_from_the_original_name() -> None:
    text = "import std then the path module"
    assert occurs("std::path", text)  # `std` and `path` are whole words of the name
    assert not occurs("stdpath", text)  # one word: `std` and `path` are fragments of it


def test_run_is_clipped_at_the_first_word_end() -> None:
    # The text holds `abcde`; the name's letters span three two-letter words, and a run
    # may not cross a word end to assemble a stem none of them has.
    assert not occurs("ab cd ef", "xx abcde xx")
    assert occurs("abcdef", "xx abcde xx")  # one word: `abcde` is a stem of it, 5 of 6


def test_runs_with_a_digit_or_symbol_keep_the_two_character_rule() -> None:
    assert occurs("20→100", "latency fell from 20 ms to 100 ms")
    assert occurs("PostgreSQL 16", "PostgreSQL 15 and then 16")


@pytest.mark.parametrize(
    "dense",
    [
        "\u1100",  # hangul jamo
        "漢",
        "あ",
        "ア",
        "ㄅ",  # bopomofo
        "\ua960",  # hangul jamo extended-A
        "가",
        "\ud7b0",  # hangul jamo extended-B
        "豈",  # compatibility ideograph
        "ｱ",  # half-width katakana
        "ｰ",  # half-width prolonged sound mark (Lm)
        "\U00020000",  # extension B
        "〇",  # a letter number: alphabetic to Rust, not to str.isalpha
    ],
)
def test_a_dense_character_keeps_the_pair_rule_for_the_whole_name(dense: str) -> None:
    text = f"ab then {dense} and cd"
    # Pair rule: `ab` + `cd` cover 4 of 5. Word rule: two-letter runs never count.
    assert occurs(f"ab{dense}cd", text)


@pytest.mark.parametrize("symbol", ["・", "、", "「", "\u3099", "-"])
def test_a_non_alphabetic_character_in_the_dense_range_leaves_the_name_sparse(
    symbol: str,
) -> None:
    assert not occurs(f"ab{symbol}cd", f"ab then {symbol} and cd")


def test_thai_vowel_signs_are_letters() -> None:
    # The vowel sign U+0E34 is Other_Alphabetic, a letter to Rust: `กิน` is a letters-only
    # run of three inside a longer word and counts for nothing (`ข้าว` holds the tone mark,
    # a symbol, and counts): 4 of 7. Read as a symbol, `กิน` would count too: 7 of 7.
    assert not occurs("กินข้าว", "กิน และ ข้าว")
    assert occurs("กินข้าว", "ฉันกินข้าวแล้ว")


# --- the allowlist --------------------------------------------------------------------------


def test_allowlisted_spelling_always_passes() -> None:
    text = "An adaptive router selects exits."
    allowlist = frozenset({fold("Kubernetes Cluster Autoscaler")})
    assert occurs("kubernetes  cluster autoscaler", text, allowlist)
    assert not occurs("Kubernetes", text, allowlist)


def test_allowlist_holds_folded_spellings_only() -> None:
    assert not occurs("Kubernetes", "nothing here", frozenset({"Kubernetes"}))
    assert occurs("Kubernetes", "nothing here", frozenset({"kubernetes"}))


# --- cost -----------------------------------------------------------------------------------


def _haystack_text(size: int, seed: int) -> str:
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 8))) for _ in range(300)
    ]
    text = ""
    while len(text) < size:
        text += rng.choice(words) + " "
    return text[:size]


@pytest.mark.parametrize(
    "name",
    [
        "q" * 1024,  # nothing shared beyond one letter
        "".join(random.Random(1).choice("abcdefghij") for _ in range(1024)),  # dense overlap
        _haystack_text(1024, 7),  # long runs that are mostly present
        "".join(random.Random(2).choice("漢字かなカナ") for _ in range(341)),  # dense script
    ],
)
def test_probes_are_linear_in_the_name(name: str) -> None:
    haystack = CountingHaystack(_haystack_text(24 * 1024, 3))
    name_occurs(name, haystack)
    # One substring probe, then at most one failed and one extending probe per character.
    assert haystack.probes <= 2 * len(fold(name)) + 1


def test_verbatim_name_costs_one_probe() -> None:
    haystack = CountingHaystack("the adaptive router")
    assert name_occurs("Adaptive Router", haystack)
    assert haystack.probes == 1


# --- Rust's char classes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("char", "alphabetic", "alphanumeric"),
    [
        ("a", True, True),
        ("7", False, True),
        ("_", False, False),
        ("〇", True, True),  # Nl
        ("Ⅻ", True, True),  # Nl
        ("\u0e34", True, True),  # Thai vowel sign (Mn, Other_Alphabetic)
        ("\u093f", True, True),  # Devanagari vowel sign (Mc, Other_Alphabetic)
        ("Ⓐ", True, True),  # circled letter (So, Other_Alphabetic)
        ("\u0301", False, False),  # combining acute: a mark, not a letter
        ("²", False, True),  # No
        ("½", False, True),
        ("\u3099", False, False),  # combining voiced sound mark
        ("・", False, False),
    ],
)
def test_char_classes_follow_rust(char: str, alphabetic: bool, alphanumeric: bool) -> None:
    assert is_alphabetic(char) is alphabetic
    assert is_alphanumeric(char) is alphanumeric


def test_is_alphabetic_is_the_unicode_property_everywhere() -> None:
    regex = pytest.importorskip("regex")  # an independent \p{Alphabetic}, when installed
    prop = regex.compile(r"\p{Alphabetic}")
    for code_point in range(sys.maxunicode + 1):
        char = chr(code_point)
        if unicodedata.category(char) == "Cn":
            continue  # unassigned in this Python's Unicode database
        assert is_alphabetic(char) is bool(prop.match(char)), f"U+{code_point:04X}"
