"""A run's segments in order: the parts its readers yielded, one source list (ADR 0075).

`Corpus` is what `store.inputs.expand` returns and what the driver scans: a
sequence of sources, equal to a list of the same strings, made of `Part`s
(`store/shapes.py`) — a file, a folder's files, a dataset shard's rows, or a
`Broken` input that could not be listed (its one source fails by name, so the
run names it and exits 1, and nothing is skipped in silence). A segment's
bytes are read through its part (`read`), its shape and locator asked of it.

Sources are held compactly, never a million strings: a folder's names are
front-coded (`store/front_coded.py`: about 7 bytes a name where a path string
costs over a hundred, ADR 0042), a shard's row ids are one Arrow array, and a
path is made when asked for.

`row_sources(shard)` — every row source of one dataset shard the corpus holds —
reads no row text. `covering` is what each argument covers, read or not
(`store/cover.py`): what ``--prune`` judges the manifest against
(`store/orphans.py`, ADR 0083).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import overload

from taguru_ray.documents.kinds import kind_of
from taguru_ray.pipeline.read import SegmentRefused
from taguru_ray.store.cover import Cover
from taguru_ray.store.front_coded import FrontCoded
from taguru_ray.store.regular import read_regular
from taguru_ray.store.shapes import DOCUMENT, TEXT, Locator, Part, Shape, shape_of


class FilePart:
    """One file named as it is, read whole (to its shape's limit)."""

    serial = False

    def __init__(self, path: str, shape: Shape = TEXT) -> None:
        self.path = path
        self._shape = shape

    def __len__(self) -> int:
        return 1

    def source(self, offset: int) -> str:
        return self.path

    def shape(self, offset: int) -> Shape:
        return self._shape

    def locator(self, offset: int) -> Locator:
        return Locator(self.path)

    def read(self, offset: int) -> bytes:
        return read_regular(self.path, self._shape.read_limit)


class FolderPart:
    """A folder's files (or a tree's, their paths relative to it), in name order."""

    serial = False

    def __init__(self, folder: str, names: Sequence[str]) -> None:
        self.prefix = folder if folder.endswith("/") else folder + "/"
        self._names = FrontCoded()
        for name in names:
            self._names.append(name.encode("utf-8", "surrogatepass"))

    def append(self, name: str) -> None:
        """One more name, after every name it holds (a walk's stream)."""
        self._names.append(name.encode("utf-8", "surrogatepass"))

    def __len__(self) -> int:
        return len(self._names)

    def name(self, offset: int) -> str:
        return self._names[offset].decode("utf-8", "surrogatepass")

    def source(self, offset: int) -> str:
        return self.prefix + self.name(offset)

    def sources(self) -> Iterator[str]:
        for name in self._names:
            yield self.prefix + name.decode("utf-8", "surrogatepass")

    def shape(self, offset: int) -> Shape:
        return shape_of(self.name(offset)) or TEXT

    def locator(self, offset: int) -> Locator:
        return Locator(self.source(offset))

    def read(self, offset: int) -> bytes:
        return read_regular(self.source(offset), self.shape(offset).read_limit)


class Broken:
    """An input no reader could open — a folder that cannot be listed, a shard whose
    footer or header is unreadable, a column it lacks: one source, failing by name."""

    serial = False

    def __init__(self, path: str, why: str, shape: Shape = TEXT) -> None:
        self.path = path
        self.why = why
        self._shape = shape

    def __len__(self) -> int:
        return 1

    def source(self, offset: int) -> str:
        return self.path

    def shape(self, offset: int) -> Shape:
        return self._shape

    def locator(self, offset: int) -> Locator:
        return Locator(self.path)

    def read(self, offset: int) -> bytes:
        raise SegmentRefused(self.why)


class Corpus(Sequence[str]):
    """The sources of a run in order, a part at a time; equal to a list of the same paths.

    `arguments` counts the positional arguments the parts came from: sources of one
    argument never repeat but for a dataset's duplicate ids, which its reader refuses
    by name. `notes` are the lines the listing has for the user (what it did not
    read), said before the first segment.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []  # the index each part starts at
        self._parts: list[Part] = []
        self._count = 0
        self.arguments = 0
        self.notes: list[str] = []
        # What each argument covers, read or not (`store/cover.py`): what --prune judges.
        self.covering: list[Cover] = []

    def add(self, part: Part) -> None:
        if not len(part):
            return
        self._starts.append(self._count)
        self._parts.append(part)
        self._count += len(part)

    def add_file(self, path: str) -> None:
        self.add(FilePart(path, shape_of(path) or TEXT))

    def add_folder(self, folder: str, names: list[str]) -> None:
        """`names` (sorted, as listed) under `folder`, each joined to it with one ``/``."""
        self.add(FolderPart(folder, names))

    @property
    def serial(self) -> bool:
        """Whether some part is read as one stream (a dataset shard's rows)."""
        return any(part.serial for part in self._parts)

    @property
    def parts(self) -> int:
        """How many parts the sources are held in."""
        return len(self._parts)

    def _find(self, index: int) -> tuple[Part, int]:
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("source index out of range")
        at = 0 if len(self._starts) == 1 else bisect_right(self._starts, index) - 1
        return self._parts[at], index - self._starts[at]

    def read(self, index: int) -> bytes:
        """Segment `index`'s bytes (`Part.read`: OSError or SegmentRefused naming why)."""
        part, offset = self._find(index)
        return part.read(offset)

    def shape(self, index: int) -> Shape:
        part, offset = self._find(index)
        return part.shape(offset)

    def document(self, index: int) -> str | None:
        """Segment `index`'s document kind (``pdf``, ``docx``, ``pptx``, ``html``) when its
        shape is a document's, else None: by shape, never by the source's ending alone (a
        row's id may end in ``.pdf``)."""
        part, offset = self._find(index)
        if part.shape(offset) is not DOCUMENT:
            return None
        return kind_of(part.source(offset))

    def locator(self, index: int) -> Locator:
        part, offset = self._find(index)
        return part.locator(offset)

    def serial_end(self, index: int) -> int | None:
        """The end of the serial part holding `index` (its segments are read as one stream,
        in order), or None when `index`'s part reads each segment on its own."""
        if not self._count:
            return None
        at = 0 if len(self._starts) == 1 else bisect_right(self._starts, index) - 1
        part = self._parts[at]
        return self._starts[at] + len(part) if part.serial else None

    def next_serial(self, index: int) -> int:
        """The first index at or after `index` that a serial part holds (len: none)."""
        for start, part in zip(self._starts, self._parts, strict=True):
            if part.serial and start + len(part) > index:
                return max(start, index)
        return self._count

    def row_sources(self, shard: str) -> Iterator[str]:
        """Every row source of dataset shard `shard` (its path as listed) in this corpus."""
        for part in self._parts:
            if part.serial and getattr(part, "path", None) == shard:
                yield from (part.source(offset) for offset in range(len(part)))

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(self._count))]
        part, offset = self._find(index)
        return part.source(offset)

    def __iter__(self) -> Iterator[str]:
        for part in self._parts:
            listed = getattr(part, "sources", None)  # a folder's names, a shard's ids, in bulk
            if listed is not None:
                yield from listed()
            else:
                yield from (part.source(offset) for offset in range(len(part)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Corpus | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Corpus({list(self)!r})"
