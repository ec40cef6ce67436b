"""The simulator's rule-based extractor: a pure function of the messages."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.pipeline.carryover import glean_ask
from taguru_ray.pipeline.overview import (
    OVERVIEW_SYSTEM,
    Overview,
    opening_units,
    overview_user,
    parse_overview,
)
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.prompt import system_prompt, user_turn
from taguru_ray.pipeline.steer import Steering
from taguru_ray.pipeline.structure import units
from taguru_ray.simulate import EMPTY_ANSWER, answer, blocks_of, estimate_tokens, names_in
from taguru_ray.simulate.answers import (
    JAPANESE_LABELS,
    LATIN_LABELS,
    is_overview_ask,
    overview_for_turn,
)
from taguru_ray.text.paragraphs import split_paragraphs

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


STATUTE = """個人情報保護法

（目的）
第一条　この法律は、個人情報保護委員会が定める基準により、事業者の責務を明らかにする。
事業者は記録を保存する。

第二条　この法律において「個人情報」とは、生存する個人に関する情報をいう。
２　前条の規定は、行政機関には適用しない。"""


def overview_ask(turn: str) -> str:
    return answer(
        [{"role": "system", "content": OVERVIEW_SYSTEM}, {"role": "user", "content": turn}]
    )


def test_the_overview_ask_is_told_apart_by_its_system_turn() -> None:
    assert is_overview_ask(OVERVIEW_SYSTEM)
    assert not is_overview_ask(system_prompt(Steering()))
    assert not is_overview_ask(system_prompt(Steering(questions=2)))
    turn = "Segment 'a.md'.\nUnits opening in this part:\n- unit 1: Ray\n\n[0] Ray uses Dask."
    assert "associations" in json.loads(answer([{"role": "user", "content": turn}]))
    assert set(json.loads(overview_ask(turn))) == {"units", "cast"}


def test_overview_of_a_statute_chunk_summarises_each_listed_unit_and_names_the_cast() -> None:
    paragraphs = split_paragraphs(STATUTE)
    found = units(paragraphs)
    [chunk] = plan_chunks(paragraphs, 100_000)
    opening = opening_units(found, chunk)
    assert [u.heading for u in opening] == ["第一条（目的）", "第二条"]
    turn = overview_user("laws/pi.txt", chunk, opening)
    text = overview_ask(turn)
    assert text == overview_for_turn(turn)  # a pure function of the user turn
    parsed = parse_overview(text, opening)
    assert isinstance(parsed, Overview)
    first = "この法律は、個人情報保護委員会が定める基準により、事業者の責務を明らかにする。"
    second = "この法律において「個人情報」とは、生存する個人に関する情報をいう。"
    assert parsed.units == ((opening[0].unit, first), (opening[1].unit, second))
    names = [name for name, _ in parsed.cast]
    assert 0 < len(names) <= 12 and len(set(names)) == len(names)
    assert "個人情報保護委員会" in names
    assert all(name in chunk.text for name in names)
    assert all(gloss.startswith("named in paragraph ") for _, gloss in parsed.cast)
    assert dict(parsed.cast)["個人情報保護委員会"] == "named in paragraph 1"


def test_markdown_units_take_the_first_sentence_after_their_heading() -> None:
    turn = (
        "Segment 'docs/a.md', part 2 of 3.\nUnits opening in this part:\n"
        "- unit 4: Ray Data\n- unit 5: Setup\n\n"
        "[4] # Ray Data\nThe Object Storage layer uses S3. It is fast.\n\n"
        "[5] ## Setup\n\n[6] Workers read files with fsspec and k8s"
    )
    out = json.loads(overview_ask(turn))
    assert out["units"] == [
        {"unit": 4, "summary": "The Object Storage layer uses S3."},
        {"unit": 5, "summary": "Workers read files with fsspec and k8s"},
    ]


def test_overview_of_a_chunk_where_no_unit_opens_lists_only_the_cast() -> None:
    paragraphs = split_paragraphs("the middle of a long article.\n\nRay reads from Object Storage.")
    [chunk] = plan_chunks(paragraphs, 100_000)
    opening = opening_units(units(paragraphs), chunk)
    turn = overview_user("docs/a.md", chunk, opening)
    assert opening == [] and "No unit opens in this part" in turn
    out = json.loads(overview_ask(turn))
    assert out["units"] == []
    parsed = parse_overview(overview_ask(turn), opening)
    assert isinstance(parsed, Overview)
    assert parsed.units == ()
    assert [name for name, _ in parsed.cast] == ["Ray", "Object Storage"]


def test_overview_cast_is_capped_at_twelve() -> None:
    names = ", ".join(f"Name{i}x" for i in range(20))
    turn = f"Segment 'a'.\nNo unit opens in this part: list no units, only the cast.\n\n[0] {names}"
    assert len(json.loads(overview_ask(turn))["cast"]) == 12


CONTEXT_BLOCK = "\n".join(
    [
        "Chunk context (from this segment, to read part 2 of 3 by; "
        "extract facts only from the numbered paragraphs below):",
        "Position: Handbook › Storage",
        "References: § 2 Kafka — Kafka Streams feed Zookeeper.",
        "Cast: Kafka — a broker | Zookeeper — a coordinator",
        "Known: Kafka — uses → Zookeeper",
        "Before: Intro — Redis Cluster backs Postgres Mirror.",
        "Preceding text: [7] Flink Jobs read Kafka Topics.",
    ]
)


def test_an_extraction_turn_answers_the_same_with_or_without_a_context_block() -> None:
    chunk = "[8] Ray Data uses Object Storage and S3.\n\n[9] Workers run on k8s with Dask."
    plain = user_turn("docs/a.md", 1, 3, chunk)
    with_block = user_turn("docs/a.md", 1, 3, chunk, block=CONTEXT_BLOCK)
    assert with_block.startswith("Segment 'docs/a.md', part 2 of 3:\nChunk context (")
    assert blocks_of(with_block) == blocks_of(plain)
    assert [b.paragraph for b in blocks_of(with_block)] == [8, 9]
    for system in (system_prompt(Steering()), system_prompt(Steering(questions=2))):
        asks = [{"role": "system", "content": system}]
        first = answer([*asks, {"role": "user", "content": with_block}])
        assert first == answer([*asks, {"role": "user", "content": plain}])
        for absent in ("Kafka", "Zookeeper", "Redis", "Flink", "Handbook"):
            assert absent not in first
        gleaning = [
            {"role": "assistant", "content": first},
            {"role": "user", "content": glean_ask()},
        ]
        glean = answer([*asks, {"role": "user", "content": with_block}, *gleaning])
        assert glean == answer([*asks, {"role": "user", "content": plain}, *gleaning])
        assert json.loads(glean)["associations"]  # the gleaning ask still gets its own answer
        assert glean != first
    questions = json.loads(
        answer(
            [
                {"role": "system", "content": system_prompt(Steering(questions=2))},
                {"role": "user", "content": with_block},
            ]
        )
    )["questions"]
    assert {q["paragraph"] for q in questions} == {8, 9}
