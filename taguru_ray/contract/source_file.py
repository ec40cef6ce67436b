"""The source file (older name: batch file): the JSONL one segment becomes.

This module is the one place that knows the format (CONTRACT.md section 1). It
holds the writer and taguru-ray's own import parser, and the writer re-parses
its own bytes before returning them, so extract can never write a file that
import would refuse: a bug upstream surfaces as a `SourceFileError` naming the
line, never as a bad file on disk.

Written (newest contract, taguru ADRs 0042 + 0046): UTF-8, one compact JSON object per
line, ``\\n`` after every line, non-ASCII raw, keys in this order:

1. ``{"type":"source","version":"2026-09-17","id","context_id"}`` plus
   ``"create":{"name"[,"description"]}`` only when a name is set;
2. ``{"passage"[,"date"][,"tags"]}`` (date only when set, tags when non-empty);
3. ``{"paragraph","question"}`` lines, in the order given;
4. ``{"subject","label","object","weight"[,"paragraph"]}`` lines, in the order
   given; the weight always as a float, spelled as serde_json (ryu) spells an
   f64 so the bytes equal the reference's: ``1.0``, ``-0.5``, ``1000000.0``,
   ``0.00001``, ``1e-7``, ``1.5e-7`` (shortest round-trip digits; decimal while
   1e-5 <= |w| < 1e16, else ``<d>[.<ddd>]e<exp>``, never ``e+``);
5. concept aliases sorted by spelling (UTF-8 byte order), then label aliases.

Read (the reference import's rules, plus the checks CONTRACT.md asks of
extract's own output):

- Headers: the newest shape; its taguru ADR 0042 predecessor (``context`` instead of
  ``context_id``; its create block need not name the context); the MIRROR
  shape ``{"taguru_batch":1,"context","source","create":{...}}``, whose create
  block may also carry the context settings ``pinned``/``dice_floor``/
  ``semantic_floor`` (type-checked, then dropped: a Header has no place for
  them). An absent ``version`` reads as ``None`` (the reference reads it as
  "this build's own"); a present one must be exactly ``FORMAT_VERSION``.
  ``context_id`` must be a lowercase hyphenated UUID; the older ``context``
  column holds a context name (<= 64 bytes) and lands in ``Header.context_id``.
  In the newest shape a create block must name the context (``--description``
  needs ``--name``).
- Lines are recognised by their keys: ``subject`` association, ``alias``
  alias, ``passage`` passage, ``question`` question, ``section`` section
  (import-only; ``{"paragraph","section"}``; range left to import's store-time
  drop, as the reference does). A passage line may also carry ``stored_at``
  (an export's restore stamp), checked and dropped. Locator, schema and group
  lines are not source-file lines here and are refused.
- Blank lines (empty or all Unicode White_Space) are skipped and a leading
  UTF-8 BOM is stripped, as the reference import does; the first non-blank
  line must be the header. A missing final newline is tolerated.
- An identical (paragraph, question) pair folds into the first, as import
  does; everything else the reference refuses is refused: unknown or repeated
  fields, a second header or passage, a question, section or paragraph-tagged
  association without a passage, a repeated alias spelling in one namespace.
- Stricter than import, because extract must only ever write them valid: a
  question or association paragraph must be below the passage's canonical
  paragraph count; an alias's canonical must be a name the file's associations
  use in its namespace (concepts = subjects + objects, labels = labels) and
  its spelling must not be one; weights must be non-zero. ``strict=False``
  reads as import itself does (`verify` of a whole folder): an out-of-range
  paragraph is import's to drop, and a canonical may be a name an earlier
  file interned, which only the folder's reader can judge.

Its length (over 400 lines) is deliberate: the writer and the import parser of
one format sit side by side, so the writer's self-check reads as import does.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from taguru_ray.contract.items import (
    MAX_CONTEXT_NAME_BYTES,
    MAX_DESCRIPTION_BYTES,
    MAX_LINE_BYTES,
    MAX_NAME_BYTES,
    MAX_PASSAGE_BYTES,
    MAX_QUESTION_BYTES,
    MAX_QUESTIONS_PER_PARAGRAPH,
    MAX_SECTION_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_WEIGHT,
    Alias,
    Association,
    Question,
)
from taguru_ray.contract.records import compact_json
from taguru_ray.text.paragraphs import WHITE_SPACE, split_paragraphs

FORMAT_VERSION = "2026-09-17"

_MAX_U32 = 2**32 - 1
_MAX_U64 = 2**64 - 1
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRIP = "".join(sorted(WHITE_SPACE))
_BOM = b"\xef\xbb\xbf"

_SOURCE_HEADER = ("type", "version", "id", "context_id", "context", "create")
_BATCH_HEADER = ("taguru_batch", "context", "source", "create")
_BATCH_CREATE = ("description", "pinned", "dice_floor", "semantic_floor")
_ASSOCIATION = ("subject", "label", "object", "weight", "paragraph")
_ALIAS = ("alias", "canonical", "kind")
_PASSAGE = ("passage", "date", "tags", "stored_at")
_QUESTION = ("paragraph", "question")
_SECTION = ("paragraph", "section")


@dataclass(frozen=True)
class Header:
    """What the header line says."""

    id: str  # the written source: the path string as seen, or --source-id
    context_id: str  # lowercase hyphenated UUID (older headers: a context name)
    name: str | None = None  # create.name, only with --name
    description: str | None = None  # create.description; written only with a name
    version: str | None = FORMAT_VERSION  # None when an older header had none


@dataclass(frozen=True)
class Passage:
    text: str
    date: int | None = None  # epoch seconds
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    """An import-only heading line: where a named section of the passage begins."""

    paragraph: int
    section: str


@dataclass
class SourceFile:
    header: Header
    passage: Passage | None = None
    questions: list[Question] = field(default_factory=list)
    associations: list[Association] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)  # only the parser fills it


class SourceFileError(ValueError):
    """A source file import would refuse: ``<name>: line <n>: <what is wrong>``."""

    def __init__(self, name: str, line: int, detail: str) -> None:
        super().__init__(f"{name}: line {line}: {detail}")
        self.name = name
        self.line = line
        self.detail = detail


class _Refused(Exception):
    """A refusal found inside one line; the line loop adds file name and number."""


# --------------------------------------------------------------------- writer


def render_source_file(source: SourceFile, *, name: str = "<source file>") -> bytes:
    """The file's bytes, or `SourceFileError` if import would refuse them.

    Postcondition: the bytes are parsed back with `parse_source_file` and must
    read as `source` with its aliases in written order.
    """
    records = _records(source, name)
    lines: list[bytes] = []
    for number, record in enumerate(records, start=1):
        try:
            lines.append(_encode(record).encode("utf-8") + b"\n")
        except UnicodeEncodeError:
            raise SourceFileError(name, number, "a lone surrogate is not UTF-8") from None
    data = b"".join(lines)
    written = parse_source_file(data, name=name)
    expected = replace(source, aliases=_alias_order(source.aliases))
    for part in ("header", "passage", "questions", "associations", "aliases"):
        if getattr(written, part) != getattr(expected, part):
            raise SourceFileError(name, 1, f"the written {part} would not read back as given")
    return data


def _records(source: SourceFile, name: str) -> list[dict[str, Any]]:
    """The line objects in written order; refuses what the parser cannot see."""
    header = source.header
    if header.version != FORMAT_VERSION:
        detail = (
            f'version must be "{FORMAT_VERSION}" (writers always emit it), got {header.version!r}'
        )
        raise SourceFileError(name, 1, detail)
    if header.description is not None and header.name is None:
        raise SourceFileError(
            name, 1, "create.description needs create.name (--description needs --name)"
        )
    head: dict[str, Any] = {"type": "source", "version": header.version, "id": header.id}
    head["context_id"] = header.context_id
    if header.name is not None:
        head["create"] = {"name": header.name}
        if header.description is not None:
            head["create"]["description"] = header.description
    records = [head]
    if source.passage is not None:
        line: dict[str, Any] = {"passage": source.passage.text}
        if source.passage.date is not None:
            line["date"] = source.passage.date
        if source.passage.tags:
            line["tags"] = list(source.passage.tags)
        records.append(line)
    seen: set[tuple[int, str]] = set()
    for question in source.questions:
        if (question.paragraph, question.question) in seen:
            detail = f"question {_quote(question.question)} repeats an earlier line verbatim"
            raise SourceFileError(name, len(records) + 1, detail)
        seen.add((question.paragraph, question.question))
        records.append({"paragraph": question.paragraph, "question": question.question})
    for fact in source.associations:
        line = {"subject": fact.subject, "label": fact.label, "object": fact.object}
        line["weight"] = _as_f64(fact.weight)
        if fact.paragraph is not None:
            line["paragraph"] = fact.paragraph
        records.append(line)
    for alias in _alias_order(source.aliases):
        records.append({"alias": alias.alias, "canonical": alias.canonical, "kind": alias.kind})
    if source.sections:
        raise SourceFileError(
            name, len(records) + 1, "section lines are import-only; extract never writes them"
        )
    return records


def _alias_order(aliases: list[Alias]) -> list[Alias]:
    """Concept aliases, then label aliases, each by spelling in UTF-8 byte order."""

    def spelling(alias: Alias) -> bytes:
        return alias.alias.encode("utf-8", "surrogatepass")

    concepts = sorted((a for a in aliases if a.kind == "concept"), key=spelling)
    labels = sorted((a for a in aliases if a.kind == "label"), key=spelling)
    others = [a for a in aliases if a.kind not in ("concept", "label")]  # the parser names them
    return concepts + labels + others


def _as_f64(value: Any) -> Any:
    """An integer weight becomes a float; anything else is left for the parser to judge."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    try:
        return float(value)
    except OverflowError:  # written as null, as serde_json writes a non-finite f64
        return math.inf


