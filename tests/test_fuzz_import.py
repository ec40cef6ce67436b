"""Hostile source files and stores for `import --store` (issue 37, "fuzz every reader").

A folder of source files broken from a real one (lines dropped, doubled or swapped for
other JSON, a value replaced or removed, unknown fields, deep nesting, bytes cut or
spliced), imported into a fresh store, a store that is a file, or one whose database is
garbage: exit 0, 1 or 2, no traceback, every file named on a line when the store opened,
nothing written outside --store, and what was stored still searches.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from taguru_ray.context.schema import FILE_NAME
from taguru_ray.text.terminal import printable
from tests.fuzzing import (
    NAMES,
    assert_clean,
    assert_wrote_only_under,
    damaged,
    mutated_lines,
    run,
    tree,
)

pytestmark = pytest.mark.fuzz

SOURCE = next((Path(__file__).parent / "fixtures" / "records" / "run-a").glob("*.jsonl"))
LINES = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line]


@st.composite
def source_bytes(draw: st.DrawFn) -> bytes:
    return draw(damaged(draw(mutated_lines(LINES, final_newline=True))))


@given(
    files=st.lists(st.tuples(NAMES, source_bytes()), min_size=1, max_size=3,
                   unique_by=lambda f: f[0]),
    store_kind=st.sampled_from(["fresh", "fresh", "fresh", "a file", "garbage"]),
)  # fmt: skip
def test_import_accounts_for_every_source_file_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
    files: list[tuple[str, bytes]], store_kind: str,
) -> None:  # fmt: skip
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    folder = scratch / "out"
    folder.mkdir()
    shown = []
    for stem, data in files:
        name = (stem.lstrip(".") or "s") + ".jsonl"  # a hidden name is skipped on purpose
        (folder / name).write_bytes(data)
        shown.append(printable(f"{folder}/{name}"))
    store = scratch / "store"
    if store_kind == "a file":
        store.write_text("not a folder\n")
    elif store_kind == "garbage":
        store.mkdir()
        (store / FILE_NAME).write_bytes(b"not SQLite\n" * 20)
    before = tree(scratch)
    ran = run(capsys, ["import", str(folder), "--store", str(store)])
    event(f"{store_kind}: exit {ran.code}")
    assert_clean(ran)
    if store_kind == "fresh":
        assert ran.code in (0, 1)
        for name in shown:  # imported (stdout) or refused (stderr), each by its name
            assert f"{name}" in ran.out + ran.err, (name, ran)
        searched = run(capsys, ["search", "alpha", "--store", str(store)])
        assert_clean(searched)
    else:
        assert ran.code == 2 and f"--store {store}" in ran.err
    assert_wrote_only_under(scratch, before, store)
