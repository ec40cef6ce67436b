"""What every reader's property test asserts (issue 37, "fuzz every reader"), and the
strategies they share.

A verb run in process on hostile input ends with exit 0, 1 or 2; nothing on stdout or
stderr is a traceback or the net's "this is a bug" line (`cli/boundary.py`); a failure
names the input it is about; and nothing appears outside the folders the verb was
given to write (`--out`, `--store`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event
from hypothesis import strategies as st

from taguru_ray.cli import main
from taguru_ray.text.terminal import printable


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Ran:
    """The console script in process; argparse's own exit counts as its code."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:  # a verb that lets argparse exit is still a clean end
        code = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def assert_clean(ran: Ran, codes: Iterable[int] = (0, 1, 2)) -> None:
    assert ran.code in tuple(codes), (ran.code, ran.err[-2000:])
    for stream in (ran.out, ran.err):
        assert "Traceback" not in stream, stream[-2000:]
        assert "this is a bug" not in stream, stream[-2000:]


def assert_names_one_of(ran: Ran, inputs: Iterable[str]) -> None:
    """A failure says which input it is about (as printed: control characters escaped)."""
    if ran.code == 0:
        return
    shown = [printable(name) for name in inputs]
    assert any(name in ran.err for name in shown), (shown, ran.err[-2000:])


def tree(root: Path) -> set[str]:
    """Every path under `root`, relative (links not followed; unreadable folders as met)."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):  # a test's own look, not the package's walk
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return found


def assert_wrote_only_under(root: Path, before: set[str], *allowed: Path) -> None:
    """Nothing new under `root` but inside the `allowed` folders."""
    prefixes = [os.path.relpath(folder, root) for folder in allowed]
    new = {
        path for path in tree(root) - before
        if not any(path == p or path.startswith(p + os.sep) for p in prefixes)
    }  # fmt: skip
    assert new == set(), new


# ---------------------------------------------------------------- shared strategies

# Names a hostile user gives files: spaces, escapes, control characters, other scripts,
# leading dashes and dots (a dash-led name is passed as ./-x by the tests that use it).
NAME_CHARS = st.characters(
    blacklist_categories=("Cs",), blacklist_characters="/\x00", max_codepoint=0x2FFFF
)
NAMES = st.text(NAME_CHARS, min_size=1, max_size=24).filter(
    lambda name: name not in (".", "..") and len(name.encode("utf-8")) <= 200
)

# Text as files hold it: any Unicode, odd line ends, BOMs, lone surrogates escaped out.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)
ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1", "cp932"])


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    """A file's content: text in some encoding (what it cannot encode replaced), raw
    bytes, or text with raw bytes spliced in."""
    kind = draw(st.sampled_from(["text", "bytes", "spliced", "empty"]))
    if kind == "empty":
        return b""
    if kind == "bytes":
        return draw(st.binary(max_size=600))
    data = draw(TEXT).encode(draw(ENCODINGS), errors="replace")
    if kind == "spliced":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    return data


JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
)  # fmt: skip
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=4),
    max_leaves=12,
)  # fmt: skip

CONTROL = st.sampled_from(["\x1b[2J", "\x07", "\x00", "\u202e", "\r", "\u2028", "\x9b"])


@st.composite
def broken_value(draw: st.DrawFn, value: Any) -> Any:
    """`value` with one place inside it replaced, removed, grown or poisoned."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        copy = dict(value)
        move = draw(st.sampled_from(["descend", "descend", "drop", "add"]))
        if move == "drop":
            del copy[key]
        elif move == "add":
            copy[draw(st.text(max_size=10))] = draw(JSON)
        else:
            copy[key] = draw(broken_value(value[key]))
        return copy
    if isinstance(value, list) and value and draw(st.booleans()):
        at = draw(st.integers(0, len(value) - 1))
        return [*value[:at], draw(broken_value(value[at])), *value[at + 1 :]]
    if isinstance(value, str) and draw(st.booleans()):
        at = draw(st.integers(0, len(value)))
        return value[:at] + draw(CONTROL) + value[at:]
    return draw(st.one_of(JSON, st.integers(500, 3000).map(nested)))


def nested(depth: int) -> list[Any]:
    """Lists `depth` deep: around Python's recursion limit, past it or just short of it."""
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def dumps(value: Any) -> str:
    """JSON text of `value`; past what json.dumps follows, a document as deep as that."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return "[" * 100_000 + "]" * 100_000


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[Any], *, final_newline: bool = False) -> bytes:
    """A JSONL file of `lines` with up to three lines broken, dropped, doubled or swapped
    for any JSON value: the damage one bad edit or a bad generator does."""
    lines = list(lines)
    for _ in range(draw(st.integers(0, 3))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        move = draw(st.sampled_from(["break", "break", "drop", "twice", "swap"]))
        if move == "break":
            lines[at] = draw(broken_value(lines[at]))
        elif move == "drop":
            del lines[at]
        elif move == "twice":
            lines.insert(at, lines[at])
        else:
            lines[at] = draw(JSON)
    data = "\n".join(dumps(line) for line in lines).encode("utf-8", "surrogatepass")
    return data + b"\n" if final_newline else data


@st.composite
def damaged(draw: st.DrawFn, data: bytes, *, other: bool = False) -> bytes:
    """`data` as it is, cut short, with a few stray bytes spliced in, or (`other`) another
    file's bytes altogether."""
    damage = draw(st.sampled_from(
        ["none", "none", "none", "cut", "splice", *(["other"] if other else [])]))
    event(f"damage {damage}")
    if damage == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if damage == "splice":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=12)) + data[at:]
    if damage == "other":
        return draw(file_bytes())
    return data
