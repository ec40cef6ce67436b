"""Hostile session files of each agent format for `sessions import` (issue 37, "fuzz every
reader").

Each example starts from a real session of one format (tests/fixtures/sessions) and breaks
it the ways a disk, an agent upgrade or an attacker would: records dropped, duplicated or
swapped for other JSON, a field's value replaced or removed, an unknown field added,
nesting deeper than the reader follows, control characters in the text, the bytes cut,
spliced with garbage or re-encoded. A folder of such files, imported: exit 0 or 1, no
traceback, every file accounted for by name (stored, or refused in one line), nothing
written outside --store, and the store still lists.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from taguru_ray.sessions.convert.records import read
from taguru_ray.text.terminal import printable
from tests.fuzzing import (
    JSON,
    NAMES,
    assert_clean,
    assert_wrote_only_under,
    broken_value,
    run,
    tree,
)

pytestmark = pytest.mark.fuzz

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
SESSIONS = {
    path.relative_to(FIXTURES).as_posix(): [record.value for record in read(path.read_text())]
    for path in sorted(FIXTURES.rglob("*")) if path.suffix in (".jsonl", ".json")
}  # fmt: skip
@st.composite
def session_bytes(draw: st.DrawFn) -> tuple[str, bytes]:
    """(the fixture it came from, the broken file's bytes)."""
    origin = draw(st.sampled_from(sorted(SESSIONS)))
    records = list(SESSIONS[origin])
    for _ in range(draw(st.integers(0, 3))):
        if not records:
            break
        at = draw(st.integers(0, len(records) - 1))
        move = draw(st.sampled_from(["break", "break", "drop", "twice", "swap"]))
        if move == "break":
            records[at] = draw(broken_value(records[at]))
        elif move == "drop":
            del records[at]
        elif move == "twice":
            records.insert(at, records[at])
        else:
            records[at] = draw(JSON)
    as_array = origin.endswith(".json") if draw(st.booleans()) else draw(st.booleans())
    try:
        text = (json.dumps(records, ensure_ascii=False) if as_array
                else "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    except RecursionError:  # nested past what json.dumps itself follows
        text = "[" * 100_000 + "]" * 100_000
    data = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "none", "cut", "splice", "utf-16", "bom", "deep"]))
    if damage == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "splice":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=12)) + data[at:]
    elif damage == "utf-16":
        data = text.encode("utf-16", "surrogatepass")
    elif damage == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage == "deep":
        data += b"[" * 50_000 + b"]" * 50_000 + b"\n"
    event(f"{origin.split('/')[0]}, {damage}")
    return origin, data


@given(
    files=st.lists(st.tuples(NAMES, st.sampled_from([".jsonl", ".json"]), session_bytes()),
                   min_size=1, max_size=4, unique_by=lambda f: f[0] + f[1]),
    nested=st.booleans(),
    mask=st.booleans(),
    form=st.none() | st.sampled_from(["claude-code", "codex", "openai-chat"]),
)  # fmt: skip
def test_import_accounts_for_every_session_file_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
    files: list[tuple[str, str, tuple[str, bytes]]], nested: bool, mask: bool,
    form: str | None,
) -> None:  # fmt: skip
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    folder = scratch / "sessions"
    shown: list[str] = []
    for index, (stem, suffix, (_, data)) in enumerate(files):
        place = folder / "deeper" if nested and index % 2 else folder
        place.mkdir(parents=True, exist_ok=True)
        name = stem.lstrip(".") or "s"  # a hidden name is skipped on purpose: not this test's
        (place / f"{name}{suffix}").write_bytes(data)
        shown.append(printable(f"{folder}/{os.path.relpath(place / (name + suffix), folder)}"))
    store = scratch / "store"
    before = tree(scratch)
    argv = ["sessions", "import", str(folder), "--store", str(store)]
    argv += ["--mask"] if mask else []
    argv += ["--format", form] if form else []
    ran = run(capsys, argv)
    event(f"exit {ran.code}")
    assert_clean(ran, codes=(0, 1))
    for name in shown:  # stored (stdout) or refused (stderr), each by its name
        assert f"{name}: " in ran.out + ran.err, (name, ran)
    assert_wrote_only_under(scratch, before, store)
    listed = run(capsys, ["sessions", "list", "--store", str(store)])
    assert_clean(listed, codes=(0,))
