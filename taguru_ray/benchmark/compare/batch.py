"""One written batch file read leniently, line by line (BENCHMARK.md §2.1).

The import parser stops at the first bad line; counting malformed lines needs
the opposite trade-off, so each line is classified on its own — header,
passage, section, association, alias, question, or invalid — and tallied; a
header is either shape import reads (`contract.source_file.is_header`). The
association and alias lines are kept as `identity` rows for stability and
differences: one read of the file serves both.
"""

from __future__ import annotations

from dataclasses import dataclass

from taguru_ray.benchmark.compare.identity import ALIAS_KINDS, AliasLine, RawAssociation
from taguru_ray.benchmark.compare.serde import as_f64, as_str, as_u64, lines, parse_line
from taguru_ray.contract.source_file import is_header, is_section


@dataclass(frozen=True)
class BatchStats:
    """What one batch holds, counted; `associations`/`aliases` are its identity rows."""

    assoc_lines: int
    weight_positive: int
    weight_negative: int
    paragraph_attributed: int
    subjects: frozenset[str]
    relations: frozenset[str]
    alias_orphans: int
    paragraph_out_of_range: int
    invalid_lines: int
    associations: tuple[RawAssociation, ...]
    aliases: tuple[AliasLine, ...]


def analyze_batch(text: str, paragraph_count: int | None) -> BatchStats:
    """Classify and count a batch's lines.

    ``paragraph_count`` None means the segment has no manifest entry: no
    paragraph can then be out of range. Paragraphs compare as Python integers,
    so 2**32 cannot wrap to a small index.
    """
    associations: list[RawAssociation] = []
    alias_rows: list[tuple[str, str, str]] = []  # (alias, canonical, kind), every kind
    located: list[int] = []  # paragraphs of associations and questions
    invalid = 0
    for line in lines(text):
        parsed, record = parse_line(line)
        if not parsed or not isinstance(record, dict):
            invalid += 1
            continue
        # A header in either shape import reads (taguru-ray's own `type: source` or the
        # older `taguru_batch`), a passage and a section line are not items to count.
        if is_header(record) or "passage" in record or is_section(record):
            continue
        association = _association(record)
        if association is not None:
            associations.append(association)
            if association.paragraph is not None:
                located.append(association.paragraph)
            continue
        alias, canonical, kind = (as_str(record.get(k)) for k in ("alias", "canonical", "kind"))
        if alias is not None and canonical is not None and kind is not None:
            alias_rows.append((alias, canonical, kind))
            continue
        if "question" in record:
            paragraph = as_u64(record.get("paragraph"))
            if paragraph is not None:
                located.append(paragraph)
            continue
        invalid += 1
    return _stats(associations, alias_rows, located, invalid, paragraph_count)


def _association(record: dict[str, object]) -> RawAssociation | None:
    subject, label, obj = (as_str(record.get(k)) for k in ("subject", "label", "object"))
    weight = as_f64(record.get("weight"))
    if subject is None or label is None or obj is None or weight is None:
        return None
    return RawAssociation(subject, label, obj, weight, as_u64(record.get("paragraph")))


def _stats(
    associations: list[RawAssociation],
    alias_rows: list[tuple[str, str, str]],
    located: list[int],
    invalid: int,
    paragraph_count: int | None,
) -> BatchStats:
    subjects = frozenset(row.subject for row in associations)
    relations = frozenset(row.label for row in associations)
    concepts = subjects | {row.object for row in associations}
    # An alias is orphaned when its canonical names nothing the batch uses;
    # a kind the writer never emits is not this count's to judge.
    universe = {"concept": concepts, "label": relations}
    orphans = sum(
        1
        for _, canonical, kind in alias_rows
        if kind in universe and canonical not in universe[kind]
    )
    out_of_range = 0 if paragraph_count is None else sum(1 for p in located if p >= paragraph_count)
    return BatchStats(
        assoc_lines=len(associations),
        weight_positive=sum(1 for row in associations if row.weight > 0),
        weight_negative=sum(1 for row in associations if row.weight < 0),
        paragraph_attributed=sum(1 for row in associations if row.paragraph is not None),
        subjects=subjects,
        relations=relations,
        alias_orphans=orphans,
        paragraph_out_of_range=out_of_range,
        invalid_lines=invalid,
        associations=tuple(associations),
        aliases=tuple(
            AliasLine(alias, canonical, kind)
            for alias, canonical, kind in alias_rows
            if kind in ALIAS_KINDS
        ),
    )
