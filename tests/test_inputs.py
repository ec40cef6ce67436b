import os
from pathlib import Path

import pytest

from taguru_ray.errors import UsageError
from taguru_ray.store import inputs
from taguru_ray.store.config_file import read_config_file
from taguru_ray.store.inputs import READ_LIMIT, NotRegularFile, expand, read_regular, read_source


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


def test_a_fifo_or_a_device_is_refused_by_name_before_a_byte_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"pipe\.md: a FIFO, not a regular file"):
        expand([str(fifo)])
    with pytest.raises(UsageError, match="/dev/zero: a character device, not a regular file"):
        expand(["/dev/zero"])
    with pytest.raises(NotRegularFile):  # opened without blocking: no writer needed
        read_regular(str(fifo))
    with pytest.raises(NotRegularFile):
        read_source("/dev/zero")


def test_an_entry_of_a_folder_that_is_no_regular_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    os.mkfifo(tmp_path / "b.md")
    with pytest.raises(UsageError, match=r"/b\.md: a FIFO, not a regular file"):
        expand([str(tmp_path)])
    os.unlink(tmp_path / "b.md")
    (tmp_path / "loop.md").symlink_to(tmp_path / "loop.md")
    with pytest.raises(UsageError, match=r"loop\.md: a symbolic link that cannot be followed"):
        expand([str(tmp_path)])
    with pytest.raises(UsageError, match=r"loop\.md: a symbolic link that cannot be followed"):
        expand([str(tmp_path / "loop.md")])
    os.unlink(tmp_path / "loop.md")
    (tmp_path / "notes.json").symlink_to(tmp_path / "nowhere")  # not a segment name: ignored
    assert expand([str(tmp_path)]) == [f"{tmp_path}/a.md"]


def test_a_folder_that_cannot_be_listed_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_text("x")

    def refuse(path: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(inputs.os, "scandir", refuse)  # root reads any folder: say it did not
    with pytest.raises(UsageError, match=r"cannot be read \(Permission denied\)"):
        expand([str(tmp_path)])


def test_a_config_file_must_be_a_regular_file_and_a_bad_line_is_never_echoed(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "config"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="a FIFO, not a regular file"):
        read_config_file(str(fifo))
    bad = tmp_path / "bad.env"
    bad.write_text("TAGURU_EXTRACT_API_KEY sk-secret-value\n")
    with pytest.raises(UsageError) as refused:
        read_config_file(str(bad))
    assert "line 1: expected KEY=VALUE" in str(refused.value)
    assert "sk-secret" not in str(refused.value)


def test_the_sources_are_held_compactly_and_read_as_a_list(tmp_path: Path) -> None:
    """A folder's names front-coded (ADR 0042), the sources equal to the list."""
    names = ["b.md", "a.txt", "日本語.md", "z z.md"]
    for name in names:
        (tmp_path / name).write_text("x")
    single = tmp_path / "single.md"
    single.write_text("x")
    folder = str(tmp_path)
    sources = expand([f"{folder}/", str(single), folder])
    listed = sorted([*names, "single.md"])
    expected = [f"{folder}/{n}" for n in listed] + [str(single)] + [f"{folder}/{n}" for n in listed]
    assert sources == expected and list(sources) == expected and len(sources) == len(expected)
    assert [sources[i] for i in range(len(expected))] == expected
    assert sources[-1] == expected[-1] and sources[2:4] == expected[2:4]
    assert sources.parts == 3
    with pytest.raises(IndexError):
        sources[len(expected)]


def test_a_name_that_is_not_utf8_is_refused_by_name(tmp_path: Path) -> None:
    """A source is UTF-8 text in the header, the output name and every record; such a
    name raised UnicodeEncodeError there (tests/test_undecodable_names.py)."""
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9.md")
    with open(raw, "wb") as handle:
        handle.write(b"x")
    with pytest.raises(UsageError, match=r"caf\\u\{dce9\}\.md: the name is not UTF-8"):
        expand([str(tmp_path)])


def test_a_short_read_is_read_on_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"0123456789" * 10)
    real = os.read
    monkeypatch.setattr(inputs.os, "read", lambda fd, n: real(fd, min(n, 7)))
    assert read_regular(str(path)) == b"0123456789" * 10
    assert read_regular(str(path), 25) == (b"0123456789" * 10)[:25]
    assert read_source(str(path)) == b"0123456789" * 10
