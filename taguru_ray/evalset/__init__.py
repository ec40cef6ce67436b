"""eval.jsonl, the one dataset `evaluate` and `benchmark search` share (EVALUATE.md §3.1,
BENCHMARK.md §4).

One `{"taguru_eval": 1}` header line, then one case per line. `evaluate` loads it
with `Mode.INTERPRET` (every field typed and validated, no warning);
`benchmark search` with `Mode.CARRY` (the evaluate-only fields ride through
unread, one warning per run if any case carries one). Both modes refuse an
unknown key, so a typo in a hand-written file is always an error.

`parse` is pure (text in, `EvalSet` out); `load` reads the file first.
"""

from taguru_ray.evalset.load import load
from taguru_ray.evalset.parse import CARRY_CONSUMER, EVAL_VERSION, parse
from taguru_ray.evalset.records import (
    DEFAULT_LIMIT,
    LIMIT_RANGE,
    SECTION_UNCHECKED,
    Case,
    EvalSet,
    EvalSetError,
    ExpectedAssociation,
    ExpectedCitation,
    ExpectedSource,
    Mode,
    Options,
    Unset,
    limit_problem,
)

__all__ = [
    "CARRY_CONSUMER",
    "DEFAULT_LIMIT",
    "EVAL_VERSION",
    "LIMIT_RANGE",
    "SECTION_UNCHECKED",
    "Case",
    "EvalSet",
    "EvalSetError",
    "ExpectedAssociation",
    "ExpectedCitation",
    "ExpectedSource",
    "Mode",
    "Options",
    "Unset",
    "limit_problem",
    "load",
    "parse",
]
