"""eval.jsonl text → `EvalSet`: the header, the cases, the one CARRY warning.

The file is written by hand, so the header is equality-checked (a version this
build was not made for is refused, not reinterpreted) and every object's keys
are strict. Every check that can run before a request runs here: a malformed
dataset must stop the verb at startup (exit 2), never surface mid-run as a
confusing per-case failure. Errors are one line, `PATH: line N: what is wrong`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from taguru_ray.evalset.case import EXTENSION_FIELDS, EXTENSION_OPTIONS, read_case
from taguru_ray.evalset.records import Case, EvalSet, EvalSetError, Mode
from taguru_ray.evalset.values import Problem, check_keys, obj, short, shown, string

EVAL_VERSION = 1
HEADER_KEYS = ("taguru_eval", "name", "default_target")  # default_target: read, ignored
# Who the CARRY warning says does not read the evaluate-only fields.
CARRY_CONSUMER = "taguru-ray benchmark search"
_CARRIED_ORDER = (*EXTENSION_FIELDS, *(f"options.{key}" for key in EXTENSION_OPTIONS))


def parse(text: str, path: str, mode: Mode) -> EvalSet:
    """Read eval.jsonl `text`; `path` is only what messages call the file.

    Lines are split on LF and trimmed, blank ones skipped, a leading BOM dropped;
    the first non-blank line is the header, every later one a case.
    """
    lines = [
        (number, line)
        for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1)
        if line.strip()
    ]
    if not lines:
        raise EvalSetError(f'{path}: empty file (the first line must be {{"taguru_eval": 1}})')
    (number, line), *case_lines = lines
    with _at(path, number):
        name = _header(_json(line))
    if not case_lines:
        raise EvalSetError(f"{path}: no cases (at least one case line must follow the header)")

    cases: list[Case] = []
    first_seen: dict[str, int] = {}
    carried: set[str] = set()
    for number, line in case_lines:
        with _at(path, number):
            case, fields = read_case(_json(line), number, mode)
        if case.case_id in first_seen:
            raise EvalSetError(
                f"{path}: line {number}: duplicate case_id {short(case.case_id)} "
                f"(first on line {first_seen[case.case_id]})"
            )
        first_seen[case.case_id] = number
        carried.update(fields)
        cases.append(case)

    warnings: tuple[str, ...] = ()
    if mode is Mode.CARRY and carried:
        seen = ", ".join(field for field in _CARRIED_ORDER if field in carried)
        warnings = (
            f"{path}: fields only taguru-ray evaluate reads ({seen}) ride through unread: "
            f"{CARRY_CONSUMER} does not interpret them",
        )
    return EvalSet(name=name, cases=tuple(cases), warnings=warnings)


@contextmanager
def _at(path: str, number: int) -> Iterator[None]:
    """Turn a Problem inside into the one-line error naming file and line."""
    try:
        yield
    except Problem as problem:
        raise EvalSetError(f"{path}: line {number}: {problem}") from None


def _json(line: str) -> Any:
    """The line's JSON value; NaN and Infinity are not JSON, as a strict reader says."""
    indent = len(line) - len(line.lstrip())
    try:
        return json.loads(line.strip(), parse_constant=_not_a_number)
    except json.JSONDecodeError as error:
        raise Problem(f"not JSON ({error.msg} at column {error.colno + indent})") from None
    except RecursionError:
        raise Problem("not JSON (nested too deeply)") from None


def _not_a_number(constant: str) -> Any:
    raise Problem(f"not JSON ({constant} is not a JSON number)")


def _header(value: Any) -> str | None:
    """The header's `name`, once `taguru_eval` equals 1 and no key is unknown."""
    raw = obj(value, "the header line")
    try:
        if "taguru_eval" not in raw:
            raise Problem('taguru_eval is required: the first line must be {"taguru_eval": 1}')
        version = raw["taguru_eval"]
        if type(version) is not int or version != EVAL_VERSION:
            raise Problem(f"taguru_eval must be {EVAL_VERSION}, got {shown(version)}")
        check_keys(raw, HEADER_KEYS, "")
        name = raw.get("name")
        return None if name is None else string(name, "name")
    except Problem as problem:
        raise Problem(f"header: {problem}") from None
