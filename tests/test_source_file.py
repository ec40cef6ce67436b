"""The source-file format: exact bytes written, every shape read, every refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.contract.items import (
    MAX_LINE_BYTES,
    MAX_PASSAGE_BYTES,
    Alias,
    Association,
    Question,
)
from taguru_ray.contract.source_file import (
    FORMAT_VERSION,
    Header,
    Passage,
    Section,
    SourceFile,
    SourceFileError,
    parse_source_file,
    render_source_file,
)

UUID = "0f8e2b6c-3d4a-4e5f-9a1b-2c3d4e5f6a7b"
HEADER = {"type": "source", "version": FORMAT_VERSION, "id": "a.md", "context_id": UUID}
PASSAGE = {"passage": "青嶺酒造は1907年創業。\n\n杜氏は高瀬。"}  # two paragraphs
FACT = {"subject": "青嶺酒造", "label": "杜氏", "object": "高瀬", "weight": 1.0}


def jsonl(*records: dict[str, Any] | str) -> bytes:
    """Lines as a hand-written file would have them (spaced JSON, raw text kept as is)."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def refusal(data: bytes) -> SourceFileError:
    with pytest.raises(SourceFileError) as caught:
        parse_source_file(data, name="out/a.jsonl")
    return caught.value


def sample() -> SourceFile:
    return SourceFile(
        header=Header(id="docs/蔵.md", context_id=UUID, name="酒", description="酒蔵の知識"),
        passage=Passage(PASSAGE["passage"], date=1700000000, tags=("酒",)),
        questions=[Question(1, "杜氏は誰?")],
        associations=[
            Association("青嶺酒造", "創業年", "1907年", 1.0, 0),
            Association("青嶺酒造", "杜氏", "高瀬", -0.5, 1),
        ],
        aliases=[Alias("Aomine", "青嶺酒造", "concept"), Alias("設立年", "創業年", "label")],
    )


# ------------------------------------------------------------------ writer


def test_small_japanese_file_is_written_byte_for_byte_with_raw_non_ascii() -> None:
    expected = (
        '{"type":"source","version":"2026-09-17","id":"docs/蔵.md",'
        f'"context_id":"{UUID}","create":{{"name":"酒","description":"酒蔵の知識"}}}}\n'
        '{"passage":"青嶺酒造は1907年創業。\\n\\n杜氏は高瀬。","date":1700000000,"tags":["酒"]}\n'
        '{"paragraph":1,"question":"杜氏は誰?"}\n'
        '{"subject":"青嶺酒造","label":"創業年","object":"1907年","weight":1.0,"paragraph":0}\n'
        '{"subject":"青嶺酒造","label":"杜氏","object":"高瀬","weight":-0.5,"paragraph":1}\n'
        '{"alias":"Aomine","canonical":"青嶺酒造","kind":"concept"}\n'
        '{"alias":"設立年","canonical":"創業年","kind":"label"}\n'
    )
    assert render_source_file(sample()) == expected.encode("utf-8")


def test_header_written_with_create_block_only_with_name() -> None:
    bare = SourceFile(Header("a.md", UUID))
    named = SourceFile(Header("a.md", UUID, name="sake"))
    head = f'{{"type":"source","version":"2026-09-17","id":"a.md","context_id":"{UUID}"'
    assert render_source_file(bare) == (head + "}\n").encode()
    assert render_source_file(named) == (head + ',"create":{"name":"sake"}}\n').encode()


def test_description_without_name_refused_by_the_writer() -> None:
    with pytest.raises(SourceFileError, match=r"line 1: create.description needs create.name"):
        render_source_file(SourceFile(Header("a.md", UUID, description="d")))


def test_passage_date_and_tags_written_only_when_set() -> None:
    data = render_source_file(SourceFile(Header("a.md", UUID), Passage("本文")))
    assert data.splitlines()[1] == '{"passage":"本文"}'.encode()


