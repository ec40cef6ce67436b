"""Hostile corpus folders and files for `extract --dry-run` (issue 37, "fuzz every reader").

A folder of whatever a user's disk can hold — any bytes in any encoding, names in any
script or with control characters or undecodable bytes, FIFOs, links that dangle or loop,
subfolders and files of mode 000 — read as extract reads it, before any model or Ray:
one line per problem naming it, exit 0/1/2, and nothing written (a dry run writes
nowhere, --out included).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzzing import NAMES, assert_clean, assert_names_one_of, file_bytes, run, tree

pytestmark = pytest.mark.fuzz

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
SUFFIXES = st.sampled_from([".md", ".txt", ".MD", ".json", ""])
RAW_NAMES = st.binary(min_size=1, max_size=12).map(
    lambda name: name.replace(b"/", b"_").replace(b"\x00", b"_").replace(b".", b"_")
)
# Mostly files (their bytes are what most runs read), then everything else a folder holds.
KINDS = st.sampled_from(["file"] * 12 + ["fifo", "dangling", "loop", "to-file", "to-folder",
                                         "folder", "locked-file", "locked-folder"])  # fmt: skip


@st.composite
def entries(draw: st.DrawFn) -> list[tuple[bytes, str, bytes]]:
    """(name, kind, content) of each entry a corpus folder holds."""
    found: dict[bytes, tuple[str, bytes]] = {}
    for _ in range(draw(st.integers(0, 6))):
        stem = draw(NAMES).encode("utf-8") if draw(st.booleans()) else draw(RAW_NAMES)
        name = stem + draw(SUFFIXES).encode()
        if name in (b".", b".."):
            continue
        found[name] = (draw(KINDS), draw(file_bytes()))
    return [(name, kind, content) for name, (kind, content) in found.items()]


def make(folder: bytes, name: bytes, kind: str, content: bytes) -> None:
    path = os.path.join(folder, name)
    if kind in ("file", "locked-file"):
        with open(path, "wb") as handle:
            handle.write(content)
        if kind == "locked-file":
            os.chmod(path, 0)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        os.symlink(b"nowhere-" + name, path)
    elif kind == "loop":
        os.symlink(name, path)
    elif kind == "to-file":
        os.symlink(os.path.join(folder, b"target.md"), path)
        with open(os.path.join(folder, b"target.md"), "wb") as handle:
            handle.write(content)
    elif kind == "to-folder":
        os.symlink(folder, path)
    else:  # a folder, maybe locked, holding a segment
        os.mkdir(path)
        with open(os.path.join(path, b"inner.md"), "wb") as handle:
            handle.write(content)
        if kind == "locked-folder":
            os.chmod(path, 0)


def unlock(root: Path) -> None:
    """Modes back, so pytest can clean up (root needs none of this; a user does)."""
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
    for folder, dirs, _ in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o700)


@given(
    listing=entries(),
    pick=st.lists(st.integers(0, 7), max_size=3),
    whole=st.booleans(),
    missing=st.booleans(),
)
def test_extract_reads_any_corpus_folder_in_one_line_per_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    listing: list[tuple[bytes, str, bytes]], pick: list[int], whole: bool, missing: bool,
) -> None:  # fmt: skip
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    corpus = os.fsencode(scratch / "corpus")
    os.mkdir(corpus)
    try:
        for name, kind, content in listing:
            make(corpus, name, kind, content)
        paths = [os.fsdecode(corpus)] if whole or not listing else []
        paths += [os.fsdecode(os.path.join(corpus, listing[i % len(listing)][0]))
                  for i in pick if listing]  # fmt: skip
        paths += [os.fsdecode(corpus) + "/absent.md"] if missing else []
        before = tree(scratch)
        out = scratch / "out"
        ran = run(capsys, ["extract", "--dry-run", "--context", CONTEXT, "--out", str(out),
                           *(paths or [os.fsdecode(corpus)])])  # fmt: skip
        event(f"exit {ran.code}")
        assert_clean(ran)
        assert_names_one_of(ran, [*paths, os.fsdecode(corpus)])
        assert tree(scratch) == before  # a dry run writes nothing, --out included
    finally:
        unlock(scratch)
