"""What is checked of a DOCX or PPTX (a zip of XML parts) before its library opens it.

An Office file with a password is no zip at all but an OLE container (as is a ``.doc``
or ``.ppt`` renamed); a cut-short one has no central directory; a zip bomb declares
parts that expand far past anything a document needs. Each is refused in one line
before python-docx or python-pptx reads a part. The sizes checked are those the zip
declares: Python's zip reader never inflates a part past its declared size (it fails
the part's CRC instead), and the child process's memory limit stands behind both.
"""

from __future__ import annotations

import io
import zipfile

from taguru_ray.documents.converted import DocumentRefused

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# A part may expand to at most this much, and all of them together to EXPANDED_LIMIT:
# the largest real DOCX/PPTX parts measured (ADR 0078) are a few MiB of XML.
PART_LIMIT = 256 << 20
EXPANDED_LIMIT = 1 << 30
PARTS_LIMIT = 20_000


def check_zip(data: bytes, kind: str) -> None:
    """Refuse what is not a sane zip of parts, naming why; return when it is one."""
    name = kind.upper()
    if data.startswith(OLE_MAGIC):
        raise DocumentRefused(
            f"encrypted, or a legacy binary Office file renamed (an OLE container, not a "
            f"{name} zip) — remove the password, or save it as {name}"
        )
    if not data.startswith(b"PK"):
        raise DocumentRefused(f"not a {name} (no zip archive) — save it as {name} again")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
        raise DocumentRefused(
            f"cut short or damaged (its zip archive cannot be read: {error}) — save it again"
        ) from None
    if len(parts) > PARTS_LIMIT:
        raise DocumentRefused(f"a zip of {len(parts)} parts, past the {PARTS_LIMIT} allowed")
    expanded = 0
    for part in parts:
        if part.flag_bits & 0x1:
            raise DocumentRefused(f"encrypted (part {part.filename!r}) — remove the password")
        if part.file_size > PART_LIMIT:
            raise DocumentRefused(_bomb(part.file_size, len(data), f"part {part.filename!r}"))
        expanded += part.file_size
    if expanded > EXPANDED_LIMIT:
        raise DocumentRefused(_bomb(expanded, len(data), "its parts"))


def _bomb(size: int, packed: int, what: str) -> str:
    ratio = size // max(packed, 1)
    return (
        f"a zip bomb? {what} would expand to {size >> 20} MiB ({ratio}:1 from "
        f"{packed} bytes), past the {PART_LIMIT >> 20} MiB a part / "
        f"{EXPANDED_LIMIT >> 20} MiB a document allowed"
    )