def _encode(value: Any) -> str:
    """Compact JSON, non-ASCII raw, floats spelled as serde_json spells an f64."""
    if isinstance(value, dict) and _plain(value):
        # Python's own float repr equals serde_json's spelling in this range, so the
        # C encoder can write the whole line at once (the common case by far).
        return compact_json(value)
    if isinstance(value, float):
        return _format_f64(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_encode(k)}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _plain(line: dict[str, Any]) -> bool:
    """A flat line whose floats all print the same in Python and serde_json."""
    for item in line.values():
        if isinstance(item, float):
            if not (math.isfinite(item) and (item == 0 or 1e-4 <= abs(item) < 1e16)):
                return False
            if item == 0:
                return False  # serde writes -0.0 for negative zero; keep the slow path exact
        elif isinstance(item, dict | list | tuple):
            return False
    return True


def _format_f64(value: float) -> str:
    """serde_json's f64 spelling (ryu's shortest digits, ryu's layout); non-finite is null."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = int(exp or "0") - len(fraction)
    trimmed = digits.rstrip("0")
    exponent += len(digits) - len(trimmed)
    digits, length = trimmed, len(trimmed)
    point = length + exponent  # value = 0.<digits> * 10**point
    if exponent >= 0 and point <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        body = f"{digits[:point]}.{digits[point:]}"
    elif -5 < point <= 0:
        body = "0." + "0" * -point + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return ("-" if value < 0 else "") + body


# --------------------------------------------------------------------- parser


@dataclass
class _Draft:
    """A file being read: its items with the line each came from."""

    header: Header
    header_line: int
    passage: Passage | None = None
    passage_line: int = 0
    questions: list[tuple[int, Question]] = field(default_factory=list)
    associations: list[tuple[int, Association]] = field(default_factory=list)
    aliases: list[tuple[int, Alias]] = field(default_factory=list)
    sections: list[tuple[int, Section]] = field(default_factory=list)
    per_paragraph: Counter[int] = field(default_factory=Counter)
    seen_questions: set[Question] = field(default_factory=set)
    alias_lines: dict[tuple[str, str], int] = field(default_factory=dict)


def parse_source_file(
    data: bytes, *, name: str = "<source file>", strict: bool = True
) -> SourceFile:
    """Read a source file the way import does, or raise `SourceFileError`."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    draft: _Draft | None = None
    for number, raw in enumerate(pieces, start=1):
        try:
            record = _load(raw)
            if record is None:
                continue
            if draft is None:
                draft = _Draft(_read_header(record), number)
            else:
                _read_item(draft, record, number)
        except _Refused as refusal:
            raise SourceFileError(name, number, str(refusal)) from None
    if draft is None:
        raise SourceFileError(name, 1, "no header line: the file is empty or blank")
    return _finish(draft, name, strict)


