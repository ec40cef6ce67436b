"""Which files are documents, and which converter (and version) reads each kind.

The converter's name and version are a compute input (the manifest's ``converter``,
ADR 0078): a new library version, or a change to how this package turns its output
into paragraphs (`LAYOUT_VERSION`), can change a document's text, so a rerun under it
converts and extracts again.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

# The suffixes a folder contributes as documents, case-insensitive (``Report.PDF``
# is as much a PDF as ``report.pdf``); ``.md``/``.txt`` stay case-sensitive, as the
# reference reads them.
KINDS = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".html": "html", ".htm": "html"}
DOCUMENT_SUFFIXES = tuple(KINDS)
# The library each kind is read with (its PyPI name, for its version).
LIBRARIES = {
    "pdf": "pypdfium2",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "html": "trafilatura",
}
# How this package turns a library's output into paragraphs and locators; bump it when
# that changes what a document's text is.
LAYOUT_VERSION = 1


def kind_of(source: str) -> str | None:
    """The document kind of a source path (``pdf``, ``docx``, ``pptx``, ``html``), or
    None for anything else (a ``.md``/``.txt`` segment, a dataset row)."""
    dot = source.rfind(".")
    if dot < 0 or "/" in source[dot:]:
        return None
    return KINDS.get(source[dot:].lower())


def is_document(source: str) -> bool:
    return kind_of(source) is not None


def library_version(kind: str) -> str:
    library = LIBRARIES[kind]
    try:
        return version(library)
    except PackageNotFoundError:
        return "missing"


def converter_id(kind: str) -> str:
    """The compute input naming a kind's converter: ``pdf:pypdfium2 5.15.2/1``."""
    return f"{kind}:{LIBRARIES[kind]} {library_version(kind)}/{LAYOUT_VERSION}"
