"""Reading an import: source files and batch streams into `Batch` values (EVALUATE.md §4.1).

A batch's lines are read by taguru-ray's own import parser
(`contract.source_file.parse_source_file`, ``strict=False`` — import's own
rules, not extract's stricter ones): the newest ``{"type":"source",…}`` header
and the ``{"taguru_batch":1,…}`` mirror alike. A stream may hold several
batches; it is cut at each header line and each batch handed to the parser
with the other batches' lines blanked, so a refusal names the stream's own line.
Locator lines (``{"paragraph","locator":{kind,value}}``), which are not
source-file lines, are taken out here and checked here; ``taguru_schema``
records are read for their counts and otherwise not enforced. Every line is first
read as standard JSON (`contract.strict_json`): a non-finite number anywhere in a
line is refused `invalid_argument`, a line nested too deeply `malformed_request`.

Nothing here touches the store: `apply` writes what this reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

from taguru_ray.contract import strict_json
from taguru_ray.contract.source_file import SourceFile, SourceFileError, parse_source_file

_BOM = b"\xef\xbb\xbf"
_OP_KEYS = ("subject", "alias", "passage", "question", "section", "locator")
_FIELD = re.compile(r"^(create\.\w+|tags\[\d+\]|[a-z_]+):")
MAX_KIND_BYTES = 64
MAX_VALUE_BYTES = 512


@dataclass
class ImportRefusal(Exception):
    """Why a file or batch is refused; nothing of it is applied."""

    file: str
    line: int
    path: str  # the JSON path of the offending value, as `issues[].path` names it
    message: str
    status: int = 400
    code: str = "malformed_request"
    kind: str = "malformed"
    expected: str = ""
    actual: str = ""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # An Exception pickles as (class, args); a dataclass's args are empty, so it
        # would not unpickle. A refusal crosses from an import worker (`prepare`).
        return type(self), tuple(getattr(self, f.name) for f in fields(self))

    def __str__(self) -> str:
        if self.path == "$" or self.message.startswith(f"{self.path}:"):
            return f"{self.file}: line {self.line}: {self.message}"
        return f"{self.file}: line {self.line}: {self.path}: {self.message}"


@dataclass(frozen=True)
class Create:
    """A header's create block: applied only when the context does not exist yet."""

    description: str = ""
    pinned: bool = False
    dice_floor: float | None = None
    semantic_floor: float | None = None


@dataclass(frozen=True)
class Locator:
    paragraph: int
    kind: str
    value: str


@dataclass
class Batch:
    """One source's replacement: everything one header line governs."""

    file: str
    header_line: int
    source: SourceFile
    context: str  # the local context's name
    context_id: str
    create: Create | None
    locators: list[Locator] = field(default_factory=list)
    lines: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # alias lines
    # The passage's paragraphs with their term counts, when a worker already split and
    # tokenised them (`prepare`); None: `apply` does it.
    prepared: list[Any] | None = None

    @property
    def source_id(self) -> str:
        return self.source.header.id

    def alias_line(self, kind: str, alias: str) -> int:
        for number, record in self.lines:
            if record.get("alias") == alias and record.get("kind") == kind:
                return number
        return self.header_line


@dataclass
class Stream:
    batches: list[Batch]
    schemas: list[dict[str, Any]]


