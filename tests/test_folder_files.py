"""The files a folder lists are read by name, each one, and one that cannot be read is said —
never dropped (found by tests/test_fuzz_import.py; issue 37, item 1).

fsspec's batched read took each name as a glob pattern (``[0].jsonl`` matched nothing) and
left out, without a word, every file it could not read: `import` and `verify` of a folder
passed over an unreadable source file and exited 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.store.outdir import OutDir
from tests.permissions import needs_permissions

SOURCE = next((Path(__file__).parent / "fixtures" / "records" / "run-a").glob("*.jsonl"))
GLOBBY = ["[0].jsonl", "a*.jsonl", "q?.jsonl", "{x}.jsonl"]


def test_a_name_like_a_glob_pattern_is_read_as_written(tmp_path: Path) -> None:
    for name in [*GLOBBY, "plain.jsonl"]:
        (tmp_path / name).write_bytes(name.encode())
    out = OutDir(str(tmp_path))
    names = [*GLOBBY, "plain.jsonl", "absent.jsonl"]
    assert out.read_many(names) == {name: name.encode() for name in names[:-1]}
    read = out.read_each(names)
    assert {name: read[name] for name in names[:-1]} == {n: n.encode() for n in names[:-1]}
    assert isinstance(read["absent.jsonl"], FileNotFoundError)


def test_import_and_verify_read_every_source_file_whatever_its_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    for name in GLOBBY:
        (folder / name).write_bytes(SOURCE.read_bytes())
    assert main(["import", str(folder), "--store", str(tmp_path / "st")]) == 0
    out = capsys.readouterr().out
    assert [line.split(": ")[0] for line in out.splitlines()] == sorted(
        f"{folder}/{name}" for name in GLOBBY
    )
    alone = tmp_path / "alone"  # one source per folder: copies of one source clash in verify
    alone.mkdir()
    (alone / "[0].jsonl").write_bytes(SOURCE.read_bytes())
    assert main(["verify", str(alone)]) == 0
    assert "1 source file(s), imports whole" in capsys.readouterr().out


@pytest.fixture
def one_unreadable(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(SOURCE.read_bytes())
    (folder / "b.jsonl").write_bytes(SOURCE.read_bytes())
    (folder / "a.jsonl").chmod(0)
    yield folder
    (folder / "a.jsonl").chmod(0o644)


@needs_permissions
def test_import_names_an_unreadable_source_file_and_imports_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, one_unreadable: Path
) -> None:
    code = main(["import", str(one_unreadable), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{one_unreadable}/a.jsonl: cannot read it (Permission denied)" in err
    assert out.startswith(f"{one_unreadable}/b.jsonl: imported ")


@needs_permissions
def test_verify_names_an_unreadable_source_file(
    capsys: pytest.CaptureFixture[str], one_unreadable: Path
) -> None:
    assert main(["verify", str(one_unreadable)]) == 1
    assert "a.jsonl" in capsys.readouterr().err


def test_an_unreadable_source_file_is_named_as_root_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root reads a file of mode 000: the refusal is made here, as a user meets it."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(SOURCE.read_bytes())
    (folder / "b.jsonl").write_bytes(SOURCE.read_bytes())
    real = OutDir.read_each

    def refuse_a(self: OutDir, names: list[str]) -> dict[str, bytes | OSError]:
        read = real(self, names)
        if "a.jsonl" in read:
            read["a.jsonl"] = PermissionError(13, "Permission denied")
        return read

    monkeypatch.setattr(OutDir, "read_each", refuse_a)
    code = main(["import", str(folder), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [f"taguru-ray: import: {folder}/a.jsonl: cannot read it "
                                "(Permission denied)"]  # fmt: skip
    assert out.startswith(f"{folder}/b.jsonl: imported ")
