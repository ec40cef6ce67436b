from taguru_ray.contract.items import Association
from taguru_ray.pipeline.coverage import (
    Gap,
    quote,
    sentences,
    stderr_line,
    uncovered,
    uncovered_records,
)
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.text.candidates import candidates
from taguru_ray.text.occurrence import Haystack, name_occurs
from taguru_ray.text.paragraphs import Paragraph, split_paragraphs


def test_sentences_split_at_terminators_and_line_breaks() -> None:
    text = "東京は首都です。大阪は都市です！本当？\nYes! Really?  next line\r\nlast"
    assert sentences(text) == [
        "東京は首都です",
        "大阪は都市です",
        "本当",
        "Yes",
        "Really",
        "next line",
        "last",
    ]


def test_an_ascii_full_stop_is_not_a_boundary() -> None:
    assert sentences("See file.rs and qwen2.5. Then stop") == ["See file.rs and qwen2.5. Then stop"]


def test_sentences_are_trimmed_of_white_space_and_never_empty() -> None:
    assert sentences("\u3000 前置き 。。\n\n  ") == ["前置き"]


def test_a_sentence_with_one_name_owes_nothing() -> None:
    paragraphs = split_paragraphs("署名鍵があります。")
    assert uncovered(paragraphs, []) == []


def test_a_sentence_with_two_names_and_no_triple_is_a_gap() -> None:
    paragraphs = split_paragraphs("序文\n\nPostgreSQLはプールの最大接続数を設定する。別の文")
    assert uncovered(paragraphs, []) == [
        Gap(1, "PostgreSQLはプールの最大接続数を設定する"),
    ]


def test_two_of_three_parts_landing_cover_the_sentence() -> None:
    paragraphs = split_paragraphs("PostgreSQLはプールの最大接続数を設定する。")
    subject_object = Association("PostgreSQL", "has", "プール最大接続数")
    label_object = Association("MySQL", "設定", "最大接続数")
    assert uncovered(paragraphs, [subject_object]) == []
    assert uncovered(paragraphs, [label_object]) == []


def test_one_part_landing_leaves_the_gap() -> None:
    paragraphs = split_paragraphs("PostgreSQLはプールの最大接続数を設定する。")
    only_subject = Association("PostgreSQL", "uses", "MongoDB")
    assert uncovered(paragraphs, [only_subject]) == [
        Gap(0, "PostgreSQLはプールの最大接続数を設定する")
    ]


def test_parts_are_judged_whitespace_and_case_blind() -> None:
    paragraphs = split_paragraphs("We run PostgreSQL 16 with Tokio.")
    assert uncovered(paragraphs, [Association("postgresql16", "runs with", "tokio")]) == []


def test_a_sentence_past_the_candidate_cap_still_owes_coverage() -> None:
    filler = " ".join(f"word{i}" for i in range(120))
    paragraphs = split_paragraphs(f"{filler}\n\nAlpha depends on Beta")
    gaps = uncovered(paragraphs, [])
    assert Gap(1, "Alpha depends on Beta") in gaps


def test_gaps_come_in_paragraph_and_sentence_order() -> None:
    paragraphs = split_paragraphs("東京と大阪。京都と奈良。\n\n札幌と函館")
    assert [(g.paragraph, g.sentence) for g in uncovered(paragraphs, [])] == [
        (0, "東京と大阪"),
        (0, "京都と奈良"),
        (1, "札幌と函館"),
    ]


def test_the_stderr_line_names_source_and_paragraph() -> None:
    line = stderr_line("docs/a.md", Gap(3, "東京と大阪"))
    assert line == "taguru: extract: docs/a.md: uncovered: [paragraph 3] 東京と大阪"


def test_the_quote_is_capped_at_120_bytes_at_a_character_boundary() -> None:
    short = "a" * 120
    assert quote(short) == short
    long = "漢" * 41  # 123 bytes; 40 characters are 120 bytes
    assert quote(long) == "漢" * 40 + "…"
    assert quote("a" + "漢" * 40) == "a" + "漢" * 39 + "…"


def test_uncovered_records_carry_the_sentence_paragraph_and_owning_chunk() -> None:
    paragraphs = split_paragraphs("東京と大阪。\n\n京都と奈良")
    chunks = plan_chunks(paragraphs, 24576)
    gaps = uncovered(paragraphs, [])
    records = uncovered_records(gaps, paragraphs, chunks)
    assert records[1] == {
        "type": "uncovered",
        "paragraph": 1,
        "sentence": "京都と奈良",
        "text": "京都と奈良",
        "chunk_index": 0,
        "chunk_sha256": chunks[0].sha256,
    }


def naive_uncovered(paragraphs: list[Paragraph], associations: list[Association]) -> list[Gap]:
    """The rule read literally: every triple's parts judged against every owed sentence."""
    gaps = []
    for paragraph in paragraphs:
        for sentence in sentences(paragraph.text):
            if len(candidates(sentence)) < 2:
                continue
            haystack = Haystack(sentence)
            if not any(
                sum(1 for part in a.triple if name_occurs(part, haystack)) >= 2
                for a in associations
            ):
                gaps.append(Gap(paragraph.index, sentence))
    return gaps


def test_the_index_agrees_with_judging_every_triple_by_the_occurrence_check() -> None:
    text = (
        "PostgreSQLはプールの最大接続数を設定する。Tokioの非同期ランタイムはスレッドを使う。\n"
        "We run PostgreSQL 16 with the Tokio runtime on Linux servers!\n\n"
        "電子署名法は認証業務を定める。Copy traitとClone traitは異なる。"
        "The selection algorithm selects rows fast"
    )
    associations = [
        Association("PostgreSQL", "設定", "プール最大接続数"),
        Association("Tokio", "使う", "MongoDB"),
        Association("postgresql16", "runs on", "Linux"),
        Association("電子署名", "定める", "認証"),
        Association("Copy", "trait", "X"),
        Association("selector", "selects", "row"),
        Association("Σ", "x", "Σ"),
    ]
    paragraphs = split_paragraphs(text)
    everything = naive_uncovered(paragraphs, [])
    assert len(everything) == 6
    assert uncovered(paragraphs, associations) == naive_uncovered(paragraphs, associations)
    assert len(naive_uncovered(paragraphs, associations)) < 6
    for association in associations:
        assert uncovered(paragraphs, [association]) == naive_uncovered(paragraphs, [association])


def test_an_empty_part_never_lands() -> None:
    paragraphs = split_paragraphs("PostgreSQLはプールを使う。")
    assert uncovered(paragraphs, [Association("PostgreSQL", "", " ")]) == [
        Gap(0, "PostgreSQLはプールを使う")
    ]