def read_stream(data: bytes, *, name: str = "import", context: str | None = None) -> Stream:
    """Every batch and schema record of a stream (one source file is a stream of one batch),
    or `ImportRefusal` naming the first line refused."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    groups: list[tuple[int, list[int], list[tuple[int, dict[str, Any]]], dict[str, Any]]] = []
    schemas: list[dict[str, Any]] = []
    for index, raw in enumerate(pieces):
        number = index + 1
        record = _read_line(raw, name, number)
        if record is None:
            if raw.strip() and groups:
                groups[-1][1].append(index)  # the parser names what is wrong with it
            elif raw.strip():
                groups.append((index, [index], [], {}))
            continue
        if "taguru_schema" in record:
            schemas.append(_schema(record, name, number))
        elif "taguru_group" in record:
            raise ImportRefusal(
                name,
                number,
                "taguru_group",
                "group records are not supported "
                "by the embedded context; import them into a Taguru server",
            )
        elif "type" in record or "taguru_batch" in record or not groups:
            groups.append((index, [index], [], record))
        elif _op(record) == "locator":
            groups[-1][2].append((number, record))
        else:
            groups[-1][1].append(index)
    batches = [_batch(pieces, group, name, context) for group in groups]
    seen: dict[tuple[str, str], int] = {}
    for batch in batches:
        earlier = seen.setdefault((batch.context, batch.source_id), batch.header_line)
        if earlier != batch.header_line:
            raise ImportRefusal(
                name,
                batch.header_line,
                "source",
                f"source {batch.source_id!r} "
                f"of context {batch.context!r} has a batch already (line "
                f"{earlier}): one batch per (context, source) per stream",
            )
    return Stream(batches, schemas)


def stream_contexts(data: bytes) -> list[str]:
    """The name of every context importing `data` would touch, in order of first mention:
    each batch's (the name `apply_batch` writes to) and each schema record's.

    Read by `read_stream` itself, so every header shape the importer accepts — and any
    it learns later — is named here; a server holds a context-scoped key to its grant
    with this before anything applies. Raises `ImportRefusal` where `read_stream` does:
    an import parses the whole stream before it writes, so such a stream applies
    nothing."""
    stream = read_stream(data)
    named = [batch.context for batch in stream.batches]
    named += [schema["context"] for schema in stream.schemas]
    return list(dict.fromkeys(named))


def stream_sources(data: bytes, context: str | None = None) -> list[tuple[str, str]]:
    """(the local context's name, source id) of every batch header in `data`, named as
    `read_stream` names them (`context`, else the header's create name, else its
    context_id), read from the header lines alone. A header import would refuse names
    nothing here: importing the file says why."""
    found = []
    for raw in data.split(b"\n"):
        if b'"type"' not in raw and b'"taguru_batch"' not in raw:  # not a header: unread
            continue
        try:
            record = _peek(raw.removeprefix(_BOM))
        except (strict_json.NonFiniteNumber, strict_json.NestedTooDeeply):
            continue
        if record is None or not ("type" in record or "taguru_batch" in record):
            continue
        try:
            header = parse_source_file(raw.removeprefix(_BOM), strict=False).header
        except SourceFileError:
            continue
        found.append((context or header.name or header.context_id, header.id))
    return found


def _read_line(raw: bytes, name: str, number: int) -> dict[str, Any] | None:
    """`_peek`, refusing a line no parser may be handed: a non-finite number (NaN, 1e999)
    anywhere in it, or nesting deeper than the decoder follows."""
    try:
        return _peek(raw)
    except strict_json.NonFiniteNumber as error:
        raise ImportRefusal(name, number, "$", f"not JSON: {error}", code="invalid_argument",
                            kind="invalid_argument", actual=error.token) from None  # fmt: skip
    except strict_json.NestedTooDeeply as error:
        raise ImportRefusal(name, number, "$", f"not JSON: {error}") from None


def _peek(raw: bytes) -> dict[str, Any] | None:
    """One line as a JSON object; None when it is not one (the parser names why)."""
    try:
        value = strict_json.loads(raw)
    except (strict_json.NonFiniteNumber, strict_json.NestedTooDeeply):
        raise
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _op(record: dict[str, Any]) -> str | None:
    return next((key for key in _OP_KEYS if key in record), None)


def _batch(pieces: list[bytes], group: Any, name: str, context: str | None) -> Batch:
    start, indexes, locator_lines, header = group
    lines = [b""] * len(pieces)
    for index in indexes:
        lines[index] = pieces[index]
    try:
        source = parse_source_file(b"\n".join(lines), name=name, strict=False)
    except SourceFileError as error:
        match = _FIELD.match(error.detail)
        path = match.group(1) if match else "$"
        raise ImportRefusal(name, error.line, path, error.detail, actual=error.detail) from None
    block = header.get("create")
    create = None
    if isinstance(block, dict):
        create = Create(
            description=block.get("description", "") or "",
            pinned=bool(block.get("pinned", False)),
            dice_floor=_float(block.get("dice_floor")),
            semantic_floor=_float(block.get("semantic_floor")),
        )
    local = context or source.header.name or source.header.context_id
    batch = Batch(name, start + 1, source, local, source.header.context_id, create)
    batch.lines = [(i + 1, r) for i in indexes if (r := _peek(pieces[i])) and "alias" in r]
    batch.locators = [_locator(record, name, number) for number, record in locator_lines]
    if batch.locators and source.passage is None:
        raise ImportRefusal(
            name,
            locator_lines[0][0],
            "paragraph",
            "locator cites a paragraph but the batch has no passage line to attach it to",
        )
    return batch


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _locator(record: dict[str, Any], name: str, number: int) -> Locator:
    def refuse(path: str, message: str) -> ImportRefusal:
        return ImportRefusal(name, number, path, message)

    extra = sorted(set(record) - {"paragraph", "locator"})
    if extra:
        raise refuse(
            extra[0], f"unknown field {extra[0]!r} on a locator line (it takes paragraph, locator)"
        )
    paragraph = record.get("paragraph")
    if isinstance(paragraph, bool) or not isinstance(paragraph, int) or paragraph < 0:
        raise refuse("paragraph", "expected a paragraph index (an integer from 0)")
    block = record["locator"]
    if not isinstance(block, dict) or set(block) != {"kind", "value"}:
        raise refuse("locator", 'expected an object {"kind", "value"}')
    for key, cap in (("kind", MAX_KIND_BYTES), ("value", MAX_VALUE_BYTES)):
        text = block[key]
        if not isinstance(text, str) or not text or len(text.encode("utf-8")) > cap:
            raise refuse(f"locator.{key}", f"expected a non-empty string of at most {cap} bytes")
    return Locator(paragraph, block["kind"], block["value"])


def _schema(record: dict[str, Any], name: str, number: int) -> dict[str, Any]:
    types, relations = record.get("types", {}), record.get("relations", {})
    context = record.get("context")
    if (
        not isinstance(context, str)
        or not isinstance(types, dict)
        or not isinstance(relations, dict)
    ):
        raise ImportRefusal(
            name,
            number,
            "taguru_schema",
            "a schema record needs a context name and types/relations objects",
        )
    return {
        "context": context,
        "mode": record.get("mode", "warn"),
        "relations": len(relations),
        "types": len(types),
    }
