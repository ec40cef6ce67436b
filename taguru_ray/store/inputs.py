"""The segments a run reads: positional paths expanded, local or fsspec URLs (ADR 0075).

A file argument is taken as it is: a dataset shard (``.parquet``, ``.jsonl``,
``.jsonl.gz``, ``.csv``) is read a row a segment (`store/datasets.py`), any other
file is one segment. A folder contributes its regular segment files (``*.md``
and ``*.txt``: case-sensitive, the reference's rule), sorted by name; a folder
holding none but holding shards is a dataset, its shards read in name order.
With ``recursive`` a folder is read at every depth, as a stream
(`store.walk.ordered`), in the byte order of the whole paths. What a folder
holds that is not read is said, never skipped in silence: one note names the
subfolders left unread (without ``recursive``) and how many entries each
holds, another the shards beside a folder's segment files; a subfolder that
cannot be listed is a source of its own that fails by name (exit 1).

The *source* of a segment is the path string as seen — the folder as typed
joined with the file's path under it, never canonicalised — because it names
the segment in the header, the manifest and every record; a row's is its
shard's, ``#`` and its id (`contract.names.row_source`).

The sources are held as a `Corpus` (`store/corpus.py`): a folder's names
front-coded, a shard's ids one Arrow array, a path made when asked for (ADR
0042).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.contract.names import DATASET_SUFFIXES, SEGMENT_SUFFIXES
from taguru_ray.contract.settings.groups import Source
from taguru_ray.errors import UsageError
from taguru_ray.store.corpus import Broken, Corpus, FolderPart
from taguru_ray.store.cover import Cover
from taguru_ray.store.datasets import Columns, ShardRows, shard_part
from taguru_ray.store.regular import NotRegularFile, kind_of, read_regular
from taguru_ray.store.shapes import TEXT, Part, shape_of
from taguru_ray.store.walk import ordered
from taguru_ray.text.terminal import printable

__all__ = [
    "READ_LIMIT",
    "SEGMENT_SUFFIXES",
    "Columns",
    "Corpus",
    "NotRegularFile",
    "corpus_of",
    "expand",
    "iter_sources",
    "read_regular",
    "read_source",
]

READ_LIMIT = TEXT.read_limit
NAMED = 5  # subfolders a note names with their counts; the rest are counted


def _join(folder: str, name: str) -> str:
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


@dataclass
class _Listing:
    """One folder's entries, sorted: segment files, dataset shards, subfolders (with
    their entry counts, or why they could not be listed)."""

    segments: list[str] = field(default_factory=list)
    shards: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)


def _listing(fs: Any, root: str, path: str) -> _Listing:
    """A folder's entries; a local one is read with one scandir (fsspec's local listing
    stats every entry, a second at 100 000 files). An entry named like an input that is
    no regular file (a FIFO, a device, a link that loops or dangles) is a usage error
    naming it: left out, its segments would go missing. A hidden file is read as the
    reference reads it; a hidden folder (``.git``) is not named among those not read."""
    found = _Listing()
    if isinstance(fs, LocalFileSystem):
        with os.scandir(root) as entries:
            for entry in entries:
                shape = shape_of(entry.name)
                if shape is None:
                    if not entry.name.startswith(".") and _is_folder(entry):
                        found.folders.append(entry.name)
                    continue
                _check_utf8(_join(path, entry.name))
                if not _is_file(entry):
                    if _is_folder(entry):
                        if not entry.name.startswith("."):
                            found.folders.append(entry.name)
                        continue
                    raise UsageError(
                        f"{_join(path, entry.name)}: {_entry_kind(entry)}, not a regular file "
                        "— remove it or name the files to read"
                    )
                (found.shards if shape.rows else found.segments).append(entry.name)
    else:
        for entry in fs.ls(root, detail=True):
            name = posixpath.basename(str(entry["name"]).rstrip("/"))
            itself = str(entry["name"]).rstrip("/") == root.rstrip("/")
            if not name or itself:
                continue
            if entry.get("type") == "directory":
                if not name.startswith("."):
                    found.folders.append(name)
                continue
            shape = shape_of(name)
            if entry.get("type") == "file" and shape is not None:
                (found.shards if shape.rows else found.segments).append(name)
    found.segments.sort()
    found.shards.sort()
    found.folders.sort()
    return found


def _count_entries(fs: Any, root: str) -> int:
    """The entries directly in a folder, hidden names aside; OSError when unlistable."""
    if isinstance(fs, LocalFileSystem):
        with os.scandir(root) as entries:
            return sum(1 for entry in entries if not entry.name.startswith("."))
    try:
        listed = fs.ls(root, detail=False)
    except OSError:
        raise
    except Exception as error:  # object stores raise their own types
        raise OSError(str(error)) from error
    return sum(
        1
        for name in listed
        if not posixpath.basename(str(name).rstrip("/")).startswith(".")
        and str(name).rstrip("/") != root.rstrip("/")
    )


def _check_utf8(path: str) -> None:
    """A name whose bytes are not UTF-8 cannot be a source: the header, the output name
    and every record spell the source as UTF-8 text. Refused by name, as a FIFO is."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{printable(path)}: the name is not UTF-8 — rename it (a source is named in "
            "UTF-8 text)"
        ) from None


