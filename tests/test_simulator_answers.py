"""The simulator's rule-based extractor: a pure function of the messages."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.simulate import EMPTY_ANSWER, answer, blocks_of, estimate_tokens, names_in
from taguru_ray.simulate.answers import JAPANESE_LABELS, LATIN_LABELS

ENGLISH = """Segment 'docs/a.md', part 2 of 3:

[4] # Ray Data
The Object Storage layer uses cargo-nextest and S3.

[5] Workers read files with fsspec and k8s."""

JAPANESE = """Segment 'docs/ja.md':

[0] 分散処理基盤はオブジェクトストレージとデータ転送を使う。

[1] クラスタ管理"""


def ask(user_turn: str) -> dict[str, Any]:
    return json.loads(answer([{"role": "user", "content": user_turn}]))


def block_text(user_turn: str, paragraph: int) -> str:
    return "\n".join(b.text for b in blocks_of(user_turn) if b.paragraph == paragraph)


def test_blocks_skip_the_preamble_and_keep_paragraph_numbers() -> None:
    blocks = blocks_of(ENGLISH)
    assert [b.paragraph for b in blocks] == [4, 5]
    assert blocks[0].text == "# Ray Data\nThe Object Storage layer uses cargo-nextest and S3."


def test_unlabelled_context_block_is_not_read() -> None:
    turn = "Segment 'a.md':\nKnown: Kafka, Zookeeper\n\n[0] Ray uses Dask."
    assert names_in(block_text(turn, 0)) == ["Ray", "Dask"]
    assert "Kafka" not in json.dumps(ask(turn))


def test_english_names_in_order_of_first_appearance() -> None:
    text = "# Ray Data\nThe Object Storage layer uses cargo-nextest, S3 and S3 again."
    assert names_in(text) == ["Ray Data", "Object Storage", "cargo-nextest", "S3"]


def test_heading_markers_single_characters_and_plain_words_are_not_names() -> None:
    assert names_in("## A\nI think x is fine, e.g. here.") == []


def test_identifiers_count_as_names() -> None:
    assert names_in("use fsspec with k8s, max_conn and iPhone") == ["k8s", "max_conn", "iPhone"]


def test_japanese_katakana_and_kanji_runs_are_names() -> None:
    text = "分散処理基盤はオブジェクトストレージとデータ転送を使う。日"
    assert names_in(text) == ["分散処理基盤", "オブジェクトストレージ", "データ", "転送"]


def test_english_chain_cites_the_block_paragraph() -> None:
    out = ask(ENGLISH)
    pairs = [(a["subject"], a["object"], a["paragraph"]) for a in out["associations"]]
    assert pairs == [
        ("Ray Data", "Object Storage", 4),
        ("Object Storage", "cargo-nextest", 4),
        ("cargo-nextest", "S3", 4),
        ("Workers", "k8s", 5),
    ]
    assert all(a["label"] in LATIN_LABELS and a["weight"] == 1.0 for a in out["associations"])
    assert out["aliases"] == [] and out["questions"] == []


def test_japanese_chain_uses_japanese_labels() -> None:
    out = ask(JAPANESE)
    assert [(a["subject"], a["object"]) for a in out["associations"]] == [
        ("分散処理基盤", "オブジェクトストレージ"),
        ("オブジェクトストレージ", "データ"),
        ("データ", "転送"),
        ("クラスタ", "管理"),
    ]
    assert all(a["label"] in JAPANESE_LABELS for a in out["associations"])


def test_every_name_occurs_verbatim_in_its_block() -> None:
    for turn in (ENGLISH, JAPANESE):
        for a in ask(turn)["associations"]:
            text = block_text(turn, a["paragraph"])
            assert a["subject"] in text and a["object"] in text


def test_at_most_four_associations_per_block() -> None:
    out = ask("Segment 'a':\n\n[0] Alpha Beta, Gamma, Delta, Epsilon, Zeta, Eta.")
    assert len(out["associations"]) == 4


def test_a_paragraph_cut_into_pieces_repeats_no_triple() -> None:
    out = ask("Segment 'a':\n\n[3] Ray uses Dask.\n\n[3] Ray uses Dask.")
    assert len(out["associations"]) == 1


def test_abbreviation_becomes_an_alias_of_the_name_it_follows() -> None:
    out = ask("Segment 'a':\n\n[0] Simple Storage Service (S3) backs Ray.")
    assert [(a["subject"], a["object"]) for a in out["associations"]] == [
        ("Simple Storage Service", "Ray")
    ]
    assert out["aliases"] == [
        {"alias": "S3", "canonical": "Simple Storage Service", "kind": "concept"}
    ]


def test_japanese_full_width_parentheses_give_an_alias() -> None:
    out = ask("Segment 'a':\n\n[0] 分散処理基盤（DPF）は転送を使う。")
    assert out["aliases"] == [{"alias": "DPF", "canonical": "分散処理基盤", "kind": "concept"}]


def test_no_alias_when_the_abbreviation_is_itself_used() -> None:
    out = ask("Segment 'a':\n\n[0] Simple Storage Service (S3) backs Ray.\n\n[1] S3 serves Dask.")
    assert ("S3", "Dask") in [(a["subject"], a["object"]) for a in out["associations"]]
    assert out["aliases"] == []


def test_no_alias_when_the_name_is_in_no_association() -> None:
    assert ask("Segment 'a':\n\n[0] only Simple Storage Service (S3) here.")["aliases"] == []


def test_same_messages_give_identical_bytes() -> None:
    messages = [{"role": "user", "content": ENGLISH}]
    assert answer(messages) == answer([dict(m) for m in messages])


def test_corrective_conversation_answers_from_the_first_user_turn() -> None:
    corrective = [
        {"role": "system", "content": "You extract."},
        {"role": "user", "content": JAPANESE},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": "associations[0]: fix Kafka Zookeeper"},
    ]
    assert answer(corrective) == answer([{"role": "user", "content": JAPANESE}])


def test_chunk_without_names_answers_empty_arrays() -> None:
    assert (
        answer([{"role": "user", "content": "Segment 'a':\n\n[0] nothing here."}]) == EMPTY_ANSWER
    )
    assert answer([{"role": "system", "content": "no user turn"}]) == EMPTY_ANSWER


def test_answer_is_compact_json() -> None:
    text = answer([{"role": "user", "content": JAPANESE}])
    assert ": " not in text and ", " not in text and "\\u" not in text


def test_content_parts_are_read_like_a_string() -> None:
    parts = [{"type": "text", "text": ENGLISH}]
    assert answer([{"role": "user", "content": parts}]) == answer(
        [{"role": "user", "content": ENGLISH}]
    )


def test_token_estimate_is_utf8_bytes_over_four_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(None) == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("日本") == 2  # 6 bytes


def test_contract_faults_break_exactly_one_rule_each() -> None:
    import json

    from taguru_ray.simulate.faults import completion_for

    answer = json.dumps(
        {
            "associations": [
                {
                    "subject": "Ray",
                    "label": "uses",
                    "object": "Redis",
                    "weight": 1.0,
                    "paragraph": 0,
                }
            ],
            "aliases": [],
            "questions": [],
        }
    )

    def shape(kind: str) -> dict:
        content = completion_for(kind, answer, "Ray uses Redis").content  # type: ignore[arg-type]
        assert content is not None
        return json.loads(content)

    assert shape("bad_weight")["associations"][0]["weight"] == "strong"
    assert shape("empty_field")["associations"][1]["object"] == ""
    assert shape("self_alias")["aliases"] == [
        {"alias": "Ray", "canonical": "Ray", "kind": "concept"}
    ]
    assert shape("shadow_alias")["aliases"][0]["alias"] == "Redis"
    conflict = shape("conflict_alias")["aliases"]
    assert conflict[0]["alias"] == conflict[1]["alias"]
    assert conflict[0]["canonical"] != conflict[1]["canonical"]
    assert shape("dangling_alias")["aliases"][0]["canonical"] == "存在しない"
    empty = json.dumps({"associations": [], "aliases": [], "questions": []})
    assert completion_for("shadow_alias", empty, "").content == empty