@pytest.mark.parametrize(
    ("weight", "spelled"),
    [
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (2, "2.0"),
        (0.5, "0.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (123.456, "123.456"),
        (1e6, "1000000.0"),
        (-1e6, "-1000000.0"),
        (1e-4, "0.0001"),
        (1e-5, "0.00001"),
        (1e-6, "1e-6"),
        (1e-7, "1e-7"),
        (-1.5e-7, "-1.5e-7"),
        (5e-324, "5e-324"),
    ],
)
def test_weight_is_always_spelled_as_serde_json_spells_an_f64(weight: float, spelled: str) -> None:
    source = SourceFile(Header("a.md", UUID), associations=[Association("a", "rel", "b", weight)])
    line = render_source_file(source).splitlines()[1].decode()
    assert line == f'{{"subject":"a","label":"rel","object":"b","weight":{spelled}}}'


def test_aliases_written_concepts_then_labels_each_in_utf8_byte_order() -> None:
    facts = [Association(s, label, "o", 1.0) for s, label in [("B", "re"), ("あ", "lb")]]
    aliases = [
        Alias("é", "B", "concept"),
        Alias("zz", "re", "label"),
        Alias("あい", "あ", "concept"),
        Alias("Ab", "lb", "label"),
        Alias("a", "B", "concept"),
        Alias("Z", "B", "concept"),
    ]
    data = render_source_file(SourceFile(Header("a.md", UUID), None, [], facts, aliases))
    written = [json.loads(line)["alias"] for line in data.splitlines()[3:]]
    assert written == ["Z", "a", "é", "あい", "Ab", "zz"]


def test_writer_keeps_question_and_association_order_as_given() -> None:
    facts = [Association("z", "rel", "y"), Association("a", "rel", "b")]
    questions = [Question(1, "後?"), Question(0, "先?")]
    source = SourceFile(Header("a.md", UUID), Passage(PASSAGE["passage"]), questions, facts)
    assert parse_source_file(render_source_file(source)) == source


@pytest.mark.parametrize(
    ("source", "line", "detail"),
    [
        (
            SourceFile(Header("a.md", UUID), associations=[Association("a", "r", "b", 0.0)]),
            2,
            "weight 0.0 must be non-zero",
        ),
        (
            SourceFile(Header("a.md", UUID), associations=[Association("a" * 1025, "r", "b")]),
            2,
            "subject of 1025 bytes exceeds the 1024-byte cap",
        ),
        (
            SourceFile(Header("a.md", UUID), associations=[Association("a", "r", "b", 1, 0)]),
            2,
            "no passage line",
        ),
        (SourceFile(Header("a.md", UUID), questions=[Question(0, "q?")]), 2, "no passage line"),
        (SourceFile(Header("a.md", "Sake")), 1, "not a lowercase hyphenated UUID"),
        (SourceFile(Header("a.md", UUID, version=None)), 1, "writers always emit it"),
        (
            SourceFile(Header("a.md", UUID), aliases=[Alias("x", "y", "concept")]),
            2,
            'canonical "y" names no concept',
        ),
        (
            SourceFile(Header("a.md", UUID), Passage("p"), [Question(0, "q"), Question(0, "q")]),
            4,
            "repeats an earlier line",
        ),
        (
            SourceFile(Header("a.md", UUID), Passage("p"), sections=[Section(0, "s")]),
            3,
            "section lines are import-only",
        ),
    ],
)
def test_rendering_an_invalid_value_raises_instead_of_writing(
    source: SourceFile, line: int, detail: str
) -> None:
    with pytest.raises(SourceFileError) as caught:
        render_source_file(source, name="out/a.jsonl")
    assert caught.value.line == line
    assert str(caught.value).startswith(f"out/a.jsonl: line {line}: ")
    assert detail in str(caught.value)


# ------------------------------------------------------------ round trips


def test_round_trip_of_a_full_file() -> None:
    assert parse_source_file(render_source_file(sample())) == sample()


def test_round_trip_of_a_header_only_file() -> None:
    bare = SourceFile(Header("a.md", UUID))
    assert parse_source_file(render_source_file(bare)) == bare


# ------------------------------------------------------------------ reader


def test_older_taguru_batch_header_still_reads() -> None:
    old = {"taguru_batch": 1, "context": "sake", "source": "docs/a.md"}
    old["create"] = {"description": "酒蔵", "pinned": True, "dice_floor": 0.5}
    parsed = parse_source_file(jsonl(old, FACT))
    assert parsed.header == Header("docs/a.md", "sake", None, "酒蔵", None)
    assert parsed.associations == [Association("青嶺酒造", "杜氏", "高瀬", 1.0)]


def test_adr_0042_header_with_context_column_still_reads() -> None:
    line = (
        '{"type":"source","version":"2026-09-17","id":"a.md","context":"sake",'
        '"create":{"description":"d"}}'
    )
    assert parse_source_file(jsonl(line)).header == Header("a.md", "sake", None, "d")


def test_header_without_version_reads_as_none() -> None:
    header = {"type": "source", "context_id": UUID, "id": "a.md"}
    header["create"] = {"name": "sake", "description": "d"}
    assert parse_source_file(jsonl(header)).header == Header("a.md", UUID, "sake", "d", None)


def test_blank_lines_crlf_and_a_leading_bom_are_tolerated_as_import_tolerates_them() -> None:
    data = b"\xef\xbb\xbf" + jsonl(HEADER, "", "   ", FACT).replace(b"\n", b"\r\n")
    assert len(parse_source_file(data).associations) == 1


def test_missing_final_newline_is_tolerated() -> None:
    assert parse_source_file(jsonl(HEADER, FACT)[:-1]).associations


def test_integer_weight_reads_as_float() -> None:
    weight = parse_source_file(jsonl(HEADER, {**FACT, "weight": 2})).associations[0].weight
    assert weight == 2.0 and isinstance(weight, float)


def test_section_lines_are_read_into_sections() -> None:
    parsed = parse_source_file(jsonl(HEADER, PASSAGE, {"paragraph": 1, "section": "沿革"}))
    assert parsed.sections == [Section(1, "沿革")]


def test_identical_question_lines_fold_into_one_as_import_folds_them() -> None:
    question = {"paragraph": 0, "question": "誰?"}
    assert parse_source_file(jsonl(HEADER, PASSAGE, question, question)).questions == [
        Question(0, "誰?")
    ]


def test_passage_may_carry_an_export_stored_at_stamp() -> None:
    passage = {**PASSAGE, "stored_at": 1700000000, "date": None}
    assert parse_source_file(jsonl(HEADER, passage)).passage == Passage(PASSAGE["passage"])


def test_paragraph_counting_follows_the_canonical_split() -> None:
    # U+3000 makes a line blank; U+001C does not, so "\x1c" is a third paragraph.
    passage = {"passage": "一\n\u3000\n二\n\n\x1c"}
    ok = parse_source_file(jsonl(HEADER, passage, {"paragraph": 2, "question": "q"}))
    assert ok.questions == [Question(2, "q")]
    error = refusal(jsonl(HEADER, passage, {"paragraph": 3, "question": "q"}))
    assert "cites paragraph 3, but the passage has 3 paragraph(s)" in str(error)


# --------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("data", "line", "detail"),
    [
        (jsonl(HEADER, {**FACT, "note": "x"}), 2, 'unknown field "note" on an association line'),
        (jsonl({**HEADER, "note": "x"}), 1, 'unknown field "note" on the header line'),
        (jsonl({**HEADER, "create": {"name": "n", "pinned": True}}), 1, 'unknown field "pinned"'),
        (jsonl(HEADER, {**PASSAGE, "lang": "ja"}), 2, 'unknown field "lang" on a passage line'),
        (jsonl({**HEADER, "version": "2025-01-01"}), 1, 'version "2025-01-01" is not a format'),
        (jsonl({**HEADER, "version": None}), 1, "version: expected a string, got null"),
        (jsonl({**HEADER, "type": "segment"}), 1, 'type "segment" is not a source header'),
        (jsonl({**HEADER, "context": "sake"}), 1, 'give "context_id" or the older "context"'),
        (jsonl({**HEADER, "context_id": UUID.upper()}), 1, "not a lowercase hyphenated UUID"),
        (jsonl({**HEADER, "create": {"description": "d"}}), 1, 'missing field "create.name"'),
        (jsonl({"taguru_batch": 2, "context": "c", "source": "s"}), 1, "taguru_batch number 2"),
        (jsonl({"taguru_batch": 1, "source": "s"}), 1, 'missing field "context"'),
        (jsonl(HEADER, {**FACT, "weight": 0}), 2, "weight 0 must be non-zero"),
        (jsonl(HEADER, {**FACT, "weight": -0.0}), 2, "weight -0.0 must be non-zero"),
        (
            jsonl(HEADER, {**FACT, "weight": "strong"}),
            2,
            'weight: expected a number, got string "strong"',
        ),
        (jsonl(HEADER, {**FACT, "weight": True}), 2, "got boolean true"),
        (
            jsonl(HEADER, '{"subject":"a","label":"r","object":"b","weight":1e400}'),
            2,
            "weight must be finite",
        ),
        (
            jsonl(HEADER, '{"subject":"a","label":"r","object":"b","weight":NaN}'),
            2,
            "NaN is not a JSON number",
        ),
        (
            jsonl(HEADER, {k: v for k, v in FACT.items() if k != "weight"}),
            2,
            'missing field "weight"',
        ),
        (jsonl(HEADER, {**FACT, "subject": ""}), 2, "subject must not be empty"),
        (jsonl(HEADER, {**FACT, "label": 5}), 2, "label: expected a string, got number 5"),
        (jsonl(HEADER, PASSAGE, {**FACT, "paragraph": -1}), 3, "expected a paragraph index"),
        (jsonl(HEADER, PASSAGE, {**FACT, "paragraph": 1.0}), 3, "got number 1.0"),
        (jsonl(HEADER, PASSAGE, {**FACT, "paragraph": 2}), 3, "association cites paragraph 2"),
        (jsonl(HEADER, {**FACT, "paragraph": 0}), 2, "no passage line"),
        (jsonl(HEADER, {"paragraph": 0, "question": "q"}), 2, "question cites a paragraph but"),
        (jsonl(HEADER, {"paragraph": 0, "section": "s"}), 2, "section cites a paragraph but"),
        (
            jsonl(HEADER, PASSAGE, {"paragraph": 2, "question": "q"}),
            3,
            "question cites paragraph 2",
        ),
        (jsonl(HEADER, PASSAGE, {"question": "q"}), 3, 'missing field "paragraph"'),
        (jsonl(HEADER, PASSAGE, {"paragraph": 0, "question": ""}), 3, "question must not be empty"),
        (jsonl(HEADER, PASSAGE, PASSAGE), 3, "a second passage line (the first is line 2)"),
        (jsonl(HEADER, HEADER), 2, "a second header (the first is line 1)"),
        (jsonl(HEADER, {**PASSAGE, "tags": "酒"}), 2, "tags: expected an array of strings"),
        (jsonl(HEADER, {**PASSAGE, "tags": [""]}), 2, "tags[0] must not be empty"),
        (jsonl(HEADER, {**PASSAGE, "date": -1}), 2, "date: expected epoch seconds"),
        (
            jsonl(HEADER, FACT, {"alias": "x", "canonical": "高瀬", "kind": "entity"}),
            3,
            'kind: expected "concept" or "label", got string "entity"',
        ),
        (
            jsonl(HEADER, FACT, {"alias": "高瀬", "canonical": "高瀬", "kind": "concept"}),
            3,
            'alias "高瀬" equals its canonical',
        ),
        (
            jsonl(HEADER, FACT, {"alias": "x", "canonical": "杜氏", "kind": "concept"}),
            3,
            'canonical "杜氏" names no concept the associations use',
        ),
        (
            jsonl(HEADER, FACT, {"alias": "x", "canonical": "高瀬", "kind": "label"}),
            3,
            'canonical "高瀬" names no label',
        ),
        (
            jsonl(HEADER, FACT, {"alias": "青嶺酒造", "canonical": "高瀬", "kind": "concept"}),
            3,
            'alias "青嶺酒造" is itself a concept the associations use',
        ),
        (
            jsonl(
                HEADER,
                FACT,
                {"alias": "x", "canonical": "高瀬", "kind": "concept"},
                {"alias": "x", "canonical": "青嶺酒造", "kind": "concept"},
            ),
            4,
            'concept alias "x" appears twice (first at line 3)',
        ),
        (jsonl(FACT), 1, "expected the header line first"),
        (b"", 1, "no header line"),
        (b"\n  \n", 1, "no header line"),
        (jsonl(HEADER) + b'{"subject":"\xff"}\n', 2, "not UTF-8 (byte 0xff at column 13)"),
        (jsonl(HEADER, "{not json}"), 2, "not JSON"),
        (jsonl(HEADER, "[1]"), 2, "a source-file line must be a JSON object, got an array"),
        (jsonl(HEADER, '{"subject":"a","subject":"b"}'), 2, 'duplicate field "subject"'),
        (jsonl(HEADER, {"paragraph": 0}), 2, "not a passage, question"),
        (jsonl(HEADER, {"paragraph": 0, "locator": {}}), 2, "not a passage, question"),
        (
            jsonl(HEADER, '{"subject":"\\ud800","label":"r","object":"b","weight":1}'),
            2,
            "lone surrogate",
        ),
    ],
)
def test_refusal_names_the_file_the_line_and_the_fix(data: bytes, line: int, detail: str) -> None:
    error = refusal(data)
    assert error.line == line
    assert str(error).startswith(f"out/a.jsonl: line {line}: ")
    assert detail in str(error)


