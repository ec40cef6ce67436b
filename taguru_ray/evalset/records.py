"""The typed records an eval.jsonl loads into (EVALUATE.md §3.1, BENCHMARK.md §4).

Frozen values: `evaluate` and `benchmark search` read them and never change them.
Under `Mode.CARRY` the evaluate-only fields (`expected_labels`,
`expected_associations`, `expected_citations`, `options.floor|tags|since|until`)
stay empty or None whatever the file says: benchmark search has no business
reading fields it does not interpret.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from taguru_ray.errors import UsageError
from taguru_ray.evalset.values import short

# A case's `options.limit` both verbs accept, and the one they use when it is absent.
LIMIT_RANGE = (1, 1000)
DEFAULT_LIMIT = 10


class EvalSetError(UsageError):
    """eval.jsonl cannot be used (exit 2); one line, `PATH: line N: what is wrong`."""


class Mode(enum.Enum):
    """How the loader treats the evaluate-only fields.

    INTERPRET (`evaluate`): typed and validated; a malformed one is an error.
    CARRY (`benchmark search`): accepted as any JSON value, unread, one warning per
    run — a parse error would be interpreting fields that verb has no use for.
    """

    INTERPRET = "interpret"
    CARRY = "carry"


class Unset(enum.Enum):
    """The type of `SECTION_UNCHECKED` (a one-member enum is a typed sentinel)."""

    UNCHECKED = "unchecked"


# `expected_citations[].section` absent: the section is not checked at all.
SECTION_UNCHECKED = Unset.UNCHECKED


@dataclass(frozen=True, slots=True)
class ExpectedSource:
    """A source that answers the case; `paragraphs` empty means any paragraph does."""

    source: str
    paragraphs: tuple[int, ...] = ()
    relevance: int = 1  # 0..=3, graded for nDCG; recall counts relevance >= 1


@dataclass(frozen=True, slots=True)
class ExpectedAssociation:
    """A triple the graph should hold; `/query` pins all three positions."""

    subject: str
    label: str
    object: str


@dataclass(frozen=True, slots=True)
class ExpectedCitation:
    """A locator the citation lane checks.

    `section` is three-valued: `SECTION_UNCHECKED` (key absent) skips the check,
    None (explicit null) asserts the paragraph lies outside every stored section,
    a string must equal the served section exactly. Compare with `is`.
    """

    source: str
    paragraph: int
    section: str | Unset | None = SECTION_UNCHECKED
    quote: str | None = None  # normalized-substring matched against the paragraph


@dataclass(frozen=True, slots=True)
class Options:
    """A case's `options`; only `limit` is read in both modes."""

    limit: int | None = None  # typed, not range-checked: see `limit_problem`
    floor: float | None = None  # 0..=1
    tags: tuple[str, ...] = ()
    since: int | None = None
    until: int | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """One question with what should answer it; `line` is its 1-based file line."""

    case_id: str
    query: str
    cues: tuple[str, ...] = ()
    expected_sources: tuple[ExpectedSource, ...] = ()
    expected_concepts: tuple[str, ...] = ()
    expected_labels: tuple[str, ...] = ()
    expected_associations: tuple[ExpectedAssociation, ...] = ()
    expected_citations: tuple[ExpectedCitation, ...] = ()
    options: Options = Options()
    line: int = 0

    @property
    def has_expectations(self) -> bool:
        """Whether recall@k / MRR apply (true even if every source has relevance 0)."""
        return bool(self.expected_sources or self.expected_concepts)

    @property
    def structural_expected(self) -> bool:
        """Whether evaluate runs the structural lane (resolve, resolve_label, query)."""
        return bool(self.expected_concepts or self.expected_labels or self.expected_associations)


@dataclass(frozen=True, slots=True)
class EvalSet:
    """A loaded eval.jsonl: the header's name, its cases in file order, and the
    loader's warnings, each to be printed once per run."""

    name: str | None
    cases: tuple[Case, ...]
    warnings: tuple[str, ...] = ()


def limit_problem(case: Case) -> str | None:
    """Why the case's `options.limit` is out of `LIMIT_RANGE`, or None.

    The loader only types `limit`; the range is the calling verb's rule (both exit 2
    on it). The message is `line N: case 'ID': …` — prefix the eval path to match
    the loader's own errors.
    """
    low, high = LIMIT_RANGE
    limit = case.options.limit
    if limit is None or low <= limit <= high:
        return None
    return (
        f"line {case.line}: case {short(case.case_id)}: "
        f"options.limit must be {low}..={high}, got {limit}"
    )
