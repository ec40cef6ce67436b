"""Names of the files written per segment, and the source id a header carries.

CONTRACT.md section 1: the output name is ``flatten(source)`` + ``-`` + the
first 16 hex of sha256(source) + ``.jsonl``; the checkpoint, trace and
attempts log share that stem. The hash keeps two inputs that flatten alike
(``a/b.md`` and ``a__b.md``) apart.

A dataset row's source is its shard's path, ``#`` and the row's id
(``data/part-0.parquet#doc-7``, ADR 0075). Its id is the dataset's, any text at
all, so its name keeps only ASCII letters, digits, ``.``, ``_`` and ``-`` of the
flattened source (every other character one ``_``): a name safe on every
filesystem and in every object-store URL (no ``#``, ``?``, ``%``, ``*``, ``"``,
``<``, ``>``, ``|`` or space), still unique and stable by the same hash of the
whole source. A source ending in ``.md`` or ``.txt`` keeps the reference's name
whatever it holds, so no name the reference gives changes.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
import shlex

from taguru_ray.contract.control_chars import unsafe

MAX_FLAT_BYTES = 120
CUT_FLAT_BYTES = 96

# The names a segment file has (the reference's) and those a dataset's shards have.
SEGMENT_SUFFIXES = (".md", ".txt")
DATASET_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".csv")
ROW_MARK = "#"
# A shard's name, then the row mark: the first such place splits a row source.
_ROW = re.compile(r"\.(?:parquet|jsonl\.gz|jsonl|csv)#", re.DOTALL)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

# What --out holds besides the source files (README "What --out holds").
MANIFEST = ".extract-manifest.json"
MANIFEST_JOURNAL = ".extract-manifest.d"
LOCK = ".extract.lock"
CHECKPOINTS = ".extract-checkpoints"
TRACE = ".extract-trace"
DOCUMENTS = ".extract-documents"  # converted documents' text, by converter and digest
RETIRED = ".extract-retired"  # segments --prune retired, and their records (ADR 0083)


def flatten(source: str) -> str:
    """Replace each ``/``, ``\\`` and ``:`` with ``__`` and each control, line-separator or
    bidi character with ``_`` (a file name must not rewrite the terminal that lists it;
    the digest after it keeps names apart); cut long names to ≤ 96 bytes."""
    flat = source.replace("/", "__").replace("\\", "__").replace(":", "__")
    # Printable ASCII holds none (checking by character showed in a million-segment skip).
    if not (flat.isascii() and flat.isprintable()) and any(unsafe(char) for char in flat):
        flat = "".join("_" if unsafe(char) else char for char in flat)
    encoded = flat.encode("utf-8")
    if len(encoded) > MAX_FLAT_BYTES:
        flat = encoded[:CUT_FLAT_BYTES].decode("utf-8", errors="ignore")
    return flat


def row_source(shard: str, row_id: str) -> str:
    """A dataset row's source: its shard's path as seen, ``#``, its id."""
    return f"{shard}{ROW_MARK}{row_id}"


def split_row(source: str) -> tuple[str, str] | None:
    """(shard, id) of a row source; None for any other source (a file's path, and any
    source ending in ``.md`` or ``.txt``, whose name stays the reference's)."""
    if ROW_MARK not in source or source.endswith(SEGMENT_SUFFIXES):
        return None
    found = _ROW.search(source)
    if found is None:
        return None
    return source[: found.end() - 1], source[found.end() :]


def _row_flat(source: str) -> str:
    """A row's flattened source, every character but ``[A-Za-z0-9._-]`` one ``_``: ASCII,
    so a cut to 96 bytes is a cut to 96 characters."""
    flat = _UNSAFE.sub("_", source.replace("/", "__").replace("\\", "__").replace(":", "__"))
    return flat if len(flat) <= MAX_FLAT_BYTES else flat[:CUT_FLAT_BYTES]


# A segment's names are asked for several times (the scan, the manifest check, its
# checkpoint, trace and attempts log); a hash per ask showed in the skip path.
@functools.lru_cache(maxsize=4096)
def output_stem(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    flat = _row_flat(source) if split_row(source) is not None else flatten(source)
    return f"{flat}-{digest}"


def output_name(source: str) -> str:
    """The source file's name inside --out (also the trace's name)."""
    return output_stem(source) + ".jsonl"


def checkpoint_name(source: str) -> str:
    return output_stem(source) + ".json"


def attempts_name(source: str) -> str:
    return output_stem(source) + ".attempts.jsonl"


def file_stem(source: str) -> str:
    """The file name minus its last extension: what ``--source-id ID/<stem>`` appends;
    a row's is its shard's, ``#`` and its id (``part-0#doc-7``)."""
    row = split_row(source)
    if row is not None:
        return file_stem(row[0]) + ROW_MARK + row[1]
    base = posixpath.basename(source.replace("\\", "/"))
    stem, dot, _ = base.rpartition(".")
    return stem if dot and stem else base


def written_id(source: str, source_id: str | None, several: bool) -> str:
    """The id a header carries: the input path, ``ID``, or ``ID/<stem>`` for several segments."""
    if source_id is None:
        return source
    return f"{source_id}/{file_stem(source)}" if several else source_id


def join(out: str, name: str) -> str:
    """`batch_path`: ``<--out>/<name>`` joined as the user wrote --out."""
    return out + name if out.endswith("/") else f"{out}/{name}"


INSPECT_VERB = "taguru-ray inspect"
SHORT_ID = 12  # the piece id as failure lines print it


def inspect_command(log: str, piece_id: str) -> str:
    """The command that opens one piece: the log path shell-quoted only when it needs it.
    One spelling for the failure lines, `inspect`'s own footer and the metric tables."""
    return f"{INSPECT_VERB} {shlex.quote(log)} --piece {piece_id[:SHORT_ID]}"
