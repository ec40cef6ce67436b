"""A file name whose bytes are not UTF-8 (Python holds them as lone surrogates) is refused by
name, escaped, in one line — never a UnicodeEncodeError when the name is printed, hashed
into an output name or written into a header (found by tests/test_fuzz_corpus.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.text.terminal import printable

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"


def test_a_lone_surrogate_is_escaped_like_a_control_character() -> None:
    assert printable("a\udc80.md") == "a\\u{dc80}.md"


@pytest.mark.parametrize("given", ["folder", "file"])
def test_extract_refuses_a_segment_whose_name_is_not_utf8(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    bad = os.path.join(os.fsencode(tmp_path), b"caf\xe9.md")  # Latin-1, as an old disk names it
    with open(bad, "wb") as handle:
        handle.write(b"# A\n\ntext\n")
    (tmp_path / "fine.md").write_text("# B\n\ntext\n")
    path = str(tmp_path) if given == "folder" else os.fsdecode(bad)
    code = main(["extract", "--dry-run", "--context", CONTEXT, "--out", str(tmp_path / "out"),
                 path])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"{tmp_path}/caf\\u{{dce9}}.md: the name is not UTF-8 — rename it" in err
    assert "Traceback" not in err and "this is a bug" not in err


def test_sessions_import_refuses_a_file_whose_name_is_not_utf8_and_imports_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The index stores the file's name as text: such a name raised in SQLite, under the net."""
    fixture = Path(__file__).parent / "fixtures" / "sessions" / "openai-chat" / "boot-steps.jsonl"
    folder = tmp_path / "sessions"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.jsonl"), "wb") as handle:
        handle.write(fixture.read_bytes())
    (folder / "fine.jsonl").write_bytes(fixture.read_bytes())
    code = main(["sessions", "import", str(folder), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [f"{folder}/caf\\u{{dce9}}.jsonl: the name is not UTF-8 — rename it"]
    assert out.startswith(f"{folder}/fine.jsonl: added ")
