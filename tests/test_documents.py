"""The converters, their child process and the kept text (issue 47, item 2; ADR 0078).

Each kind on a document made by `tests/documents.py`: its paragraphs and their
locators; every refusal one line naming why (encrypted, no text layer with the word
that OCR is not built in, cut short, a zip bomb, a legacy OLE file); the child's time
and memory limits; the text kept in --out read back instead of converted again.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from taguru_ray.documents.convert import convert
from taguru_ray.documents.converted import Converted, DocumentRefused, Located, clean, describe
from taguru_ray.documents.kinds import converter_id, kind_of
from taguru_ray.documents.zipped import OLE_MAGIC
from taguru_ray.engine.converter import Converter
from taguru_ray.engine.documents import Documents
from taguru_ray.pipeline.effects import Convert
from taguru_ray.pipeline.read import SegmentRefused, document_sha256, read_document, redact_segment
from taguru_ray.store.outdir import OutDir
from taguru_ray.text.redact import builtin_rules
from taguru_ray.tools.locators import span
from tests import documents


def _located(converted: Converted) -> list[tuple[str, dict[str, object]]]:
    return [(p.text, p.locator) for p in converted.paragraphs]


def test_a_pdf_paragraph_carries_its_page() -> None:
    converted = convert("pdf", documents.two_page_pdf())
    assert _located(converted) == [
        (documents.PAGE_ONE[0], {"page": 1}),
        (documents.PAGE_ONE[1], {"page": 1}),
        (documents.PAGE_TWO, {"page": 2}),
    ]


def test_a_docx_paragraph_carries_its_heading_path_and_a_table_its_rows() -> None:
    converted = convert("docx", documents.report_docx())
    assert _located(converted)[2:] == [
        ("Fleet", {"headings": ["Annual Report", "Fleet"]}),
        ("Hokuriku Rail retired the Series 413 trains in Kanazawa.",
         {"headings": ["Annual Report", "Fleet"]}),
        ("Depot | Toyama Depot", {"headings": ["Annual Report", "Fleet"]}),
        ("Trains | Series 521", {"headings": ["Annual Report", "Fleet"]}),
    ]  # fmt: skip


def test_a_pptx_shape_carries_its_slide_and_the_notes_are_marked() -> None:
    converted = convert("pptx", documents.deck_pptx())
    assert _located(converted) == [
        ("Setouchi Ferry Plan", {"slide": 1}),
        ("Setouchi Ferry links Takamatsu Port and Naoshima Island.\n"
         "Shodoshima Line adds a Uno Port stop.", {"slide": 1}),
        ("Ask Kagawa Prefecture about the Uno Port berth.", {"slide": 1, "notes": True}),
        ("Budget", {"slide": 2}),
        ("Kagawa Prefecture funds the Naoshima Island pier.", {"slide": 2}),
    ]  # fmt: skip


def test_an_html_page_is_its_article_not_its_navigation_script_or_footer() -> None:
    converted = convert("html", documents.article_html())
    text = converted.text
    assert "Keage Incline" in text and "Nanzenji Aqueduct" in text
    for boilerplate in (documents.FOOTER, documents.SCRIPT, "Careers", "color: red"):
        assert boilerplate not in text
    assert converted.paragraphs[-1].locator == {"headings": ["The Biwako Canal", "History"]}


@pytest.mark.parametrize(
    ("kind", "data", "why"),
    [
        ("pdf", documents.encrypted_pdf(), "encrypted (it needs a password)"),
        ("pdf", documents.scanned_pdf(), "no text layer (a scanned PDF?) — OCR is not built"),
        ("pdf", documents.cut_pdf(), "not a readable PDF (cut short, or damaged)"),
        ("pdf", b"", "not a readable PDF"),
        ("docx", documents.zip_bomb_docx(), "a zip bomb? part 'word/document.xml' would expand"),
        ("docx", documents.report_docx()[:5000], "cut short or damaged"),
        ("docx", OLE_MAGIC + b"\0" * 600, "encrypted, or a legacy binary Office file"),
        ("pptx", b"<html></html>", "not a PPTX (no zip archive)"),
        ("pptx", documents.report_docx(), "not a readable PPTX"),
    ],
)
def test_a_bad_document_is_one_line_naming_why(kind: str, data: bytes, why: str) -> None:
    with pytest.raises(DocumentRefused) as refused:
        convert(kind, data)
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_a_page_without_text_among_pages_with_it_is_a_note() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, documents.PAGE_TWO)
    pdf.add_page()
    pdf.rect(20, 20, 50, 50, style="F")
    converted = convert("pdf", bytes(pdf.output()))
    assert [p.locator for p in converted.paragraphs] == [{"page": 1}]
    assert converted.notes == ("page 2 has no text (blank, or scanned: OCR is not built into "
                               "taguru-ray: give it a text layer first (an OCR tool), then "
                               "extract it)",)  # fmt: skip


def test_kinds_converters_and_locators_read_as_a_person_would() -> None:
    assert [kind_of(n) for n in ("a.PDF", "b.htm", "c.md", "d.pptx/x", "e")] == [
        "pdf", "html", None, None, None]  # fmt: skip
    assert converter_id("pdf").startswith("pdf:pypdfium2 ")
    assert clean("a\r\n\r\n \u3000\n\x02b  \x00") == "a\nb"
    assert [describe(x) for x in ({"page": 2}, {"slide": 3, "notes": True}, {"headings": []},
                                  {"headings": ["A", "B"]})] == [
        "page 2", "slide 3 notes", "(before the first heading)", "A › B"]  # fmt: skip
    pages = {0: {"page": 1}, 1: {"page": 1}, 2: {"page": 2}, 3: {"page": 4}}
    assert (span(pages, 0, 1), span(pages, 1, 3), span({}, 0, 3)) == ("page 1", "pages 1–4", "")
    back = Converted.from_json(convert("pptx", documents.deck_pptx()).to_json())
    assert back == convert("pptx", documents.deck_pptx())


def test_a_document_segment_keeps_its_locators_through_redaction() -> None:
    converted = Converted("pdf", (Located("Mail ops@example.com today", {"page": 1}),
                                  Located("Second page", {"page": 2})))  # fmt: skip
    digest = document_sha256(b"%PDF-bytes")
    segment = read_document("a.pdf", converted, digest)
    assert [p.text for p in segment.paragraphs] == ["Mail ops@example.com today", "Second page"]
    masked, found = redact_segment(segment, builtin_rules(frozenset({"pii"})), b"k" * 32)
    assert found and "ops@example.com" not in masked.text
    assert masked.locators == ({"page": 1}, {"page": 2}) and masked.sha256 == digest
    assert document_sha256(b"x", b"k" * 32) != document_sha256(b"x")
    empty = read_document("blank.docx", Converted("docx", ()), digest)  # no paragraph
    assert redact_segment(empty, builtin_rules(frozenset({"pii"})), b"k" * 32)[0].sha256 == digest
    huge = Converted("html", (Located("x" * ((8 << 20) + 1), {"headings": []}),))
    from taguru_ray.pipeline.parts import oversized

    with pytest.raises(SegmentRefused, match="paragraph 0 alone is 8388609 bytes"):
        oversized(read_document("big.html", huge, digest).paragraphs)  # no part holds it


def test_a_converter_that_hangs_is_stopped_at_its_timeout() -> None:
    sleeper = (sys.executable, "-c", "import time; time.sleep(60)")
    converter = Converter(0.5, 1 << 30, sleeper)
    with pytest.raises(DocumentRefused, match=r"took longer than 0.5 s and was stopped"):
        converter.convert("pdf", documents.two_page_pdf())
    converter.close()


def test_a_converter_past_its_memory_limit_fails_that_document_and_the_next_converts() -> None:
    starved = Converter(120, 256 << 20)  # --convert-memory's least
    with pytest.raises(DocumentRefused, match=r"more than its converter's 256 MiB memory limit"):
        starved.convert("docx", documents.swollen_docx())
    starved.close()
    converter = Converter(60, 2 << 30)
    assert converter.convert("pdf", documents.two_page_pdf()).paragraphs[-1].locator == {
        "page": 2}  # fmt: skip
    child = converter._child
    assert child is not None
    os.kill(child.pid, signal.SIGKILL)  # the child this test's converter started
    child.wait()
    assert convert("docx", documents.report_docx()) == converter.convert(
        "docx", documents.report_docx())  # fmt: skip
    converter.close()


def test_the_converted_text_is_kept_in_out_and_read_back_not_converted_again(
    tmp_path: Path,
) -> None:
    data = documents.two_page_pdf()
    digest = document_sha256(data)
    kept = Documents(OutDir(str(tmp_path)), Converter(60, 2 << 30))
    effect = Convert(converter_id("pdf"), data, digest, keep=True)
    first = asyncio.run(kept.convert(effect))
    again = asyncio.run(kept.convert(effect))
    assert isinstance(first, Converted) and again == first and kept.converted == 1
    assert len(list((tmp_path / ".extract-documents").rglob(f"{digest}.json"))) == 1
    masked = Convert(converter_id("pdf"), data, document_sha256(data, b"k" * 32), keep=False)
    assert asyncio.run(kept.convert(masked)) == first and kept.converted == 2
    assert len(list((tmp_path / ".extract-documents").rglob("*.json"))) == 1  # none under --redact
    refused = asyncio.run(kept.convert(Convert(converter_id("pdf"), b"%PDF", "d", keep=True)))
    assert isinstance(refused, str) and "not a readable PDF" in refused
    kept.close()


def test_a_document_is_known_by_its_shape_not_by_a_source_ending_in_pdf(tmp_path: Path) -> None:
    from taguru_ray.store.inputs import Columns, expand, read_source

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "Brewery.PDF").write_bytes(documents.two_page_pdf())
    (folder / "notes.md").write_text("Kochi notes.\n")
    (folder / "ignored.doc").write_bytes(b"old binary Word")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "scan.pdf", "text": "A row whose id ends in .pdf."}\n')
    corpus = expand([str(folder), str(rows)], columns=Columns("text", "id"))
    assert list(corpus) == [f"{folder}/Brewery.PDF", f"{folder}/notes.md", f"{rows}#scan.pdf"]
    assert [corpus.document(i) for i in range(3)] == ["pdf", None, None]
    big = folder / "big.pdf"  # read whole, past a text segment's 8 MiB limit
    big.write_bytes(b"%PDF-1.4\n" + b"0" * (9 << 20))
    assert len(read_source(str(big))) == big.stat().st_size


def test_a_pdf_segment_runs_through_the_program_with_its_pages_in_the_trace() -> None:
    """The whole program on canned answers, no Ray and no disk; the document converted by a
    converter child of the segment's own."""
    import hashlib
    import json as json_

    from taguru_ray.engine.ports import Model
    from taguru_ray.engine.segment import extract_segment
    from taguru_ray.pipeline.segment_job import SegmentJob
    from tests.test_segment_run import Canned, MemoryRecorder, answer, ok, settings

    data = documents.two_page_pdf()
    model = Canned(lambda r: ok(answer(("Aomori Distillery", "ships", "Tsugaru Gin", 2))))
    recorder = MemoryRecorder()
    job = SegmentJob(0, "docs/a.pdf", data, "docs/a.pdf", (), converter=converter_id("pdf"))
    outcome = asyncio.run(extract_segment(
        job, settings(), "run1", Model(model.complete, model.next_seq), recorder))  # fmt: skip
    assert outcome.status == "written", outcome.notes
    assert outcome.inputs is not None
    assert outcome.inputs["sha256"] == hashlib.sha256(data).hexdigest()
    assert outcome.inputs["converter"] == converter_id("pdf")
    trace = [json_.loads(line) for line in recorder.files["trace"].splitlines()]
    assert trace[0]["converter"] == converter_id("pdf")
    cited = [r for r in trace if r["type"] == "paragraph" and r["items"]]
    assert [(r["paragraph"], r["locator"]) for r in cited] == [(2, {"page": 2})]
    user = model.requests[0].messages[-1]["content"]
    assert "[2] " + documents.PAGE_TWO in user  # the model sees the converted text


