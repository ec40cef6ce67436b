"""The shapes a corpus comes in, and what a reader of one promises (ADR 0075).

A run's inputs are read by *shape*: the reference's segment files (``.md``,
``.txt``), dataset shards (``.parquet``, ``.jsonl``, ``.jsonl.gz``, ``.csv``: a
row a segment, `store/datasets.py`), and whatever is added beside them (the
documents of issue 47: PDF, DOCX, PPTX, HTML). `SHAPES` is the one table of
them; a name's shape is `shape_of(name)`, by its ending (case-sensitive, as the
reference's ``.md``/``.txt``).

Every reader yields its segments as one or more `Part`s of the run's
`store.inputs.Corpus` — a run of consecutive segments with a source each (the
name the header, the manifest, every record and the output file's name carry)
and a `locator` (where in the input the segment sits: a file is its own; a
row is its shard and position). The driver reads each segment's bytes through
its part (`Part.read`) to hash them for the manifest skip and to send them to
the worker that extracts it; what those bytes become — text as they are, or a
document converted — is decided where the segment runs, by its shape
(`Corpus.shape`), never sniffed from the source (a row's id may end in
``.pdf``).

To add a shape: a `Shape` in `SHAPES` (its endings, whether a file of it holds
many segments, how much of a file the driver may read), and — for a shape
whose files each hold one segment — nothing else: `store/inputs.py` lists its
files as it lists ``.md`` files, and the segment arrives with its shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from taguru_ray.contract.items import MAX_PASSAGE_BYTES
from taguru_ray.contract.names import DATASET_SUFFIXES, SEGMENT_SUFFIXES
from taguru_ray.documents.kinds import DOCUMENT_SUFFIXES
from taguru_ray.pipeline.read import DOCUMENT_LIMIT


@dataclass(frozen=True)
class Shape:
    """One shape of input file.

    `rows`: a file of this shape holds many segments (a dataset shard), read as a
    stream in row order; otherwise each file is one segment, read whole.
    `read_limit`: the most bytes the driver reads of one segment — past the cap it
    only needs to know the segment is over it.
    `any_case`: its endings match in any case (``Report.PDF``).
    """

    name: str
    suffixes: tuple[str, ...]
    rows: bool = False
    read_limit: int = MAX_PASSAGE_BYTES + 4  # a leading BOM does not count against the cap
    any_case: bool = False

    def reads(self, name: str) -> bool:
        return (name.lower() if self.any_case else name).endswith(self.suffixes)


TEXT = Shape("text", SEGMENT_SUFFIXES)
DATASET = Shape("dataset", DATASET_SUFFIXES, rows=True)
# PDF, DOCX, PPTX, HTML: a file one segment, read whole (to the document cap) and
# converted where the segment runs (ADR 0078); named in any case, as exporters do.
DOCUMENT = Shape("document", DOCUMENT_SUFFIXES, read_limit=DOCUMENT_LIMIT + 1, any_case=True)
SHAPES: tuple[Shape, ...] = (TEXT, DATASET, DOCUMENT)


def shape_of(name: str) -> Shape | None:
    """The shape a file of this name is read as; None: not an input file."""
    return next((shape for shape in SHAPES if shape.reads(name)), None)


@dataclass(frozen=True)
class Locator:
    """Where a segment sits in its input: a file (`row` None), or a dataset's row — its
    shard, its position there (0-based, in file order) and its id."""

    path: str
    row: int | None = None
    row_id: str | None = None


class Part(Protocol):
    """A run of consecutive segments one reader yields (a file, a folder's files, a
    shard's rows). Offsets are 0-based within the part."""

    # Read in order, one batch at a time: the scan never asks two batches of a serial
    # part at once (`engine/ahead.py`), so a reader may keep one stream open.
    serial: bool

    def __len__(self) -> int: ...

    def source(self, offset: int) -> str:
        """Segment `offset`'s source."""
        ...

    def shape(self, offset: int) -> Shape: ...

    def locator(self, offset: int) -> Locator: ...

    def read(self, offset: int) -> bytes:
        """Segment `offset`'s bytes (at most the shape's `read_limit`). `OSError` when it
        cannot be read, `pipeline.read.SegmentRefused` when it is not a segment as it is
        (a null text, a duplicate id): either names why, for a line of its own."""
        ...
