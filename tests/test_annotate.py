import re

from taguru_ray.pipeline.annotate import (
    ContextBlock,
    block_cap,
    context_block,
    first_line,
    haystack_text,
    occurrence_text,
    tail_within,
)
from taguru_ray.pipeline.plan import Piece, label_blocks, plan_chunks
from taguru_ray.pipeline.plan_structure import plan_chunks_by_structure
from taguru_ray.pipeline.structure import units
from taguru_ray.text.occurrence import Haystack, name_occurs
from taguru_ray.text.paragraphs import Paragraph, split_paragraphs

GUIDE = "# Guide\n\n## Install\n\nRun the installer.\n\n## Configure\n\nEdit it as Install says."

ACT = """個人情報の保護に関する法律

第一章　総則

（目的）
第一条　この法律は、事業者の遵守すべき義務等を定める。

（定義）
第二条　前条の義務は、同法の定めるところによる。
"""


def chunk_from(paragraphs: list[Paragraph], first: int, index: int, total: int) -> Piece:
    """The chunk holding paragraphs ``first``.. as its own blocks (the plan's labels)."""
    blocks = [b for b in label_blocks(paragraphs, 24576) if b.paragraph >= first]
    return Piece(index, total, tuple(blocks))


def test_the_cap_is_a_quarter_of_chunk_bytes_never_under_512() -> None:
    assert block_cap(24576) == 6144
    assert block_cap(4000) == 1000
    assert block_cap(2048) == 512
    assert block_cap(1000) == 512
    assert block_cap(512) == 512


def test_the_exact_block_for_a_small_markdown_case() -> None:
    paragraphs = split_paragraphs(GUIDE)
    block = context_block(chunk_from(paragraphs, 3, 1, 2), units(paragraphs), paragraphs, 24576)
    assert block is not None
    assert block.text == (
        "Chunk context (from this segment, to read part 2 of 2 by; "
        "extract facts only from the numbered paragraphs below):\n"
        "Position: Guide › Configure\n"
        "References: Install — Run the installer.\n"
        "Preceding text: # Guide ## Install Run the installer."
    )
    assert block.bytes == len(block.text.encode("utf-8"))
    assert (block.position, block.references, block.overlap_paragraphs) == ([0, 2], [1], (0, 2))
    assert block.record(1) == {
        "type": "chunk_context",
        "chunk_index": 1,
        "sha256": block.sha256,
        "bytes": block.bytes,
        "position": [0, 2],
        "references": [1],
        "overlap_paragraphs": [0, 2],
    }


def test_the_first_line_tells_the_model_to_extract_from_the_chunk_only() -> None:
    assert "extract facts only from the numbered paragraphs below" in first_line(0, 3)
    assert "part 1 of 3" in first_line(0, 3)
    assert "the segment" in first_line(0, 1)


def test_a_structureless_first_chunk_gets_no_block() -> None:
    paragraphs = split_paragraphs("- a list item\n\nplain prose")
    chunk = plan_chunks(paragraphs, 24576)[0]
    assert context_block(chunk, units(paragraphs), paragraphs, 24576) is None


def test_the_block_carries_no_paragraph_label() -> None:
    paragraphs = split_paragraphs(ACT)
    found = units(paragraphs)
    for chunk in plan_chunks_by_structure(paragraphs, 120, found):
        block = context_block(chunk, found, paragraphs, 512)
        assert block is None or not re.search(r"\[\d+\]", block.text)


def test_the_act_name_on_the_path_attests_what_the_chunk_calls_the_act() -> None:
    paragraphs = split_paragraphs(ACT)
    found = units(paragraphs)
    chunk = chunk_from(paragraphs, 3, 2, 3)
    block = context_block(chunk, found, paragraphs, 2048)
    assert block is not None
    assert block.text.split("\n")[1:3] == [
        "Position: 個人情報の保護に関する法律 › 第一章 総則 › 第二条（定義）",
        "References: 第一条（目的） — この法律は、事業者の遵守すべき義務等を定める。",
    ]
    assert not name_occurs("個人情報保護法", Haystack(chunk.text))
    assert name_occurs("個人情報保護法", Haystack(haystack_text(block.text, chunk.text)))


def test_references_stop_at_four_in_mention_order() -> None:
    articles = "\n\n".join(f"第{n}条　第{n}条の規定。" for n in "一二三四五六")
    text = f"{articles}\n\n第七条　第六条、第二条、第五条、第三条及び第四条による。"
    paragraphs = split_paragraphs(text)
    found = units(paragraphs)
    block = context_block(chunk_from(paragraphs, 6, 1, 2), found, paragraphs, 24576)
    assert block is not None
    assert [found[n].heading for n in block.references] == ["第六条", "第二条", "第五条", "第三条"]
    line = block.text.split("\n")[2]
    assert line.startswith("References: 第六条 — 第六条の規定。 | 第二条 — ")
    assert line.count(" | ") == 3


def test_previous_article_resolves_where_it_is_written() -> None:
    text = "第一条　総則。\n\n第二条　定義。\n\n第三条　前条の定義による。"
    paragraphs = split_paragraphs(text)
    found = units(paragraphs)
    holding_two_and_three = chunk_from(paragraphs, 1, 1, 2)
    block = context_block(holding_two_and_three, found, paragraphs, 24576)
    assert block is not None and block.references == []  # 前条 is 第二条, which the chunk holds
    only_three = chunk_from(paragraphs, 2, 1, 2)
    block = context_block(only_three, found, paragraphs, 24576)
    assert block is not None and block.references == [1]


