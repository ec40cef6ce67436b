"""One entry for every kind: bytes in, `Converted` out, or a one-line `DocumentRefused`.

A library that fails in a way its converter module did not foresee (its own bug, a
malformed input it chokes on) is still one line naming the library, never a traceback:
the document fails alone, and the line says what to report.
"""

from __future__ import annotations

import importlib

from taguru_ray.documents.converted import Converted, DocumentRefused
from taguru_ray.documents.kinds import LIBRARIES

MODULES = {"pdf": "pdf", "docx": "docx", "pptx": "pptx", "html": "html"}


def convert(kind: str, data: bytes) -> Converted:
    if kind not in MODULES:
        raise DocumentRefused(f"no converter for {kind!r} documents")
    try:  # imported on first use: trafilatura alone takes a second to import
        module = importlib.import_module(f"taguru_ray.documents.{MODULES[kind]}")
    except ImportError as error:
        raise DocumentRefused(
            f"its converter {LIBRARIES[kind]} is not installed ({error}) — reinstall taguru-ray"
        ) from None
    try:
        converted: Converted = module.convert(data)
    except DocumentRefused:
        raise
    except RecursionError:
        raise DocumentRefused("nested too deep to convert — simplify the document") from None
    except MemoryError:
        raise DocumentRefused("needs more memory to convert than its limit allows") from None
    except Exception as error:
        text = " ".join(str(error).split())[:200]
        raise DocumentRefused(
            f"{LIBRARIES[kind]} could not convert it ({type(error).__name__}"
            f"{': ' + text if text else ''}) — export it again; if it opens elsewhere, "
            "report it"
        ) from None
    return converted