def _entry_kind(entry: os.DirEntry[str]) -> str:
    try:
        return kind_of(entry.stat().st_mode)
    except OSError as error:  # a link that loops or points at nothing
        return f"a symbolic link that cannot be followed ({error.strerror or error})"


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:  # a link loop, on some platforms
        return False


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def expand(
    paths: tuple[str, ...] | list[str], *, recursive: bool = False, columns: Columns | None = None
) -> Corpus:
    """Every segment source, in argument order, folders expanded in name order.

    A path that is no folder and no regular file (a FIFO, a device, a link that
    loops or dangles), or a folder that cannot be listed, is a usage error naming
    it: nothing is read and nothing written. A path a folder on its way hides (no
    search permission) is taken as a file: its read fails by name, like any
    unreadable segment's, and the rest are written. `columns`: the dataset's
    text and id columns (`--text-column`, `--id-column`).
    """
    corpus = Corpus()
    columns = columns or Columns()
    for path in paths:
        try:
            _expand_one(path, corpus, recursive, columns)
        except UsageError:
            raise
        except OSError as error:
            why = error.strerror or str(error)
            raise UsageError(
                f"{path}: cannot be read ({why}) — name readable files or folders"
            ) from None
        corpus.arguments += 1
    return corpus


def _expand_one(path: str, corpus: Corpus, recursive: bool, columns: Columns) -> None:
    _check_utf8(path)
    if "://" not in path:
        try:
            os.stat(path)
        except PermissionError:  # a folder on its way hides it: not missing, unreadable —
            corpus.add_file(path)  # its read fails by name, and the rest are written
            corpus.covering.append(Cover.file(path))
            return
        except OSError as error:
            if os.path.islink(path):  # ELOOP, or a link to nothing
                why = error.strerror or str(error)
                raise UsageError(
                    f"{path}: a symbolic link that cannot be followed ({why})"
                ) from None
            if isinstance(error, FileNotFoundError):
                raise UsageError(f"{path}: no such file or folder") from None
            raise
    fs, root = fsspec.core.url_to_fs(path)
    if fs.isdir(root):
        if recursive:
            _expand_tree(fs, root, path, corpus, columns)
        else:
            _expand_folder(fs, root, path, corpus, columns)
        return
    if not fs.exists(root):
        raise UsageError(f"{path}: no such file or folder")
    kind = fs.info(root).get("type")
    if kind != "file":
        what = kind_of(os.stat(root).st_mode) if "://" not in path else str(kind)
        raise UsageError(f"{path}: {what}, not a regular file — name .md/.txt files or a folder")
    shape = shape_of(path)
    if shape is not None and shape.rows:
        part = shard_part(path, columns)
        corpus.add(part)
        corpus.covering.append(Cover.shard(path, known=_listed_whole(part)))
    else:
        corpus.add_file(path)
        corpus.covering.append(Cover.file(path))


def _expand_folder(fs: Any, root: str, path: str, corpus: Corpus, columns: Columns) -> None:
    listing = _listing(fs, root, path)
    if not listing.segments and not listing.shards:
        held = (
            f" (it holds {len(listing.folders)} subfolder(s): add --recursive to read them)"
            if listing.folders
            else ""
        )
        raise UsageError(
            f"{path}: the folder holds no .md or .txt files, no documents (.pdf, .docx, "
            ".pptx, .html) nor dataset shards "
            f"({', '.join(DATASET_SUFFIXES)}){held} — name files or another folder"
        )
    unknown: list[str] = []  # shards whose rows could not all be listed
    if listing.segments:
        corpus.add(FolderPart(path, listing.segments))
        if listing.shards:
            corpus.notes.append(_shards_note(path, listing.shards))
    else:
        for name in listing.shards:
            part = shard_part(_join(path, name), columns)
            corpus.add(part)
            if not _listed_whole(part):
                unknown.append(_join(path, name))
    corpus.covering.append(Cover.listed(path, rows=not listing.segments, unknown=tuple(unknown)))
    counted: list[tuple[str, int]] = []
    for name in listing.folders:
        sub = _join(path, _shown(name))  # a label for its line: it names no file written
        try:
            counted.append((name, _count_entries(fs, _join(root, name))))
        except OSError as error:
            corpus.add(Broken(sub, _unlisted(error.strerror or str(error))))
    if counted:
        corpus.notes.append(_folders_note(path, counted))


