from taguru_ray.pipeline.annotate import references
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.plan_structure import plan_chunks_by_structure, preferred_breaks
from taguru_ray.pipeline.structure import (
    Unit,
    heading_of,
    outermost_level,
    position_path,
    units,
)
from taguru_ray.text.paragraphs import split_paragraphs

STATUTE = """電子署名及び認証業務に関する法律

第一章　総則

（目的）
第一条　この法律は、電子署名に関し、電磁的記録の真正な成立の推定を定める。

（定義）
第二条　この法律において「電子署名」とは、前条に規定する措置をいう。
２　同法の規定は、第一条の目的に従う。

第二章　電子署名
第三条の二　電子署名は、第二条の規定により認められるものとする。
"""

MINUTES = """第百九十八回国会　総務委員会　第三号

◆開会

○委員長（山田太郎君）　ただいまから会議を開きます。

○佐藤一郎君　予算案について質問します。

◆議事

○委員長（山田太郎君）　採決します。
"""

MARKDOWN = """# Guide

Intro.

## Install

1. Download the archive.
2. Unpack it.

1.2 Configuration

Set the path.

§ 3

Scope text.

§3.1 Limits

Details.
"""


def shape(found: list[Unit]) -> list[tuple[int, str, int, int]]:
    return [(u.level, u.heading, u.paragraph_first, u.paragraph_last) for u in found]


def test_statute_chapters_articles_captions_and_branches() -> None:
    found = units(split_paragraphs(STATUTE))
    assert shape(found) == [
        (0, "電子署名及び認証業務に関する法律", 0, 0),
        (1, "第一章　総則", 1, 1),
        (3, "第一条（目的）", 2, 2),
        (3, "第二条（定義）", 3, 3),
        (1, "第二章　電子署名", 4, 4),
        (3, "第三条の二", 4, 4),
    ]
    assert [u.unit for u in found] == list(range(6))
    assert found[2].opening == "この法律は、電子署名に関し、電磁的記録の真正な成立の推定を定める。"
    assert found[3].opening.endswith("２ 同法の規定は、第一条の目的に従う。")
    assert outermost_level(found) == 1


def test_statute_position_path_is_outermost_first() -> None:
    found = units(split_paragraphs(STATUTE))
    assert [u.heading for u in position_path(found, 3)] == [
        "電子署名及び認証業務に関する法律",
        "第一章　総則",
        "第二条（定義）",
    ]
    assert [u.heading for u in position_path(found, 4)] == [
        "電子署名及び認証業務に関する法律",
        "第二章　電子署名",
        "第三条の二",
    ]


def test_prose_opening_with_a_reference_is_no_heading() -> None:
    assert heading_of("第二条の規定により認められる。") is None
    assert heading_of("第二章の規定") is None
    assert heading_of("第三条の二　電子署名は") == (3, "第三条の二", "電子署名は")
    assert heading_of("附則") == (1, "附則", "")
    assert heading_of("附則の規定") is None


def test_statute_references_by_number_previous_article_and_act_on_path() -> None:
    paragraphs = split_paragraphs(STATUTE)
    found = units(paragraphs)
    chunks = plan_chunks_by_structure(paragraphs, 200, found)
    by_first = {chunk.paragraph_first: chunk for chunk in chunks}
    # 第二条 says 前条 (第一条) and 第一条; 同法 resolves through the act's name on the path.
    article_two = by_first[3]
    path = position_path(found, 3)
    assert path[0].heading == "電子署名及び認証業務に関する法律"
    assert [u.heading for u in references(found, article_two, path)] == ["第一条（目的）"]
    # 第三条の二 names 第二条 by number; its own chapter is on the path, not a reference.
    last = by_first[4]
    assert [u.heading for u in references(found, last, position_path(found, 4))] == [
        "第二条（定義）"
    ]


def test_minutes_sections_and_speakers() -> None:
    found = units(split_paragraphs(MINUTES))
    assert shape(found) == [
        (0, "第百九十八回国会 総務委員会 第三号", 0, 0),
        (1, "◆開会", 1, 1),
        (2, "○委員長（山田太郎君）", 2, 2),
        (2, "○佐藤一郎君", 3, 3),
        (1, "◆議事", 4, 4),
        (2, "○委員長（山田太郎君）", 5, 5),
    ]
    assert found[3].opening == "予算案について質問します。"
    assert outermost_level(found) == 1
    assert preferred_breaks(found) == {1, 4}


def test_speakers_are_never_references() -> None:
    paragraphs = split_paragraphs(
        MINUTES + "\n◆散会\n\n佐藤一郎君の質問に戻ると、○委員長が述べた。\n"
    )
    found = units(paragraphs)
    last = plan_chunks(paragraphs[-1:], 24576)[0]
    assert references(found, last, position_path(found, last.paragraph_first)) == []