def test_parts_are_consecutive_paragraphs_within_the_cap() -> None:
    from taguru_ray.pipeline import parts
    from taguru_ray.text.paragraphs import split_paragraphs

    paragraphs = split_paragraphs("aaaa\n\nbb\n\ncccccc\n\nd")  # 4, 2, 6, 1 bytes
    assert parts.plan(paragraphs, 8) == [range(0, 2), range(2, 3), range(3, 4)]
    assert parts.plan(paragraphs, 100) == [range(0, 4)]
    assert parts.text_of(paragraphs, range(0, 2)) == "aaaa\n\nbb"
    with pytest.raises(SegmentRefused, match="paragraph 2 alone is 6 bytes"):
        parts.plan(paragraphs, 5)


def test_a_part_holds_what_cites_its_paragraphs_renumbered_and_the_aliases_it_uses() -> None:
    from taguru_ray.contract.items import Alias, Association, Question
    from taguru_ray.pipeline import parts
    from taguru_ray.pipeline.merge import Extraction

    extraction = Extraction(
        associations=[(Association("A", "runs", "B", 1.0, 0), "p"),
                      (Association("C", "owns", "D", 1.0, 3), "p"),
                      (Association("E", "near", "F", 1.0, None), "p")],
        aliases=[(Alias("Dee", "D", "concept"), "p"), (Alias("Zed", "Z", "concept"), "p"),
                 (Alias("possesses", "owns", "label"), "p")],
        questions=[(Question(2, "Who owns D?"), "p")],
    )  # fmt: skip
    first, second = parts.split(extraction, [range(0, 2), range(2, 4)])
    assert [a.paragraph for a, _ in first.associations] == [0, None]
    assert [(a.subject, a.paragraph) for a, _ in second.associations] == [("C", 1)]
    assert [q.paragraph for q, _ in second.questions] == [0]
    assert [a.alias for a, _ in second.aliases] == ["Dee", "possesses"]
    assert [a.alias for a, _ in first.aliases] == ["Zed"]  # no part uses Z: the first


