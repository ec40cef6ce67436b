"""Documents of each kind, made here reproducibly, for the tests of issue 47 item 2.

A two-page PDF with a text layer (fpdf2), a DOCX with headings and a table
(python-docx), a PPTX with a title, a bullet body and speaker notes (python-pptx), an
HTML page whose article sits between a navigation bar, a script and a footer, and the
broken ones: a PDF cut short, an encrypted PDF, a PDF with no text layer (a drawing
only: what a scan looks like to a text extractor), a zip bomb posing as a DOCX.
Each text names things the simulator's rule-based extractor picks up, so a run writes
associations citing them.
"""

from __future__ import annotations

import datetime
import io
import zipfile

import docx
import pptx
from fpdf import FPDF

PAGE_ONE = [
    "Kuroshio Brewery brews Junmai sake in Kochi.",
    "The Kochi Prefecture guild certifies Kuroshio Brewery every spring.",
]
PAGE_TWO = "Aomori Distillery ships Tsugaru Gin to Sapporo through Hakodate Port."
NAV = "Home Products Careers Contact"
SCRIPT = "window.trackingPixel = 'beacon-7731';"
FOOTER = "Copyright Example Holdings. All rights reserved. Privacy Policy."


def _pdf(**options: str) -> FPDF:
    pdf = FPDF()
    pdf.set_creation_date(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    pdf.set_font("helvetica", size=12)
    return pdf


def two_page_pdf() -> bytes:
    pdf = _pdf()
    pdf.add_page()
    for text in PAGE_ONE:
        pdf.multi_cell(0, 8, text)
        pdf.ln(8)
    pdf.add_page()
    pdf.multi_cell(0, 8, PAGE_TWO)
    return bytes(pdf.output())


def encrypted_pdf() -> bytes:
    pdf = _pdf()
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.add_page()
    pdf.multi_cell(0, 8, PAGE_TWO)
    return bytes(pdf.output())


def scanned_pdf() -> bytes:
    """Pages with no text layer: shapes only, as a scan's image is to a text extractor."""
    pdf = _pdf()
    pdf.add_page()
    pdf.rect(20, 20, 120, 60, style="F")
    pdf.add_page()
    pdf.ellipse(30, 30, 80, 40)
    return bytes(pdf.output())


def cut_pdf() -> bytes:
    data = two_page_pdf()
    return data[: len(data) // 2]


def report_docx() -> bytes:
    document = docx.Document()
    document.add_heading("Annual Report", level=1)
    document.add_paragraph("Hokuriku Rail operates the Kanazawa Line with Toyama Depot.")
    document.add_heading("Fleet", level=2)
    document.add_paragraph("Hokuriku Rail retired the Series 413 trains in Kanazawa.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Depot"
    table.cell(0, 1).text = "Toyama Depot"
    table.cell(1, 0).text = "Trains"
    table.cell(1, 1).text = "Series 521"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def deck_pptx() -> bytes:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Setouchi Ferry Plan"
    body = slide.placeholders[1].text_frame
    body.text = "Setouchi Ferry links Takamatsu Port and Naoshima Island."
    body.add_paragraph().text = "Shodoshima Line adds a Uno Port stop."
    slide.notes_slide.notes_text_frame.text = "Ask Kagawa Prefecture about the Uno Port berth."
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Budget"
    second.placeholders[1].text_frame.text = "Kagawa Prefecture funds the Naoshima Island pier."
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def article_html() -> bytes:
    article = "".join(
        f"<p>{text}</p>"
        for text in (
            "Biwako Canal Museum explains how Lake Biwa water reaches Kyoto City. The canal "
            "was dug between 1885 and 1890 to carry water, boats and power to the city.",
            "Keage Incline lifted boats between Lake Biwa and Kyoto City on rails. The incline "
            "ran for nearly half a century before the boats stopped.",
            "Nanzenji Aqueduct still carries canal water past the temple gardens today, and "
            "visitors walk along its brick arches in every season of the year.",
        )
    )
    return (
        "<!DOCTYPE html><html><head><title>Biwako Canal</title>"
        f"<script>{SCRIPT}</script><style>nav {{ color: red }}</style></head><body>"
        f"<nav><ul>{''.join(f'<li><a href=/{w}>{w}</a></li>' for w in NAV.split())}</ul></nav>"
        "<main><article><h1>The Biwako Canal</h1>"
        f"<h2>History</h2>{article}</article></main>"
        f"<footer><p>{FOOTER}</p></footer></body></html>"
    ).encode()


def zip_bomb_docx() -> bytes:
    """A zip whose one part declares gigabytes: what a decompression bomb looks like."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            block = b"\0" * (1 << 20)
            for _ in range(300):
                part.write(block)
    return buffer.getvalue()


def swollen_docx(paragraphs: int = 400_000) -> bytes:
    """A real DOCX whose body is `paragraphs` short paragraphs: tens of MiB of XML that
    compress to little (under the zip-bomb limits) and take hundreds of MiB to parse —
    a document that eats memory past a converter's limit."""
    source = zipfile.ZipFile(io.BytesIO(report_docx()))
    body = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body>" + "<w:p><w:r><w:t>Shinano River floods Niigata.</w:t></w:r></w:p>" * paragraphs
        + "</w:body></w:document>"
    ).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in source.infolist():
            data = body if item.filename == "word/document.xml" else source.read(item.filename)
            archive.writestr(item.filename, data)
    return buffer.getvalue()


def write_examples(folder: str) -> None:
    """The README's documents example (`examples/documents`): a PDF, a DOCX, a PPTX and an
    HTML page, made here (``python -m tests.documents examples/documents``)."""
    from pathlib import Path

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    made = {
        "brewery.pdf": two_page_pdf(),
        "rail-report.docx": report_docx(),
        "ferry-plan.pptx": deck_pptx(),
        "biwako-canal.html": article_html(),
    }
    for name, data in made.items():
        (target / name).write_bytes(data)


if __name__ == "__main__":
    import sys

    write_examples(sys.argv[1] if len(sys.argv) > 1 else "examples/documents")