def _expand_tree(fs: Any, root: str, path: str, corpus: Corpus, columns: Columns) -> None:
    """Every input under `root`, at every depth, streamed in path order: segment files
    into one front-coded part as they come; shards held (as names) until the walk ends,
    since a tree holding segment files reads those alone."""
    files = FolderPart(path, ())
    shards: list[str] = []
    broken: list[Broken] = []
    for found in ordered(fs, root):
        if found.unlisted is not None:
            if not found.path:  # the folder named itself
                raise OSError(found.unlisted)
            broken.append(Broken(_join(path, found.path), _unlisted(found.unlisted)))
            continue
        shape = shape_of(posixpath.basename(found.path))
        if shape is None:
            continue
        _check_utf8(_join(path, found.path))
        if not found.regular:
            raise UsageError(
                f"{_join(path, found.path)}: not a regular file (a FIFO, a device or a link "
                "that cannot be followed) — remove it or name the files to read"
            )
        if shape.rows:
            shards.append(found.path)
        else:
            files.append(found.path)
    if not len(files) and not shards and not broken:
        raise UsageError(
            f"{path}: the tree holds no .md or .txt files, no documents (.pdf, .docx, "
            ".pptx, .html) nor dataset shards "
            f"({', '.join(DATASET_SUFFIXES)}) at any depth — name files or another folder"
        )
    unknown = [part.path + "/" for part in broken]  # nothing under them is judged gone
    if len(files):
        corpus.add(files)
        if shards:
            corpus.notes.append(_shards_note(path, shards))
    else:
        for name in shards:
            part = shard_part(_join(path, name), columns)
            corpus.add(part)
            if not _listed_whole(part):
                unknown.append(_join(path, name))
    for broken_part in broken:
        corpus.add(broken_part)
    corpus.covering.append(
        Cover.listed(path, rows=not len(files), deep=True, unknown=tuple(unknown))
    )


def _listed_whole(part: Part) -> bool:
    """Whether a shard's rows were all listed: not `Broken`, no bytes that stopped parsing
    part-way. A shard that was not is judged for no row gone (`store/cover.py`)."""
    return isinstance(part, ShardRows) and part.whole


def _unlisted(why: str) -> str:
    return (
        f"a folder that cannot be listed ({why}) — its files were not read; make it "
        "readable and run again"
    )


def _shown(name: str) -> str:
    """A name as a line shows it: control characters escaped, undecodable bytes as \\x.."""
    return printable(name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


def _folders_note(path: str, counted: list[tuple[str, int]]) -> str:
    named = ", ".join(f"{_shown(name)}/ ({count} entries)" for name, count in counted[:NAMED])
    more = f", and {len(counted) - NAMED} more" if len(counted) > NAMED else ""
    return (
        f"{_shown(path)}: not read: {len(counted)} subfolder(s) — {named}{more}; add "
        "--recursive to read them"
    )


def _shards_note(path: str, shards: list[str]) -> str:
    named = ", ".join(printable(name) for name in shards[:NAMED])
    more = f", and {len(shards) - NAMED} more" if len(shards) > NAMED else ""
    return (
        f"{printable(path)}: not read: {len(shards)} dataset shard(s) beside its .md/.txt "
        f"files — {named}{more}; name them (or a folder of shards alone) to read their rows"
    )


def corpus_of(source: Source) -> Corpus:
    """The corpus the run's `source` settings name: its paths, --recursive, the columns."""
    return expand(
        source.paths,
        recursive=source.recursive,
        columns=Columns(source.text_column, source.id_column),
    )


def read_source(source: str) -> bytes:
    """A segment file's bytes, at most its shape's read limit (a text segment's READ_LIMIT,
    a document's the document cap); OSError when unreadable (a FIFO or a device included:
    `NotRegularFile`)."""
    return read_regular(source, (shape_of(source) or TEXT).read_limit)


def iter_sources(paths: tuple[str, ...] | list[str]) -> Iterator[str]:
    yield from expand(paths)