def test_a_document_over_the_cap_is_written_in_parts_that_each_import_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole program, the cap cut to 100 bytes so the two-page PDF's three paragraphs
    need three parts: each a source file the import parser reads, its facts renumbered;
    the trace keeps the document's numbering and every page."""
    import json as json_

    from taguru_ray.contract.source_file import parse_source_file
    from taguru_ray.engine.ports import Model
    from taguru_ray.engine.segment import extract_segment
    from taguru_ray.pipeline import parts
    from taguru_ray.pipeline.segment_job import SegmentJob
    from tests.test_segment_run import Canned, MemoryRecorder, answer, ok, settings

    monkeypatch.setattr(parts, "BUDGET", 100)

    model = Canned(lambda r: ok(answer(
        ("Kuroshio Brewery", "brews", "Junmai sake", 0),
        ("Aomori Distillery", "ships", "Tsugaru Gin", 2))))  # fmt: skip
    recorder = MemoryRecorder()
    job = SegmentJob(0, "docs/a.pdf", documents.two_page_pdf(), "docs/a.pdf", (),
                     converter=converter_id("pdf"))  # fmt: skip
    outcome = asyncio.run(extract_segment(
        job, settings(), "run1", Model(model.complete, model.next_seq), recorder))  # fmt: skip
    assert outcome.status == "written", outcome.notes
    more = recorder.parts
    assert isinstance(more, tuple) and len(more) == 2
    files = [parse_source_file(data) for data in (recorder.files["source"], *more)]
    assert [f.header.id for f in files] == [f"docs/a.pdf/part-00{k}" for k in (1, 2, 3)]
    assert [f.passage.text for f in files if f.passage] == [*documents.PAGE_ONE,
                                                            documents.PAGE_TWO]  # fmt: skip
    assert [(a.subject, a.paragraph) for a in files[2].associations] == [("Aomori Distillery", 0)]
    assert any("written in 3 parts" in note for note in outcome.notes)
    trace = [json_.loads(line) for line in recorder.files["trace"].splitlines()]
    cited = [(r["paragraph"], r["locator"]) for r in trace if r["type"] == "paragraph"
             and r["items"]]  # fmt: skip
    assert cited == [(0, {"page": 1}), (2, {"page": 2})]


