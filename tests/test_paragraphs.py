from taguru_ray.text.paragraphs import is_white_space, split_paragraphs


def texts(text: str) -> list[str]:
    return [p.text for p in split_paragraphs(text)]


def test_blank_lines_separate_paragraphs_numbered_from_zero() -> None:
    paragraphs = split_paragraphs("a\nb\n\n\nc\n")
    assert [(p.index, p.text) for p in paragraphs] == [(0, "a\nb"), (1, "c")]


def test_text_without_blank_line_is_one_paragraph_and_all_blank_is_none() -> None:
    assert texts("one\ntwo") == ["one\ntwo"]
    assert texts("\n \n\t\n") == []
    assert texts("") == []


def test_ideographic_space_line_is_blank_but_information_separator_is_not() -> None:
    assert texts("a\n\u3000\nb") == ["a", "b"]
    assert texts("a\n\u001c\nb") == ["a\n\u001c\nb"]
    assert is_white_space("\u3000 \t") and not is_white_space("\u001f")


def test_interior_crlf_kept_and_final_crlf_excluded() -> None:
    assert texts("a\r\nb\r\n\r\nc\r\n") == ["a\r\nb", "c"]


def test_leading_spaces_kept_nothing_trimmed() -> None:
    assert texts("  indented\n\n  x  ") == ["  indented", "  x  "]


def test_paragraph_bytes_count_utf8() -> None:
    assert split_paragraphs("日本")[0].bytes == 6
