"""Documents in a folder, through the real CLI on the simulator (issue 47, item 2).

A folder with a two-page PDF, a DOCX, a PPTX, an HTML page and a PDF cut short: each
readable document writes a source file holding its text (the HTML page's article, not
its navigation, script or footer), the PDF's second-page paragraph carries page 2 in
the trace, `inspect` names the page, `report` tabulates facts by page, the broken PDF
is one line and the run exits 1. A rerun asks nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taguru_ray.contract.names import DOCUMENTS, TRACE, attempts_name, output_name
from taguru_ray.contract.source_file import parse_source_file
from tests import documents
from tests.support import CONTEXT, REPO, Cli

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _folder(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    (docs / "brewery.pdf").write_bytes(documents.two_page_pdf())
    (docs / "report.docx").write_bytes(documents.report_docx())
    (docs / "ferry.PPTX").write_bytes(documents.deck_pptx())
    (docs / "canal.html").write_bytes(documents.article_html())
    (docs / "torn.pdf").write_bytes(documents.cut_pdf())
    return docs


def _trace(out: Path, source: str) -> list[dict[str, object]]:
    text = (out / TRACE / output_name(source)).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_a_folder_of_documents_writes_each_and_names_the_broken_one(
    cli: Cli, tmp_path: Path
) -> None:
    docs, out = _folder(tmp_path), tmp_path / "out"
    ran = cli.extract(str(docs), "--context", CONTEXT, "--out", str(out))
    assert ran.returncode == 1, ran.stderr
    torn = [line for line in ran.stderr.splitlines() if "torn.pdf" in line]
    assert len(torn) == 1 and "not a readable PDF (cut short, or damaged)" in torn[0], torn
    assert "Traceback" not in ran.stderr
    assert "extract: 4 written, 0 unchanged, 1 failed of 5 segment(s)" in ran.stdout

    passages = {}
    for name in ("brewery.pdf", "report.docx", "ferry.PPTX", "canal.html"):
        source = f"{docs}/{name}"
        parsed = parse_source_file((out / output_name(source)).read_bytes())
        passages[name] = parsed.passage.text if parsed.passage else ""
        assert parsed.associations, name  # the simulator found names in its text
    assert documents.PAGE_TWO in passages["brewery.pdf"]
    assert "Toyama Depot" in passages["report.docx"]
    assert "Uno Port berth" in passages["ferry.PPTX"]  # the speaker notes too
    canal = passages["canal.html"]
    assert "Keage Incline" in canal
    for boilerplate in (documents.FOOTER, documents.SCRIPT, "Careers"):
        assert boilerplate not in canal

    # The PDF's second-page paragraph carries page 2, and facts cite it.
    trace = _trace(out, f"{docs}/brewery.pdf")
    assert trace[0]["converter"].startswith("pdf:pypdfium2 ")  # type: ignore[union-attr]
    paragraphs = [r for r in trace if r["type"] == "paragraph"]
    assert [r["locator"] for r in paragraphs] == [{"page": 1}, {"page": 1}, {"page": 2}]
    assert paragraphs[2]["items"] > 0  # type: ignore[operator]
    report = _trace(out, f"{docs}/report.docx")
    headings = [r["locator"] for r in report if r["type"] == "paragraph"]
    assert {"headings": ["Annual Report", "Fleet"]} in headings

    # inspect names the page of each piece.
    log = out / TRACE / attempts_name(f"{docs}/brewery.pdf")
    shown = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "inspect", str(log)],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    assert "[pages 1–2]" in shown.stdout, shown.stdout
    # report tabulates the facts by page, slide or heading.
    page = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "taguru_ray", "report", str(out), "--html", str(page)],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    html = page.read_text(encoding="utf-8")
    assert "Where the facts came from" in html
    assert "<td>page 2</td>" in html and "<td>slide 1 notes</td>" in html
    assert '<span class="loc">page 2</span>' in html  # beside the paragraph and its facts

    # A rerun asks nothing; the text each document converted to is kept in --out, by
    # converter and digest (`tests/test_documents.py` shows a resume reads it back).
    assert len(sorted((out / DOCUMENTS).rglob("*.json"))) == 4
    cli.simulator.reset()
    again = cli.extract(str(docs), "--context", CONTEXT, "--out", str(out))
    assert again.returncode == 1 and cli.simulator.stats()["requests"] == 0
    assert "extract: 0 written, 4 unchanged, 1 failed" in again.stdout