def test_parts_land_before_the_first_file_and_a_longer_versions_leftovers_go(
    tmp_path: Path,
) -> None:
    from taguru_ray.contract.names import output_name
    from taguru_ray.engine.recorder import StoreRecorder
    from taguru_ray.engine.scan import existing_contribution
    from taguru_ray.pipeline.parts import part_name
    from taguru_ray.store.journal import Journal

    out = OutDir(str(tmp_path))
    recorder = StoreRecorder(out, "d/a.pdf", journal=Journal(out), trace_attempts=False,
                             sidecar=None, sidecar_path=None)  # fmt: skip

    def part(number: int, subject: str) -> bytes:
        header = {"type": "source", "version": "2026-09-17", "id": f"d/a.pdf/part-00{number}",
                  "context_id": "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"}  # fmt: skip
        line = {"subject": subject, "label": "ships", "object": "Gin", "weight": 1.0}
        return (json.dumps(header) + "\n" + json.dumps(line) + "\n").encode()

    asyncio.run(recorder.finish(part(1, "A"), b"", (part(2, "B"), part(3, "C"))))
    names = [output_name("d/a.pdf"), part_name("d/a.pdf", 2), part_name("d/a.pdf", 3)]
    assert all((tmp_path / name).exists() for name in names)
    offered = existing_contribution(out, names[0], "d/a.pdf")
    assert {"A", "B", "C"} <= set(offered.concept_names)
    asyncio.run(recorder.finish(part(1, "A"), b"", ()))  # the document shrank to one file
    assert [(tmp_path / name).exists() for name in names] == [True, False, False]
