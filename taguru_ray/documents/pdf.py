"""A PDF's text layer, a paragraph at a time, each with its page (pypdfium2, ADR 0078).

PDFium gives a page's text as lines; a PDF has no paragraphs, so they are found from
the lines' boxes the way a reader sees them: a paragraph ends where the next line
starts further down than line spacing explains, moves up (a new column), is indented
past the line before, or where a line stops well short of the text's right edge. A
paragraph never runs across a page: the second half of one split by a page break is
its own paragraph, with its own page.
"""

from __future__ import annotations

from dataclasses import dataclass

import pypdfium2 as pdfium

from taguru_ray.documents.converted import Converted, DocumentRefused, Locator, located

OCR = "OCR is not built into taguru-ray: give it a text layer first (an OCR tool), then extract it"
_WHY = {
    pdfium.raw.FPDF_ERR_PASSWORD: "encrypted (it needs a password) — decrypt it, then extract it",
    pdfium.raw.FPDF_ERR_FORMAT: "not a readable PDF (cut short, or damaged) — export it again",
    pdfium.raw.FPDF_ERR_FILE: "not a readable PDF — export it again",
    pdfium.raw.FPDF_ERR_SECURITY: "uses an unsupported security handler — decrypt it first",
}


@dataclass(frozen=True)
class _Line:
    text: str
    left: float
    bottom: float
    right: float
    top: float


def convert(data: bytes) -> Converted:
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        code = getattr(error, "err_code", None)
        raise DocumentRefused(_WHY.get(code, f"not a readable PDF ({error})")) from None
    try:
        pages = len(document)
        if pages == 0:
            raise DocumentRefused("holds no pages")
        found: list[tuple[str, Locator]] = []
        empty: list[int] = []
        for number in range(1, pages + 1):
            page = document[number - 1]
            try:
                paragraphs = page_paragraphs(page)
            finally:
                page.close()
            if not paragraphs:
                empty.append(number)
            found.extend((text, {"page": number}) for text in paragraphs)
    except pdfium.PdfiumError as error:
        raise DocumentRefused(f"a page could not be read ({error}) — export it again") from None
    finally:
        document.close()
    kept = located(found)
    if not kept:
        raise DocumentRefused(f"has no text layer (a scanned PDF?) — {OCR}")
    notes = ()
    if empty:
        notes = (f"{_pages(empty)} no text (blank, or scanned: {OCR})",)
    return Converted("pdf", kept, notes)


def _pages(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:10]) + (", …" if len(numbers) > 10 else "")
    return f"page {shown} has" if len(numbers) == 1 else f"{len(numbers)} pages ({shown}) have"


def page_paragraphs(page: pdfium.PdfPage) -> list[str]:
    """The paragraphs of one page's text layer, in PDFium's reading order."""
    textpage = page.get_textpage()
    try:
        lines = _lines(textpage)
    finally:
        textpage.close()
    if not lines:
        return []
    right = max(line.right for line in lines)
    paragraphs: list[list[str]] = [[]]
    previous: _Line | None = None
    for line in lines:
        if previous is not None and _breaks(previous, line, right):
            paragraphs.append([])
        paragraphs[-1].append(line.text)
        previous = line
    return [_joined(lines) for lines in paragraphs]


def _lines(textpage: pdfium.PdfTextPage) -> list[_Line]:
    """The page's non-blank lines with their boxes. PDFium's text holds a generated
    ``\\r\\n`` at each line end, which counts as characters, so a line's first and last
    characters are found by offset in that text."""
    count = textpage.count_chars()
    if count <= 0:
        return []
    text = textpage.get_text_range(0, count)
    lines: list[_Line] = []
    start = 0
    for raw in text.split("\r\n"):
        end = start + len(raw)
        stripped = raw.rstrip()
        if stripped.strip() and end <= count:
            last = start + len(stripped) - 1
            left, bottom, _, top = textpage.get_charbox(start, loose=True)
            _, _, right, _ = textpage.get_charbox(last, loose=True)
            lines.append(_Line(raw.strip(), left, bottom, right, top))
        start = end + 2
    return lines


def _breaks(before: _Line, line: _Line, right: float) -> bool:
    height = max(before.top - before.bottom, 1.0)
    return (
        before.bottom - line.top > 0.5 * height  # more space than line spacing
        or line.top > before.top + 0.5 * height  # back up the page: another column
        or line.left - before.left > 0.5 * height  # indented: a new paragraph, or code
        or before.right < right - 2 * height  # the line before stopped short
    )


def _joined(lines: list[str]) -> str:
    """A paragraph's lines as one: a line ending in a soft hyphen (PDFium's ``\\x02``)
    joins the next without a space, others with one."""
    out = ""
    for text in lines:
        if out.endswith("\x02"):
            out = out[:-1] + text
        elif out:
            out = f"{out} {text}"
        else:
            out = text
    return out