def _load(raw: bytes) -> dict[str, Any] | None:
    """One line as a JSON object, or None for a blank line."""
    if len(raw) > MAX_LINE_BYTES:
        raise _Refused(f"{len(raw)} bytes exceeds the {MAX_LINE_BYTES}-byte line cap")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _Refused(
            f"not UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1})"
        ) from None
    text = text.strip(_STRIP)
    if not text:
        return None
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise _Refused(f"not JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:  # a line nested past the interpreter's stack: no item is
        raise _Refused("arrays and objects are nested too deeply to read") from None
    if not isinstance(value, dict):
        raise _Refused(f"a source-file line must be a JSON object, got {_describe(value)}")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(f"duplicate field {_quote(key)}")
        result[key] = value
    return result


def _no_constant(constant: str) -> Any:
    raise _Refused(f"not JSON: {constant} is not a JSON number")


# One decoder for every line read (`json.loads` with hooks builds one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_no_constant)


# The fields that make a line a header: taguru-ray's own source header, or the older
# batch header. Import, verify and `benchmark compare`'s line counts ask the same question.
HEADER_FIELDS = ("type", "taguru_batch")


def is_header(record: dict[str, Any]) -> bool:
    return any(key in record for key in HEADER_FIELDS)


def is_section(record: dict[str, Any]) -> bool:
    """A section line as import reads one: a paragraph's heading, no other item's field."""
    return "section" in record and not any(
        key in record for key in ("subject", "alias", "passage", "question"))


def _read_header(record: dict[str, Any]) -> Header:
    if "type" in record:
        return _read_source_header(record)
    if "taguru_batch" in record:
        return _read_batch_header(record)
    raise _Refused(
        'expected the header line first: this line has no "type" (or older "taguru_batch")'
    )


def _read_source_header(record: dict[str, Any]) -> Header:
    _only(record, _SOURCE_HEADER, "the header")
    kind = _text(record, "type", MAX_NAME_BYTES)
    if kind != "source":
        raise _Refused(f'type {_quote(kind)} is not a source header (expected "source")')
    version = _optional_text(record, "version", MAX_NAME_BYTES)
    if version is not None and version != FORMAT_VERSION:
        raise _Refused(
            f'version {_quote(version)} is not a format this reads (it reads "{FORMAT_VERSION}")'
        )
    source_id = _text(record, "id", MAX_NAME_BYTES)
    if "context" in record and "context_id" in record:
        raise _Refused('give "context_id" or the older "context", not both')
    if "context" in record:  # the taguru ADR 0042 step, before context_id and create.name
        context = _text(record, "context", MAX_CONTEXT_NAME_BYTES)
        name, description = _create(record, ("name", "description"), name_required=False)
    else:
        context = _text(record, "context_id", MAX_NAME_BYTES)
        if not _UUID.fullmatch(context):
            raise _Refused(f"context_id {_quote(context)} is not a lowercase hyphenated UUID")
        name, description = _create(record, ("name", "description"), name_required=True)
    return Header(source_id, context, name, description, version)


def _read_batch_header(record: dict[str, Any]) -> Header:
    _only(record, _BATCH_HEADER, "the taguru_batch header")
    version = record["taguru_batch"]
    if version != 1 or isinstance(version, bool | float):
        raise _Refused(
            f"taguru_batch {_describe(version)} is not a version this parser reads (it reads 1)"
        )
    context = _text(record, "context", MAX_CONTEXT_NAME_BYTES)
    source_id = _text(record, "source", MAX_NAME_BYTES)
    _, description = _create(record, _BATCH_CREATE, name_required=False)
    return Header(source_id, context, None, description, None)


def _create(
    record: dict[str, Any], allowed: tuple[str, ...], *, name_required: bool
) -> tuple[str | None, str | None]:
    block = record.get("create")
    if block is None:
        return None, None
    if not isinstance(block, dict):
        raise _Refused(f"create: expected an object, got {_describe(block)}")
    _only(block, allowed, "the create block")
    if "pinned" in block and not isinstance(block["pinned"], bool):
        raise _Refused(f"create.pinned: expected a boolean, got {_describe(block['pinned'])}")
    for key in ("dice_floor", "semantic_floor"):
        value = block.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _Refused(f"create.{key}: expected a number, got {_describe(value)}")
    name = None
    if "name" in block or name_required:
        if "name" not in block:
            raise _Refused('missing field "create.name": a create block names its context')
        name = _text(block, "name", MAX_NAME_BYTES, label="create.name")
    label = "create.description"
    return name, _optional_text(block, "description", MAX_DESCRIPTION_BYTES, label=label)


def _read_item(draft: _Draft, record: dict[str, Any], number: int) -> None:
    if is_header(record):
        raise _Refused(
            f"a second header (the first is line {draft.header_line}): one source per file"
        )
    if "subject" in record:
        _read_association(draft, record, number)
    elif "alias" in record:
        _read_alias(draft, record, number)
    elif "passage" in record:
        _read_passage(draft, record, number)
    elif "question" in record:
        _read_question(draft, record, number)
    elif "section" in record:
        _only(record, _SECTION, "a section")
        paragraph = _paragraph(record)
        section = Section(paragraph, _text(record, "section", MAX_SECTION_BYTES))
        draft.sections.append((number, section))
    else:
        raise _Refused(
            "not a passage, question (paragraph/question), association (subject/label/object/"
            "weight), alias (alias/canonical/kind) or section (paragraph/section) line"
        )


def _read_association(draft: _Draft, record: dict[str, Any], number: int) -> None:
    _only(record, _ASSOCIATION, "an association")
    subject = _text(record, "subject", MAX_NAME_BYTES)
    label = _text(record, "label", MAX_NAME_BYTES)
    object_ = _text(record, "object", MAX_NAME_BYTES)
    weight = _weight(record)
    paragraph = _index(record, "paragraph", required=False)
    draft.associations.append((number, Association(subject, label, object_, weight, paragraph)))


def _weight(record: dict[str, Any]) -> float:
    if "weight" not in record:
        raise _Refused('missing field "weight"')
    value = record["weight"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Refused(f"weight: expected a number, got {_describe(value)}")
    try:
        weight = float(value)
    except OverflowError:
        weight = math.inf
    if not math.isfinite(weight):
        raise _Refused("weight must be finite, got a number beyond f64 range")
    if weight == 0:
        raise _Refused(f"weight {_number(value)} must be non-zero")
    if abs(weight) > MAX_WEIGHT:
        raise _Refused(f"weight {_format_f64(weight)} exceeds the 1000000 cap (|weight| <= 1e6)")
    return weight


def _read_alias(draft: _Draft, record: dict[str, Any], number: int) -> None:
    _only(record, _ALIAS, "an alias")
    spelling = _text(record, "alias", MAX_NAME_BYTES)
    canonical = _text(record, "canonical", MAX_NAME_BYTES)
    if "kind" not in record:
        raise _Refused('missing field "kind"')
    kind = record["kind"]
    if kind not in ("concept", "label") or not isinstance(kind, str):
        raise _Refused(f'kind: expected "concept" or "label", got {_describe(kind)}')
    if spelling == canonical:
        raise _Refused(f"alias {_quote(spelling)} equals its canonical")
    earlier = draft.alias_lines.setdefault((kind, spelling), number)
    if earlier != number:
        raise _Refused(f"{kind} alias {_quote(spelling)} appears twice (first at line {earlier})")
    draft.aliases.append((number, Alias(spelling, canonical, kind)))


def _read_passage(draft: _Draft, record: dict[str, Any], number: int) -> None:
    _only(record, _PASSAGE, "a passage")
    if draft.passage is not None:
        raise _Refused(
            f"a second passage line (the first is line {draft.passage_line}): one passage per file"
        )
    text = _text(record, "passage", MAX_PASSAGE_BYTES, empty=True)
    date = _epoch(record, "date")
    _epoch(record, "stored_at")  # an export's restore stamp: meaningless to extract
    tags = record.get("tags", [])
    if not isinstance(tags, list):
        raise _Refused(f"tags: expected an array of strings, got {_describe(tags)}")
    if len(tags) > MAX_TAGS:
        raise _Refused(f"{len(tags)} tags where a passage carries at most {MAX_TAGS}")
    checked = tuple(
        _string(tag, f"tags[{i}]", MAX_TAG_BYTES, empty=False) for i, tag in enumerate(tags)
    )
    draft.passage, draft.passage_line = Passage(text, date, checked), number


def _read_question(draft: _Draft, record: dict[str, Any], number: int) -> None:
    _only(record, _QUESTION, "a question")
    paragraph = _paragraph(record)
    question = Question(paragraph, _text(record, "question", MAX_QUESTION_BYTES))
    if question in draft.seen_questions:
        return  # an exact repeat folds into the first, as import folds it
    draft.seen_questions.add(question)
    if draft.per_paragraph[paragraph] >= MAX_QUESTIONS_PER_PARAGRAPH:
        raise _Refused(
            f"paragraph {paragraph} already has {MAX_QUESTIONS_PER_PARAGRAPH} questions (the cap)"
        )
    draft.per_paragraph[paragraph] += 1
    draft.questions.append((number, question))


def _finish(draft: _Draft, name: str, strict: bool = True) -> SourceFile:
    """The checks that need the whole file: passage attachment, ranges, alias targets."""

    def refuse(line: int, detail: str) -> SourceFileError:
        return SourceFileError(name, line, detail)

    tagged = [(n, a.paragraph) for n, a in draft.associations if a.paragraph is not None]
    cited = [(n, q.paragraph, "question") for n, q in draft.questions]
    cited += [(n, p, "association") for n, p in tagged]
    if draft.passage is None:
        for kind, lines in (
            ("question", draft.questions),
            ("section", draft.sections),
            ("association", tagged),
        ):
            if lines:
                detail = (
                    f"{kind} cites a paragraph but the file has no passage line to attach it to"
                )
                raise refuse(lines[0][0], detail)
    elif strict:
        count = len(split_paragraphs(draft.passage.text))
        for line, paragraph, kind in sorted(cited):
            if paragraph >= count:
                detail = (
                    f"{kind} cites paragraph {paragraph}, but the passage has {count} paragraph(s)"
                )
                raise refuse(line, detail)
    concepts = {a.subject for _, a in draft.associations} | {
        a.object for _, a in draft.associations
    }
    names = {"concept": concepts, "label": {a.label for _, a in draft.associations}}
    for line, alias in draft.aliases:
        used = names[alias.kind]
        if strict and alias.canonical not in used:
            raise refuse(
                line,
                f"canonical {_quote(alias.canonical)} names no {alias.kind} the associations use",
            )
        if alias.alias in used:
            raise refuse(
                line, f"alias {_quote(alias.alias)} is itself a {alias.kind} the associations use"
            )
    return SourceFile(
        header=draft.header,
        passage=draft.passage,
        questions=[q for _, q in draft.questions],
        associations=[a for _, a in draft.associations],
        aliases=[a for _, a in draft.aliases],
        sections=[s for _, s in draft.sections],
    )


# ----------------------------------------------------------- field checks


def _only(record: dict[str, Any], allowed: tuple[str, ...], kind: str) -> None:
    for key in record:
        if key not in allowed:
            raise _Refused(
                f"unknown field {_quote(key)} on {kind} line (it takes {', '.join(allowed)})"
            )


def _text(
    record: dict[str, Any], key: str, cap: int, *, label: str = "", empty: bool = False
) -> str:
    """A required string field."""
    if key not in record:
        raise _Refused(f"missing field {_quote(label or key)}")
    return _string(record[key], label or key, cap, empty=empty)


def _optional_text(record: dict[str, Any], key: str, cap: int, *, label: str = "") -> str | None:
    """A string field that may be absent (but not null: serde reads a String, not an Option)."""
    return _text(record, key, cap, label=label, empty=True) if key in record else None


def _string(value: Any, label: str, cap: int, *, empty: bool) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{label}: expected a string, got {_describe(value)}")
    if _SURROGATE.search(value):
        raise _Refused(f"{label}: a lone surrogate escape is not UTF-8")
    size = len(value.encode("utf-8"))
    if size > cap:
        raise _Refused(f"{label} of {size} bytes exceeds the {cap}-byte cap")
    if not value and not empty:
        raise _Refused(f"{label} must not be empty")
    return value


def _index(record: dict[str, Any], key: str, *, required: bool) -> int | None:
    """A paragraph index (u32); null reads as absent where the field is optional."""
    if required and key not in record:
        raise _Refused(f"missing field {_quote(key)}")
    value = record.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_U32:
        raise _Refused(
            f"{key}: expected a paragraph index (an integer from 0), got {_describe(value)}"
        )
    return value


def _paragraph(record: dict[str, Any]) -> int:
    paragraph = _index(record, "paragraph", required=True)
    assert paragraph is not None  # required: absent or null was refused
    return paragraph


def _epoch(record: dict[str, Any], key: str) -> int | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_U64:
        raise _Refused(f"{key}: expected epoch seconds (an integer from 0), got {_describe(value)}")
    return value


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _number(value: int | float) -> str:
    return _format_f64(value) if isinstance(value, float) else str(value)


def _describe(value: Any) -> str:
    """A value as issue texts name it (CONTRACT.md section 5): type, then a short spelling."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return f"number {_number(value)}"
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        shown = raw[:64].decode("utf-8", "ignore")
        return f"string {_quote(shown)}{'…' if len(raw) > 64 else ''}"
    return "an array" if isinstance(value, list) else "an object"
