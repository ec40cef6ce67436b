"""benchmark compare's identity (BENCHMARK.md §2.5): the matching form of a term, the
batch-local alias map, association keys and the variation judgements."""

from __future__ import annotations

import itertools
import random

import pytest

from taguru_ray.benchmark.compare.identity import (
    AliasLine,
    AliasMap,
    Matching,
    Observation,
    Presence,
    RawAssociation,
    attribution_varies,
    jaccard,
    keyed_associations,
    normalize_term,
    polarity_varies,
    resolve_chains,
    weight_varies,
)

ALL_MATCHINGS = [
    Matching(case_fold=fold, unicode_normalization=norm)
    for fold, norm in itertools.product((True, False), ("NFKC", "none"))
]


def test_surrounding_space_is_trimmed_and_case_folded() -> None:
    assert normalize_term("  Apple  ") == "apple"


def test_full_width_letters_fold() -> None:
    assert normalize_term("Ａｐｐｌｅ") == "apple"


def test_katakana_is_not_folded_to_hiragana() -> None:
    assert normalize_term("リンゴ") == "リンゴ"
    assert normalize_term("リンゴ") != normalize_term("りんご")


def test_diaeresis_becomes_a_lone_combining_mark() -> None:
    assert normalize_term("\u00a8") == "\u0308"


def test_lowercase_is_per_character_not_final_sigma_aware() -> None:
    assert normalize_term("ΟΔΟΣ") == "οδοσ"


def test_trim_is_rusts_white_space_not_pythons_isspace() -> None:
    assert normalize_term("\u001cx\u001c") == "\u001cx\u001c"
    assert normalize_term("\u3000x\u2029") == "x"


def test_with_every_flag_off_it_only_trims() -> None:
    plain = Matching(case_fold=False, unicode_normalization="none")
    assert normalize_term("  Ａｐｐｌｅ ", plain) == "Ａｐｐｌｅ"


SPECIAL = (
    "\u030c\U0001f110\u00a8\u00af\u00b4\u00b8\u02d8\u02d9\u02da\u02db\u02dc\u02dd"
    "AaΣς İ\u3000 ｱﾞＡ\u2126ß\u1e9e\u0345"
)


@pytest.mark.parametrize("matching", ALL_MATCHINGS)
def test_normalize_term_is_idempotent(matching: Matching) -> None:
    rng = random.Random(1234)
    samples = [char for char in SPECIAL]
    samples += ["".join(rng.choice(SPECIAL) for _ in range(rng.randint(1, 6))) for _ in range(500)]
    for raw in samples:
        once = normalize_term(raw, matching)
        assert normalize_term(once, matching) == once, (matching, raw)


def test_a_chain_resolves_regardless_of_line_order() -> None:
    assert resolve_chains({"b": "c", "a": "b"}) == {"a": "c", "b": "c"}


def test_a_cycle_resolves_to_its_smallest_member() -> None:
    assert resolve_chains({"zeta": "alpha", "alpha": "zeta"}) == {"alpha": "alpha", "zeta": "alpha"}


def test_a_chain_into_a_cycle_resolves_to_the_cycles_smallest_member() -> None:
    assert resolve_chains({"x": "a", "a": "b", "b": "a"}) == {"x": "a", "a": "a", "b": "a"}


def _map(*lines: tuple[str, str, str], matching: Matching | None = None) -> AliasMap:
    return AliasMap.from_lines([AliasLine(*line) for line in lines], matching or Matching())


def test_a_self_mapping_alias_is_no_entry() -> None:
    aliases = _map(("Apple", "apple", "concept"), ("apple", "fruit", "concept"))
    assert aliases.resolve("concept", "apple") == "fruit"


def test_the_first_declaration_of_an_alias_wins() -> None:
    aliases = _map(("bob", "robert", "concept"), ("Bob", "bobby", "concept"))
    assert aliases.resolve("concept", "bob") == "robert"


def test_concept_and_label_namespaces_are_independent() -> None:
    aliases = _map(("knows", "meets", "label"))
    assert aliases.resolve("label", "knows") == "meets"
    assert aliases.resolve("concept", "knows") == "knows"


def test_an_unregistered_spelling_resolves_to_itself() -> None:
    assert _map().resolve("concept", "anything") == "anything"


def test_expansion_none_is_the_identity_map() -> None:
    aliases = _map(("a", "b", "concept"), matching=Matching(alias_expansion="none"))
    assert aliases.resolve("concept", "a") == "a"


def test_jaccard() -> None:
    assert jaccard({1, 2}, {1, 2}) == 1.0
    assert jaccard({1}, {2}) == 0.0
    assert jaccard({1, 2}, {2, 3}) == 1 / 3
    assert jaccard(set(), set()) is None


def _presence(*runs: tuple[int, list[float], set[int | None]]) -> Presence:
    presence = Presence()
    for run, weights, paragraphs in runs:
        presence.add(run, Observation(list(weights), set(paragraphs), set()))
    return presence


def test_zero_is_a_polarity_of_its_own() -> None:
    assert polarity_varies(_presence((1, [0.0], {None}), (2, [0.5], {None})))
    assert not polarity_varies(_presence((1, [0.2], {None}), (2, [0.5], {None})))


def test_a_weight_spread_equal_to_the_tolerance_is_no_variation() -> None:
    presence = _presence((1, [0.5], {None}), (2, [0.75], {None}))
    assert not weight_varies(presence, 0.25)
    assert weight_varies(presence, 0.0)
    assert not weight_varies(_presence((1, [1.0], {None}), (2, [1.0], {None})), 0.0)


def test_attribution_varies_when_the_paragraph_sets_differ() -> None:
    assert attribution_varies(_presence((1, [1.0], {None}), (2, [1.0], {5})))
    assert not attribution_varies(_presence((1, [1.0], {None}), (2, [1.0], {None})))


def test_lines_that_fold_together_merge_into_one_key() -> None:
    rows = [
        RawAssociation("Alice", "Knows", "Bob", 1.0, 0),
        RawAssociation("alice", "knows", "bob", -1.0, 1),
    ]
    keyed = keyed_associations("doc", rows, AliasMap())
    assert len(keyed) == 1
    ((key, seen),) = keyed.items()
    assert tuple(key) == ("doc", "alice", "knows", "bob")
    assert seen.weights == [1.0, -1.0]
    assert seen.paragraphs == {0, 1}
    assert seen.spellings == {("Alice", "Knows", "Bob"), ("alice", "knows", "bob")}
    presence = Presence()
    presence.add(3, seen)
    presence.add(1, Observation([1.0], {0}, set()))
    assert presence.runs == [1, 3]
    assert polarity_varies(presence)


def test_keys_resolve_subject_and_object_through_concept_aliases() -> None:
    aliases = _map(("Bobby", "Bob", "concept"), ("befriends", "knows", "label"))
    keyed = keyed_associations(
        "doc", [RawAssociation("Bobby", "befriends", "bobby", 1.0, None)], aliases
    )
    assert [tuple(k) for k in keyed] == [("doc", "bob", "knows", "bob")]
