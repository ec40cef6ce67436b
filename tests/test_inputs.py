from pathlib import Path

import pytest

from taguru_ray.errors import UsageError
from taguru_ray.store.inputs import READ_LIMIT, expand, read_source


def test_a_folder_contributes_its_md_and_txt_files_in_name_order(tmp_path: Path) -> None:
    for name in ("b.md", "a.txt", "c.MD", "d.json", "e.md"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.md").write_text("x")
    folder = str(tmp_path)
    assert expand([folder]) == [f"{folder}/a.txt", f"{folder}/b.md", f"{folder}/e.md"]


def test_files_keep_argument_order_and_the_path_as_typed(tmp_path: Path) -> None:
    (tmp_path / "z.md").write_text("x")
    (tmp_path / "a.md").write_text("x")
    assert expand([f"{tmp_path}/z.md", f"{tmp_path}/a.md"]) == [
        f"{tmp_path}/z.md",
        f"{tmp_path}/a.md",
    ]
    assert expand([f"{tmp_path}/"]) == [f"{tmp_path}/a.md", f"{tmp_path}/z.md"]


def test_fsspec_urls_are_inputs_too(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello")
    [source] = expand([f"file://{tmp_path}"])
    assert source == f"file://{tmp_path}/a.md"
    assert read_source(source) == b"hello"


def test_missing_path_and_empty_folder_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        expand([str(tmp_path / "absent")])
    with pytest.raises(UsageError, match=r"holds no \.md or \.txt files"):
        expand([str(tmp_path)])


def test_reading_stops_past_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_bytes(b"a" * (READ_LIMIT + 100))
    assert len(read_source(str(big))) == READ_LIMIT
