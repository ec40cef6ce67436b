"""``verify``: an out folder judged as a whole, by the rules `taguru import` applies.

Import reads a folder's source files in name order as one stream and stops at
the first file it refuses: a file that parses alone can still be refused for
what an earlier file settled. So every file is read as import reads it
(`parse_source_file(strict=False)`), in name order, and then across files:

- a (context, source id) pair is written once: import would apply the later
  file over the earlier one;
- every file targets the folder's one context, and a create block that says
  something else than the first one for that context is never applied;
- an alias's canonical resolves to a name this file or an earlier one interns;
- no alias rewires a spelling an earlier file settled on (one spelling, one
  referent) — the claims ledger extract commits through (ADR 0019).

A refused file is named and left out of what later files are judged against,
as if removed; every problem is reported, not only the first.

An --out also holds what `extract --prune` retired (``.extract-retired/``, ADR
0083): `judge_retired` reads its records as `import` does — a record file or
line import cannot read is a problem (its retractions would be lost); a prune
a killed run left unfinished is no problem (the next extract completes it, and
until then import sees the old state), only said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.context.importer import stream_sources
from taguru_ray.contract.items import Alias
from taguru_ray.contract.names import RETIRED
from taguru_ray.contract.rust_text import quote_for_issue
from taguru_ray.contract.source_file import Header, SourceFileError, parse_source_file
from taguru_ray.pipeline.claims import ClaimLedger, rewires
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.store.retire import Retired, segments, to_retract


@dataclass(frozen=True)
class Problem:
    """One thing import would refuse (or silently not apply), where it is."""

    file: str
    line: int | None
    item: str  # "header", "file", or the item as written: alias "A" → "B" (concept)
    problem: str

    def text(self) -> str:
        where = f"{self.file}: line {self.line}" if self.line is not None else self.file
        return f"{where}: {self.item}: {self.problem}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "item": self.item, "problem": self.problem}


@dataclass
class RetiredSegments:
    """What `.extract-retired/` holds, as `import` reads it."""

    records: int = 0  # retired segments (a document in parts once, though a record a part)
    retracts: int = 0  # sources the next import retracts from their context
    written_again: int = 0  # retired, then written again since: current, not retracted
    unfinished: list[str] = field(default_factory=list)  # runs whose prune a rerun completes

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "retracts": self.retracts,
            "written_again": self.written_again,
            "unfinished": self.unfinished,
        }


@dataclass
class Verification:
    files: int = 0
    refused: int = 0  # files import would refuse
    problems: list[Problem] = field(default_factory=list)
    retired: RetiredSegments = field(default_factory=RetiredSegments)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "files": self.files,
            "refused": self.refused,
            "problems": [problem.to_json() for problem in self.problems],
            "retired": self.retired.to_json(),
        }


def verify_files(files: Mapping[str, bytes]) -> Verification:
    """Judge `files` (name -> bytes) in name order, as one import stream."""
    result = Verification(files=len(files))
    ledgers: dict[str, ClaimLedger] = {}  # aliases are global to their context
    written: dict[tuple[str, str], str] = {}  # (context, id) -> the file that wrote it
    context: tuple[str, Header] | None = None  # the folder's context: first file, header
    creates: dict[str, tuple[str, Header]] = {}
    for index, name in enumerate(sorted(files)):
        try:
            parsed = parse_source_file(files[name], name=name, strict=False)
        except SourceFileError as error:
            result.refused += 1
            result.problems.append(Problem(name, error.line, "file", error.detail))
            continue
        header = parsed.header
        result.problems.extend(_header_problems(name, header, written, creates, context))
        if context is None:
            context = (name, header)
        written.setdefault((header.context_id, header.id), name)
        if header.name is not None or header.description is not None:
            creates.setdefault(header.context_id, (name, header))
        claims = ledgers.setdefault(header.context_id, ClaimLedger())
        lines = _alias_lines(files[name])
        refusals = _alias_problems(name, index, parsed.associations, parsed.aliases, lines, claims)
        result.problems.extend(refusals)
        if refusals:  # import refuses the file: later files never see its names
            result.refused += 1
        else:
            claims.absorb(index, Contribution.of(parsed.associations, parsed.aliases))
    return result


def judge_retired(result: Verification, files: Mapping[str, bytes], retired: Retired) -> None:
    """Add what `.extract-retired/` holds to `result`: its records counted as `import`
    applies them, a record file it cannot read a problem."""
    for name, why in retired.unreadable.items():
        result.problems.append(
            Problem(name, None, "retired records", f"{why} — import cannot apply them")
        )
    written = {key for data in files.values() for key in stream_sources(data)}
    retracts = to_retract(retired.records, written, None)
    everyone = to_retract(retired.records, (), None)
    result.retired = RetiredSegments(
        records=segments(retired.records),
        retracts=len(retracts),
        written_again=len(everyone) - len(retracts),
        unfinished=list(retired.unfinished),
    )


def _header_problems(
    name: str,
    header: Header,
    written: dict[tuple[str, str], str],
    creates: dict[str, tuple[str, Header]],
    context: tuple[str, Header] | None,
) -> list[Problem]:
    problems = []
    first = written.get((header.context_id, header.id))
    if first is not None:
        problems.append(
            Problem(
                name,
                1,
                "header",
                f"source id {quote_for_issue(header.id)} is also written by {first} — import "
                "replaces one with the other; give the segments distinct ids",
            )
        )
    if context is not None and header.context_id != context[1].context_id:
        problems.append(
            Problem(
                name,
                1,
                "header",
                f"targets context {header.context_id}, the folder's first file "
                f"({context[0]}) {context[1].context_id} — one out folder per context",
            )
        )
    created = creates.get(header.context_id)
    if (
        created is not None
        and (header.name, header.description) != (created[1].name, created[1].description)
        and (header.name is not None or header.description is not None)
    ):
        problems.append(
            Problem(
                name,
                1,
                "header",
                f"its create block differs from {created[0]}'s, which creates the context "
                "first: import never applies this one — rerun extract with the same "
                "--name/--description",
            )
        )
    return problems


def _alias_problems(
    name: str,
    index: int,
    associations: list[Any],
    aliases: list[Alias],
    lines: dict[tuple[str, str], int],
    claims: ClaimLedger,
) -> list[Problem]:
    own = {
        "concept": {a.subject for a in associations} | {a.object for a in associations},
        "label": {a.label for a in associations},
    }
    queries = [(a.kind, spelling) for a in aliases for spelling in (a.alias, a.canonical)]
    claimed = claims.lookups(queries, upto=index)
    problems = []
    for alias in aliases:
        item = (
            f"alias {quote_for_issue(alias.alias)} → {quote_for_issue(alias.canonical)} "
            f"({alias.kind})"
        )
        line = lines.get((alias.kind, alias.alias))
        if alias.canonical not in own[alias.kind] and (alias.kind, alias.canonical) not in claimed:
            problems.append(
                Problem(
                    name,
                    line,
                    item,
                    f"the canonical names no {alias.kind} this file or an earlier one interns "
                    "— import cannot resolve it",
                )
            )
        elif rewires(alias.alias, alias.canonical, alias.kind, claimed):
            problems.append(
                Problem(
                    name,
                    line,
                    item,
                    f"{quote_for_issue(alias.alias)} already names "
                    f"{quote_for_issue(claimed[(alias.kind, alias.alias)])}, settled by an "
                    "earlier file — import would refuse this file (one spelling, one referent)",
                )
            )
    return problems


def _alias_lines(data: bytes) -> dict[tuple[str, str], int]:
    """(kind, spelling) -> line number: the parser keeps items, not where they were."""
    found: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if b'"alias"' not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("alias"), str):
            found.setdefault((str(record.get("kind")), record["alias"]), number)
    return found


def render_text(result: Verification) -> str:
    lines = [problem.text() for problem in result.problems]
    verdict = "imports whole" if result.ok else f"{len(result.problems)} problem(s)"
    lines.append(f"verify: {result.files} source file(s), {verdict}")
    retired = result.retired
    if retired.records:
        again = f", {retired.written_again} written again since" if retired.written_again else ""
        lines.append(
            f"verify: {retired.records} segment(s) retired by extract --prune "
            f"({RETIRED}/): import retracts {retired.retracts} source(s){again}"
        )
    for run_id in retired.unfinished:
        lines.append(
            f"verify: the prune of extract run {run_id} was left unfinished — the next extract "
            "over this --out completes it; until then import sees the segments as they were"
        )
    return "\n".join(lines) + "\n"