def test_markdown_dotted_and_section_headings_but_never_a_bare_list_item() -> None:
    found = units(split_paragraphs(MARKDOWN))
    assert shape(found) == [
        (1, "Guide", 0, 1),
        (2, "Install", 2, 3),
        (2, "1.2 Configuration", 4, 5),
        (1, "§ 3", 6, 7),
        (2, "§3.1 Limits", 8, 9),
    ]
    assert found[1].opening == "1. Download the archive. 2. Unpack it."
    assert heading_of("1. Download the archive") is None
    assert heading_of("1. Introduction") is None
    assert heading_of("10.5% of requests") is None
    assert heading_of("1.2 Setup.") is None
    assert heading_of("#hashtag") is None
    assert heading_of("### Deep ###") == (3, "Deep", "")
    assert heading_of("## C#") == (2, "C#", "")
    assert heading_of("## ###") is None


def test_headings_in_code_fences_and_html_comments_are_not_read() -> None:
    text = "# Real\n\n```sh\n# install it\n```\n\n<!--\n# Original\n-->\n\n## Also real"
    assert [u.heading for u in units(split_paragraphs(text))] == ["Real", "Also real"]


def test_a_heading_further_down_a_paragraph_shares_it() -> None:
    found = units(split_paragraphs("# A\n\ntext\n## B\nmore\n\ntail"))
    assert shape(found) == [(1, "A", 0, 1), (2, "B", 1, 2)]


def test_a_segment_without_headings_has_no_units() -> None:
    assert units(split_paragraphs("- a list\n- of items\n\nand prose.")) == []
    assert outermost_level([]) is None


def test_trace_record_shape() -> None:
    found = units(split_paragraphs(MARKDOWN))
    assert found[0].record() == {
        "type": "structure",
        "unit": 0,
        "level": 1,
        "heading": "Guide",
        "paragraph_first": 0,
        "paragraph_last": 1,
    }


def test_no_structure_chunks_exactly_as_plan_chunks() -> None:
    text = "\n\n".join(f"paragraph {i} " + "x" * 150 for i in range(40))
    paragraphs = split_paragraphs(text)
    assert units(paragraphs) == []
    assert plan_chunks_by_structure(paragraphs, 600, []) == plan_chunks(paragraphs, 600)
    titled = split_paragraphs("A title line\n\n" + text)
    assert [u.level for u in units(titled)] == [0]
    assert plan_chunks_by_structure(titled, 600, units(titled)) == plan_chunks(titled, 600)


def test_an_outermost_heading_ends_a_chunk_past_half_the_cap() -> None:
    text = "\n\n".join(["# Alpha", "a" * 100, "# Beta", "b" * 30, "# Gamma", "c" * 20])
    paragraphs = split_paragraphs(text)
    found = units(paragraphs)
    plain = plan_chunks(paragraphs, 200)
    preferring = plan_chunks_by_structure(paragraphs, 200, found)
    assert [(c.paragraph_first, c.paragraph_last) for c in plain] == [(0, 4), (5, 5)]
    # Beta opens past half the cap (117 > 100): a break; Gamma at 46 bytes: none.
    assert [(c.paragraph_first, c.paragraph_last) for c in preferring] == [(0, 1), (2, 5)]
    assert [c.total for c in preferring] == [2, 2]
    assert all(c.bytes <= 200 for c in preferring)


def test_minutes_chunks_break_at_sections_not_speakers() -> None:
    paragraphs = split_paragraphs(MINUTES)
    chunks = plan_chunks_by_structure(paragraphs, 260, units(paragraphs))
    assert [(c.paragraph_first, c.paragraph_last) for c in chunks] == [(0, 3), (4, 5)]
    assert [(c.paragraph_first, c.paragraph_last) for c in plan_chunks(paragraphs, 260)] == [
        (0, 4),
        (5, 5),
    ]


def test_statute_chunks_break_at_chapters_and_never_exceed_the_cap() -> None:
    paragraphs = split_paragraphs(STATUTE)
    found = units(paragraphs)
    # 第二章 opens at 385 bytes, past half of 512: the chapter starts a chunk.
    chunks = plan_chunks_by_structure(paragraphs, 512, found)
    assert [(c.paragraph_first, c.paragraph_last) for c in chunks] == [(0, 3), (4, 4)]
    assert [(c.paragraph_first, c.paragraph_last) for c in plan_chunks(paragraphs, 512)] == [(0, 4)]
    small = plan_chunks_by_structure(paragraphs, 200, found)
    assert all(c.bytes <= 200 for c in small)
