"""Pages per second converted per core, for a corpus of text-layer PDFs (issue 47, item 5).

SPEC section 7 asks text-layer PDFs to convert at or above docling's published 0.6–0.9
pages/s per core (a Xeon core). This measures taguru-ray's PDF converter
(`taguru_ray/documents/pdf.py`, pypdfium2 plus the paragraph layout, ADR 0078) on:

- a generated corpus: `documents` PDFs of `pages` pages of running text each, written
  with fpdf2 (a test dependency) into the work folder, the same bytes every run;
- a real one when given (``--pdf-corpus DIR``: every ``*.pdf`` in it, for example
  Debian's r-doc-pdf manuals in /usr/share/R/doc/manual — the ADR's figures).

Each corpus is converted twice: in this process, timed by its CPU time (pages per
CPU-second is pages per second per core: PDFium converts on one thread); and through
the converter child a segment worker uses (`engine/converter.py`), timed by the
child's own CPU (its rusage once it ended) and by the wall clock, which adds the
document's trip over the pipe. What the comparison leaves out is in `leaves_out`.

Run alone: ``python -m benchmarks.documents [--pdf-corpus DIR]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

DOCLING_PAGES_PER_CORE = (0.6, 0.9)  # docling's published figures, per Xeon core
LEAVES_OUT = (
    "docling runs layout analysis and table-structure models (and OCR when asked) on every "
    "page, and reads reading order, tables and figures; taguru-ray reads the text layer "
    "PDFium gives and finds paragraphs from line geometry, with no model, no OCR and no "
    "table structure — so it is the text-layer PDF case only, where docling does work this "
    "converter does not; and docling's figure is its own machine's, not measured here"
)
RUNNING_TEXT = (
    "Kuroshio Brewery ships Junmai sake from Kochi Port to Osaka Bay every spring while "
    "the prefecture guild audits its rice polishing records and the Tosa Line carries "
    "visitors to the cellar doors along the river"
)


def write_corpus(folder: Path, documents: int, pages: int) -> list[Path]:
    """`documents` PDFs of `pages` pages each, paragraphs of running text (same bytes each
    run: fixed creation date, no randomness)."""
    import datetime

    from fpdf import FPDF

    folder.mkdir(parents=True, exist_ok=True)
    vocabulary = RUNNING_TEXT.split()
    paths = []
    for number in range(documents):
        path = folder / f"doc-{number:04d}-{pages}p.pdf"
        paths.append(path)
        if path.exists():
            continue
        pdf = FPDF()
        pdf.set_creation_date(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
        pdf.set_font("helvetica", size=11)
        for page in range(pages):
            pdf.add_page()
            for paragraph in range(5):
                shift = number * 7 + page * 3 + paragraph
                words = [vocabulary[(shift + i) % len(vocabulary)] for i in range(70)]
                pdf.multi_cell(0, 6, f"{page + 1}.{paragraph + 1} " + " ".join(words) + ".")
                pdf.ln(4)
        pdf.output(str(path))
    return paths


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def convert_corpus(paths: list[Path]) -> dict[str, Any]:
    """The corpus converted in this process and through the converter child."""
    import pypdfium2

    from taguru_ray.documents.convert import convert
    from taguru_ray.engine.converter import Converter

    datas = [path.read_bytes() for path in paths]
    pages = sum(len(pypdfium2.PdfDocument(data)) for data in datas)
    convert("pdf", datas[0])  # imports and PDFium's start-up outside the timing
    started = _cpu()
    paragraphs = sum(len(convert("pdf", data).paragraphs) for data in datas)
    in_process = _cpu() - started
    converter = Converter(600, 2 << 30)
    converter.convert("pdf", datas[0])  # the child started and warm, as a worker's is
    child_before, wall = _children_cpu(), time.perf_counter()
    for data in datas:
        converter.convert("pdf", data)
    wall = time.perf_counter() - wall
    converter.close()  # reaped: its CPU is in RUSAGE_CHILDREN now (start-up and warm-up too)
    child_cpu = _children_cpu() - child_before
    per_core = pages / in_process if in_process > 0 else None
    return {
        "documents": len(paths),
        "pages": pages,
        "paragraphs": paragraphs,
        "bytes": sum(len(d) for d in datas),
        "in_process_cpu_s": round(in_process, 3),
        "pages_per_cpu_s": round(per_core, 1) if per_core else None,
        "child_wall_s": round(wall, 3),
        "child_pages_per_wall_s": round(pages / wall, 1) if wall > 0 else None,
        # The child's CPU counts its start and the warm-up document as well: a bound.
        "child_cpu_s_at_most": round(child_cpu, 3),
        "vs_docling": {
            f"{rate}_pages_per_s": round(per_core / rate, 1) if per_core else None
            for rate in DOCLING_PAGES_PER_CORE
        },
    }


def measure_documents(
    work: Path, documents: int, pages: int, real: Path | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "docling_pages_per_core": list(DOCLING_PAGES_PER_CORE),
        "leaves_out": LEAVES_OUT,
        "generated": convert_corpus(write_corpus(work / "pdf-corpus", documents, pages)),
    }
    if real is not None:
        found = sorted(real.glob("*.pdf"))
        result["real"] = (
            {"folder": str(real), **convert_corpus(found)} if found
            else {"skipped": f"no *.pdf in {real}"}
        )  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/taguru-ray-bench-documents"))
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--pdf-corpus", type=Path, help="a folder of real text-layer PDFs")
    args = parser.parse_args()
    print(json.dumps(
        measure_documents(args.work_dir, args.documents, args.pages, args.pdf_corpus), indent=2
    ))  # fmt: skip


if __name__ == "__main__":
    main()
