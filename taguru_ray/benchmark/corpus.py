"""The corpus of a benchmark and its segment dictionary (BENCHMARK.md §1.3).

Every cell's extract sees the same folder; the dictionary pins what it saw —
each segment's hash, paragraph count and chunk plan — so a changed corpus is
refused on resume and `compare` can place a locator in its chunk. Segment ids
are the paths relative to the corpus, `/` as `__`, the extension dropped; two
paths that give one id are told apart by their path's hash (the reference's
rule). Names follow the newest reference (`segments`, `segment_id`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES
from taguru_ray.pipeline.plan import plan_chunks
from taguru_ray.pipeline.read import SegmentRefused, read_segment
from taguru_ray.store.inputs import expand, read_source


class CorpusError(ValueError):
    """The corpus cannot be benchmarked; the message names the path."""


@dataclass(frozen=True)
class SegmentInfo:
    segment_id: str
    path: str
    bytes: int
    sha256: str
    paragraph_count: int
    chunks: tuple[dict[str, Any], ...]

    def entry(self) -> dict[str, Any]:
        return {
            "segment_id": self.segment_id,
            "path": self.path,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "paragraph_count": self.paragraph_count,
            "chunk_total": len(self.chunks),
            "chunks": list(self.chunks),
        }


def segment_ids(root: str, paths: list[str]) -> list[str]:
    """One id per path: relative to `root`, separators as `__`, the last extension gone;
    a clash gives each clashing path `-` and 16 hex of its path's sha256."""
    candidates = [_candidate(root, path) for path in paths]
    clashing = {c for c in candidates if candidates.count(c) > 1}
    return [
        f"{c}-{hashlib.sha256(path.encode('utf-8')).hexdigest()[:16]}" if c in clashing else c
        for c, path in zip(candidates, paths, strict=True)
    ]


def _candidate(root: str, path: str) -> str:
    prefix = root.rstrip("/\\") + "/"
    relative = path[len(prefix) :] if path.startswith(prefix) else path
    flat = relative.replace("/", "__").replace("\\", "__")
    dot = flat.rfind(".")
    return flat[:dot] if dot > 0 and "__" not in flat[dot:] else flat


def chunk_entries(text_paragraphs: Any, chunk_bytes: int) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "chunk_index": chunk.index,
            "chunk_sha256": chunk.sha256,
            "chunk_bytes": chunk.bytes,
            "paragraph_first": chunk.paragraph_first,
            "paragraph_last": chunk.paragraph_last,
        }
        for chunk in plan_chunks(text_paragraphs, chunk_bytes)
    )


def read_corpus(root: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> tuple[SegmentInfo, ...]:
    """The dictionary of every .md/.txt segment in `root`, in name order (extract's own
    enumeration); CorpusError names the folder or the file that cannot be used."""
    try:
        paths = expand([root])
    except ValueError as error:  # UsageError: the folder's own one-line message
        raise CorpusError(str(error)) from None
    if paths == [root]:
        raise CorpusError(f"{root}: not a folder — name the folder of the corpus")
    infos = []
    for ident, path in zip(segment_ids(root, paths), paths, strict=True):
        try:
            segment = read_segment(path, read_source(path))
        except OSError as error:
            raise CorpusError(f"{path}: cannot be read ({error.strerror or error})") from None
        except SegmentRefused as refusal:
            raise CorpusError(f"{path}: {refusal}") from None
        infos.append(
            SegmentInfo(
                segment_id=ident,
                path=path,
                bytes=segment.bytes,
                sha256=segment.sha256,
                paragraph_count=len(segment.paragraphs),
                chunks=chunk_entries(segment.paragraphs, chunk_bytes),
            )
        )
    return tuple(infos)
