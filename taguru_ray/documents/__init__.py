"""Documents (PDF, DOCX, PPTX, HTML) converted to paragraphs, each with its locator.

Bytes in, `Converted` out: each module holds one format's converter on the library
ADR 0078 chose for it (`pdf.py` on pypdfium2, `docx.py` on python-docx, `pptx.py` on
python-pptx, `html.py` on trafilatura), no I/O of its own. What cannot be converted is
a `DocumentRefused` whose message says why in one line. The converters run in a child
process with a time and memory limit (`store/converter.py`), so a document that hangs
one or eats its memory costs that document alone.
"""
