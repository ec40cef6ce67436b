"""The one recursive walk (taguru_ray/store/walk.py): every file, and every folder it could not
list, said by the verb that walked — never a folder's files lost in silence (issue 37)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from taguru_ray.cli import main
from taguru_ray.store import walk as walk_module
from taguru_ray.store.walk import Unlisted, walk
from tests.permissions import needs_permissions

PACKAGE = Path(__file__).resolve().parents[1] / "taguru_ray"
LOCAL = fsspec.filesystem("file")


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.jsonl").write_text("x\n")
    (root / "top.jsonl").write_text("x\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.jsonl").write_text("x\n")
    (root / "locked").mkdir()
    (root / "locked" / "inside.jsonl").write_text("x\n")
    yield root
    (root / "locked").chmod(0o700)


def test_a_walk_finds_every_file_in_name_order_hidden_names_skipped(tree: Path) -> None:
    found = walk(LOCAL, str(tree))
    assert found.files == ["a/b/deep.jsonl", "locked/inside.jsonl", "top.jsonl"]
    assert found.unlisted == []
    assert ".hidden/x.jsonl" in walk(LOCAL, str(tree), hidden=True).files


def test_a_folder_that_cannot_be_listed_is_named_and_the_rest_is_found(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root lists any folder: the refusal is made here, as a user's folder of mode 000 makes it."""
    scandir = os.scandir

    def refuse(path: str) -> object:
        if path.endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(walk_module.os, "scandir", refuse)
    found = walk(LOCAL, str(tree))
    assert found.files == ["a/b/deep.jsonl", "top.jsonl"]
    assert found.unlisted == [Unlisted("locked", "Permission denied")]


def test_a_link_loop_is_walked_once(tree: Path) -> None:
    (tree / "a" / "b" / "up").symlink_to(tree / "a")
    (tree / "again").symlink_to(tree / "a")
    found = walk(LOCAL, str(tree))
    assert sorted(set(found.files)) == found.files  # no file twice
    assert sum(name.endswith("deep.jsonl") for name in found.files) == 1
    assert found.unlisted == []


def test_a_walk_of_another_filesystem_says_an_unlisted_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe({"/w/one/a.jsonl": b"x", "/w/two/b.jsonl": b"x"})
    listing = fs.ls

    def refuse(path: str, detail: bool = True) -> object:
        if path.rstrip("/").endswith("two"):
            raise PermissionError("Access Denied")
        return listing(path, detail=detail)

    monkeypatch.setattr(fs, "ls", refuse)
    try:
        found = walk(fs, "/w")
    finally:
        fs.rm("/w", recursive=True)
    assert found.files == ["one/a.jsonl"]
    assert found.unlisted == [Unlisted("two", "Access Denied")]


# ---------------------------------------------------------------- the verbs


@needs_permissions
def test_sessions_import_names_an_unreadable_subfolder_and_imports_the_rest(
    capsys: pytest.CaptureFixture[str], tree: Path, tmp_path: Path
) -> None:
    _sessions(tree)
    (tree / "locked").chmod(0)
    code = main(["sessions", "import", str(tree), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{tree}/locked: cannot read it (Permission denied)" in err
    assert "Traceback" not in err and "this is a bug" not in err
    assert [line.split(":")[0] for line in out.splitlines()] == [f"{tree}/top.jsonl"]


def test_sessions_import_names_an_unlisted_subfolder_as_root_too(
    capsys: pytest.CaptureFixture[str], tree: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _sessions(tree)
    scandir = os.scandir

    def refuse(path: str) -> object:
        if path.endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(walk_module.os, "scandir", refuse)
    code = main(["sessions", "import", str(tree), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        f"taguru-ray: sessions import: {tree}/locked: cannot read it (Permission denied) — its "
        "session files were not imported; make it readable and import again",
    ]
    assert [line.split(":")[0] for line in out.splitlines()] == [f"{tree}/top.jsonl"]


def _sessions(tree: Path) -> None:
    """A real session file where the tree's files are, and one in the folder to lock."""
    fixture = Path(__file__).parent / "fixtures" / "sessions" / "openai-chat" / "boot-steps.jsonl"
    (tree / "top.jsonl").write_bytes(fixture.read_bytes())
    (tree / "locked" / "inside.jsonl").write_bytes(fixture.read_bytes())
    (tree / "a" / "b" / "deep.jsonl").unlink()


# ---------------------------------------------------------------- no other recursive walk

# Calls that walk a tree and skip, unsaid, what they cannot list.
RECURSIVE = {"walk", "glob", "find"}


def _calls(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield node.lineno, ast.unparse(node.func.value), node.func.attr


def test_no_module_but_the_walker_walks_a_tree() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "store" / "walk.py":
            continue
        for line, receiver, name in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            walks_tree = name in {"rglob", "fwalk", "iglob"} or (
                name in RECURSIVE and (receiver in {"os", "glob"} or receiver.endswith("fs"))
            )
            if walks_tree:
                strays.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {receiver}.{name}")
    assert strays == [], "walk a tree with taguru_ray.store.walk.walk, which names what it skips"


# ---------------------------------------------------------------- a file a folder hides


@pytest.fixture
def hidden_by_its_folder(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A segment, a source file and a session file inside a folder of mode 000, and a
    readable folder holding one of each beside it."""
    fixtures = Path(__file__).parent / "fixtures"
    session = (fixtures / "sessions" / "openai-chat" / "boot-steps.jsonl").read_bytes()
    source = next((fixtures / "records" / "run-a").glob("*.jsonl")).read_bytes()
    locked, open_ = tmp_path / "locked", tmp_path / "open"
    for folder in (locked, open_):
        folder.mkdir()
        (folder / "seg.md").write_text("# Title\n\nSome text.\n")
        (folder / "src.jsonl").write_bytes(source)
        (folder / "s.json").write_bytes(session)
    locked.chmod(0)
    yield locked, open_
    locked.chmod(0o700)


@needs_permissions
@pytest.mark.parametrize(
    ("verb", "name", "says"),
    [
        (["import", "--store"], "src.jsonl", "cannot read it"),
        (["sessions", "import", "--store"], "s.json", "cannot read it"),
    ],
)
def test_a_file_a_folder_hides_is_unreadable_not_missing_and_the_rest_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, hidden_by_its_folder: tuple[Path, Path],
    verb: list[str], name: str, says: str,
) -> None:  # fmt: skip
    locked, open_ = hidden_by_its_folder
    code = main([*verb, str(tmp_path / "st"), str(locked / name), str(open_ / name)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{locked / name}: {says}" in err and "Permission denied" in err
    assert "no such file" not in err and "Traceback" not in err and "this is a bug" not in err
    assert str(open_ / name) in out


@needs_permissions
def test_extract_says_a_segment_a_folder_hides_is_unreadable_and_plans_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, hidden_by_its_folder: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    locked, open_ = hidden_by_its_folder
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    code = main(["extract", "--dry-run", "--out", str(tmp_path / "out"), "--context",
                 "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f", str(locked / "seg.md"),
                 str(open_ / "seg.md")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{locked / 'seg.md'}: cannot read it" in err and "Permission denied" in err
    assert "1 planned, 0 unchanged, 1 failed of 2 segment(s)" in out