def test_a_section_sign_number_is_a_reference() -> None:
    text = "\n\n".join(
        [
            "§ 1 Scope",
            "All of it.",
            "§ 2 Definitions",
            "A term means a word.",
            "§ 3 Use",
            "As §2 says.",
        ]
    )
    paragraphs = split_paragraphs(text)
    found = units(paragraphs)
    block = context_block(chunk_from(paragraphs, 4, 1, 2), found, paragraphs, 24576)
    assert block is not None
    assert [found[n].heading for n in block.references] == ["§ 2 Definitions"]
    assert "References: § 2 Definitions — A term means a word." in block.text


def test_whole_preceding_paragraphs_as_far_as_the_cap_allows() -> None:
    paragraphs = split_paragraphs("\n\n".join(["x" * 300, "y" * 100, "z" * 100, "chunk"]))
    chunk = chunk_from(paragraphs, 3, 1, 2)
    small = context_block(chunk, [], paragraphs, 1000)  # cap 512
    assert small is not None
    assert small.text.endswith("Preceding text: " + "y" * 100 + " " + "z" * 100)
    assert small.overlap_paragraphs == (1, 2)
    assert small.bytes <= 512
    large = context_block(chunk, [], paragraphs, 4000)  # cap 1000
    assert large is not None and large.overlap_paragraphs == (0, 2)
    assert large.bytes <= 1000


def test_a_long_nearest_paragraph_leaves_its_tail_cut_at_a_character() -> None:
    paragraphs = split_paragraphs("前" * 400 + "\n\n本文")
    block = context_block(chunk_from(paragraphs, 1, 1, 2), [], paragraphs, 1000)
    assert block is not None
    assert block.bytes <= 512
    line = block.text.split("\n")[-1]
    assert line.startswith("Preceding text: …前")
    tail = line.removeprefix("Preceding text: …")
    assert tail == "前" * len(tail)
    assert 512 - block.bytes < 3  # the cap is filled to within one character
    assert block.overlap_paragraphs == (0, 0)


def test_tail_within_never_splits_a_character() -> None:
    assert tail_within("ab漢字", 4) == "字"
    assert tail_within("ab漢字", 6) == "漢字"
    assert tail_within("ab漢字", 7) == "b漢字"
    assert tail_within("short", 10) == "short"


def test_cast_known_and_before_ride_between_references_and_preceding_text() -> None:
    paragraphs = split_paragraphs(GUIDE)
    found = units(paragraphs)
    block = context_block(
        chunk_from(paragraphs, 3, 1, 2),
        found,
        paragraphs,
        24576,
        cast=[("Installer", "the setup program"), ("Config", "")],
        known=[("Installer", "writes → config file")],
        synopses={1: "How to install.", 2: "Not before the chunk: it is on the path."},
    )
    assert block is not None
    prefixes = [line.split(":", 1)[0] for line in block.text.split("\n")[1:]]
    assert prefixes == ["Position", "References", "Cast", "Known", "Before", "Preceding text"]
    assert "Cast: Installer — the setup program | Config" in block.text
    assert "Known: Installer — writes → config file" in block.text
    assert "Before: Install — How to install." in block.text
    assert (block.cast, block.known, block.synopsis) == (
        ["Installer", "Config"],
        ["Installer"],
        [1],
    )
    record = block.record(1)
    assert (record["cast"], record["known"], record["synopsis"]) == (
        ["Installer", "Config"],
        ["Installer"],
        [1],
    )


def test_the_haystack_reads_the_segments_lines_and_skips_model_and_export_lines() -> None:
    block = "\n".join(
        [
            first_line(1, 2),
            "Position: Guide › Configure",
            "Cast: Phantom — a name only the model wrote",
            "Known: Ghost — haunts → house",
            "Before: Install — synopsis words",
            "Preceding text: Run the installer.",
        ]
    )
    haystack = haystack_text(block, "[3] ## Configure")
    assert (
        haystack
        == "Position: Guide › Configure\nPreceding text: Run the installer.\n\n[3] ## Configure"
    )
    assert haystack_text(None, "[0] x") == "[0] x"


def test_occurrence_text_from_a_user_turn() -> None:
    paragraphs = split_paragraphs(GUIDE)
    chunk = chunk_from(paragraphs, 3, 1, 2)
    block = context_block(chunk, units(paragraphs), paragraphs, 24576)
    assert isinstance(block, ContextBlock)
    turn = f"Segment 'docs/guide.md', part 2 of 2:\n{block.text}\n\n{chunk.text}"
    assert occurrence_text(turn) == haystack_text(block.text, chunk.text)
    assert occurrence_text("Segment 'docs/guide.md':\n\n[0] x\n\n[1] y") == "[0] x\n\n[1] y"


def test_every_block_of_a_long_segment_stays_within_its_cap() -> None:
    body = "\n\n".join(
        f"## Part {n}\n\nSee Part {n - 1} and Part {n + 1}. " + "詳細" * 60 for n in range(1, 30)
    )
    paragraphs = split_paragraphs("# Manual\n\n" + body)
    found = units(paragraphs)
    for chunk in plan_chunks_by_structure(paragraphs, 2048, found):
        block = context_block(chunk, found, paragraphs, 2048)
        assert block is not None and block.bytes <= 512
        assert len(block.references) <= 4


def test_a_quoted_heading_must_stand_whole_at_a_latin_edge() -> None:
    text = "# Manual\n\n## Part 1\n\nFirst.\n\n## Part 2\n\nSee Part 10 later."
    paragraphs = split_paragraphs(text)
    found = units(paragraphs)
    block = context_block(chunk_from(paragraphs, 4, 1, 2), found, paragraphs, 24576)
    assert block is not None and block.references == []
    quoting = split_paragraphs(text.replace("Part 10 later", "Part 1, later"))
    block = context_block(chunk_from(quoting, 4, 1, 2), found, quoting, 24576)
    assert block is not None and [found[n].heading for n in block.references] == ["Part 1"]