def test_unknown_field_refused_with_line_number() -> None:
    error = refusal(jsonl(HEADER, PASSAGE, {"paragraph": 0, "question": "q", "note": "x"}))
    assert str(error) == (
        'out/a.jsonl: line 3: unknown field "note" on a question line'
        " (it takes paragraph, question)"
    )


# ----------------------------------------------------------- caps at bounds


def at_bytes(size: int) -> str:
    """A string of exactly `size` UTF-8 bytes, mostly 3-byte characters."""
    return "あ" * (size // 3) + "a" * (size % 3)


@pytest.mark.parametrize(
    ("build", "cap"),
    [
        (lambda s: [{**HEADER, "id": s}], 1024),
        (lambda s: [{**HEADER, "create": {"name": s}}], 1024),
        (lambda s: [{**HEADER, "create": {"name": "n", "description": s}}], 4096),
        (lambda s: [{"taguru_batch": 1, "context": s, "source": "a"}], 64),
        (lambda s: [HEADER, {**FACT, "subject": s}], 1024),
        (lambda s: [HEADER, {**FACT, "label": s}], 1024),
        (lambda s: [HEADER, {**FACT, "object": s}], 1024),
        (lambda s: [HEADER, FACT, {"alias": s, "canonical": "高瀬", "kind": "concept"}], 1024),
        (
            lambda s: [
                HEADER,
                {**FACT, "object": s},
                {"alias": "x", "canonical": s, "kind": "concept"},
            ],
            1024,
        ),
        (lambda s: [HEADER, PASSAGE, {"paragraph": 0, "question": s}], 512),
        (lambda s: [HEADER, PASSAGE, {"paragraph": 0, "section": s}], 512),
        (lambda s: [HEADER, {**PASSAGE, "tags": [s]}], 128),
    ],
)
def test_byte_caps_hold_at_their_boundary(build: Any, cap: int) -> None:
    assert parse_source_file(jsonl(*build(at_bytes(cap))))
    assert f"of {cap + 1} bytes exceeds the {cap}-byte cap" in str(
        refusal(jsonl(*build(at_bytes(cap + 1))))
    )


def test_passage_cap_holds_at_eight_mib() -> None:
    assert parse_source_file(jsonl(HEADER, {"passage": "a" * MAX_PASSAGE_BYTES}))
    error = refusal(jsonl(HEADER, {"passage": "a" * (MAX_PASSAGE_BYTES + 1)}))
    assert (error.line, "passage of 8388609 bytes") == (2, str(error).split(": ")[-1][:24])


def test_line_cap_holds_at_sixteen_mib() -> None:
    line = b'{"passage":"x"}'
    assert parse_source_file(jsonl(HEADER) + line + b" " * (MAX_LINE_BYTES - len(line)) + b"\n")
    error = refusal(jsonl(HEADER) + line + b" " * (MAX_LINE_BYTES + 1 - len(line)) + b"\n")
    assert error.line == 2 and "exceeds the 16777216-byte line cap" in str(error)


def test_tag_count_cap_holds_at_thirty_two() -> None:
    tags = [f"t{i}" for i in range(33)]
    assert parse_source_file(jsonl(HEADER, {**PASSAGE, "tags": tags[:32]}))
    assert "33 tags where a passage carries at most 32" in str(
        refusal(jsonl(HEADER, {**PASSAGE, "tags": tags}))
    )


def test_question_count_cap_holds_at_eight_per_paragraph() -> None:
    questions = [{"paragraph": 0, "question": f"q{i}"} for i in range(9)]
    assert len(parse_source_file(jsonl(HEADER, PASSAGE, *questions[:8])).questions) == 8
    error = refusal(jsonl(HEADER, PASSAGE, *questions))
    assert error.line == 11 and "paragraph 0 already has 8 questions (the cap)" in str(error)


def test_weight_cap_holds_at_one_million() -> None:
    assert parse_source_file(jsonl(HEADER, {**FACT, "weight": -1e6}))
    error = refusal(jsonl(HEADER, {**FACT, "weight": 1000000.0000000001}))
    assert "weight 1000000.0000000001 exceeds the 1000000 cap" in str(error)


def test_the_fast_line_encoder_spells_weights_as_the_serde_formatter_does() -> None:
    import random

    from taguru_ray.contract.source_file import _encode, _format_f64

    rng = random.Random(7)
    weights = [rng.uniform(-1e6, 1e6) for _ in range(2000)]
    weights += [10 ** rng.uniform(-4, 15.9) for _ in range(2000)]
    weights += [1.0, -1.0, 0.5, 1e-4, 123456789.0, 1e15]
    for weight in weights:
        line = {"subject": "a", "label": "b", "object": "c", "weight": weight}
        expected = '{"subject":"a","label":"b","object":"c","weight":' + _format_f64(weight) + "}"
        assert _encode(line) == expected, weight


def test_a_line_nested_too_deeply_is_refused_not_a_crash() -> None:
    deep = b'{"type":"source","id":"a","context_id":"x","n":' + b"[" * 100_000 + b"]" * 100_000
    error = refusal(deep + b"}\n")
    assert "nested too deeply" in str(error) and error.line == 1
