"""Converted documents kept in ``--out``, by converter and content (ADR 0078).

``<out>/.extract-documents/<converter>/<digest>.json``: a document's paragraphs and
locators as its converter gave them, named by the converter and its version and by
the sha256 of the document's bytes — so a resume, a rerun with other settings, or the
same file under another name never converts it twice, and a new converter version
never reads an old one's text. An entry is written whole (`OutDir.write`); one that
cannot be read back is converted again, and written over.
"""

from __future__ import annotations

import json
import re

from taguru_ray.contract.names import DOCUMENTS
from taguru_ray.documents.converted import Converted
from taguru_ray.store.outdir import OutDir

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def entry_name(converter: str, digest: str) -> str:
    """``.extract-documents/pdf-pypdfium2-5.15.2-1/<digest>.json``."""
    return f"{DOCUMENTS}/{_UNSAFE.sub('-', converter).strip('-')}/{digest}.json"


def load(out: OutDir, converter: str, digest: str) -> Converted | None:
    try:
        data = out.read(entry_name(converter, digest))
    except OSError:
        return None
    if data is None:
        return None
    try:
        return Converted.from_json(json.loads(data))
    except ValueError:
        return None


def save(out: OutDir, converter: str, digest: str, converted: Converted) -> None:
    out.write(entry_name(converter, digest), converted.dumps())
