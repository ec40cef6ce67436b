"""Hostile documents of each kind (issue 47 item 2, ADR 0050's net over the new readers).

Each example starts from a real document of one kind (`tests/documents.py`) or none, and
makes it what a disk, a bad exporter or an attacker would: random bytes under the
kind's name, the document cut short, bytes spliced in, another kind's bytes, or nesting
far past what a parser follows (HTML elements, DOCX tables, PPTX group shapes, PDF
arrays). Converted, it ends as paragraphs or one line saying why — never another
exception, never a line break in the why. Through the child process, never a hang past
its timeout. Through `extract --dry-run` on a folder of them: exit 0 or 1, no
traceback, every failure naming its file, nothing written.
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from taguru_ray.documents.convert import convert
from taguru_ray.documents.converted import Converted, DocumentRefused
from taguru_ray.engine.converter import Converter
from tests import documents
from tests.fuzzing import assert_clean, assert_names_one_of, run, tree

pytestmark = pytest.mark.fuzz

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
ORIGINALS = {
    "pdf": documents.two_page_pdf(),
    "docx": documents.report_docx(),
    "pptx": documents.deck_pptx(),
    "html": documents.article_html(),
}
SUFFIX = {"pdf": ".pdf", "docx": ".docx", "pptx": ".pptx", "html": ".html"}
# The elements nested past any parser's depth, and the part of the zip they go in.
NESTING = {
    "docx": ("word/document.xml", "<w:body>", "<w:tbl><w:tr><w:tc>", "</w:tc></w:tr></w:tbl>"),
    "pptx": ("ppt/slides/slide1.xml", "<p:spTree>", "<p:grpSp>", "</p:grpSp>"),
}


def _deep(kind: str, depth: int) -> bytes:
    original = ORIGINALS[kind]
    if kind == "html":
        return b"<html><body>" + b"<div>" * depth + b"Deep text" + b"</div>" * depth + b"</body>"
    if kind == "pdf":
        at = original.index(b"/Type /Catalog")
        return original[:at] + b"/Deep " + b"[" * depth + b"]" * depth + b" " + original[at:]
    part, anchor, opening, closing = NESTING[kind]
    source = zipfile.ZipFile(io.BytesIO(original))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == part:
                nested = (opening * depth + closing * depth).encode()
                data = data.replace(anchor.encode(), anchor.encode() + nested, 1)
            archive.writestr(item.filename, data)
    return buffer.getvalue()


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, bytes]:
    """(a kind, the bytes given under that kind's name)."""
    kind = draw(st.sampled_from(sorted(ORIGINALS)))
    original = ORIGINALS[kind]
    damage = draw(st.sampled_from(["none", "cut", "cut", "splice", "random", "other", "deep"]))
    event(f"{kind}, {damage}")
    if damage == "cut":
        return kind, original[: draw(st.integers(0, len(original)))]
    if damage == "splice":
        at = draw(st.integers(0, len(original)))
        return kind, original[:at] + draw(st.binary(min_size=1, max_size=24)) + original[at:]
    if damage == "random":
        return kind, draw(st.binary(max_size=2000))
    if damage == "other":
        return kind, ORIGINALS[draw(st.sampled_from(sorted(set(ORIGINALS) - {kind})))]
    if damage == "deep":
        return kind, _deep(kind, draw(st.sampled_from([300, 1000, 5000, 100_000])))
    return kind, original


def _one_line_or_paragraphs(kind: str, data: bytes) -> None:
    try:
        converted = convert(kind, data)
    except DocumentRefused as refused:
        assert str(refused) and "\n" not in str(refused), str(refused)
        event("refused")
        return
    assert isinstance(converted, Converted)
    assert all(p.text and "\n\n" not in p.text for p in converted.paragraphs)
    event("converted")


@given(hostile())
def test_a_hostile_document_converts_or_is_one_line(case: tuple[str, bytes]) -> None:
    _one_line_or_paragraphs(*case)


@pytest.fixture(scope="module")
def child() -> Converter:
    converter = Converter(30, 2 << 30)
    yield converter  # type: ignore[misc]
    converter.close()


@settings(max_examples=12)
@given(hostile())
def test_through_the_child_a_hostile_document_never_hangs_or_escapes(
    child: Converter, case: tuple[str, bytes]
) -> None:
    kind, data = case
    try:
        child.convert(kind, data)
    except DocumentRefused as refused:
        assert str(refused) and "\n" not in str(refused)


@settings(max_examples=6 if os.environ.get("HYPOTHESIS_PROFILE") != "fuzz" else 200)
@given(st.lists(hostile(), min_size=1, max_size=4))
def test_a_folder_of_hostile_documents_is_planned_or_named_line_by_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cases: list[tuple[str, bytes]],
) -> None:
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "docs"
        folder.mkdir()
        names = []
        for at, (kind, data) in enumerate(cases):
            name = f"doc{at}{SUFFIX[kind]}"
            (folder / name).write_bytes(data)
            names.append(f"{folder}/{name}")
        before = tree(Path(root))
        ran = run(capsys, ["extract", str(folder), "--context", CONTEXT, "--out",
                           f"{root}/out", "--dry-run"])  # fmt: skip
        assert_clean(ran, (0, 1))
        assert_names_one_of(ran, names)
        assert tree(Path(root)) == before  # a dry run writes nowhere
