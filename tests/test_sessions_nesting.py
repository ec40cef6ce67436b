"""A session file nested deeper than the JSON reader follows is refused by name, one line, and
`sessions import` goes on with the files after it (issue 37, item 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.sessions.convert import SessionRefused, convert

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "openai-chat" / "boot-steps.jsonl"
DEPTH = 100_000
NESTED = {
    "array.json": b"[" * DEPTH + b"]" * DEPTH,
    "lines.jsonl": b'{"role":"user","content":"hi"}\n' + b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
    "element.json": b'[{"role":"user","content":' + b"[" * DEPTH + b"]" * DEPTH + b"}]",
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_a_too_deep_file_is_refused_naming_it(name: str) -> None:
    for mask in (False, True):
        with pytest.raises(SessionRefused, match=rf"^{name}: .*nested deeper"):
            convert(NESTED[name], file=name, mask=mask)
        with pytest.raises(SessionRefused, match=rf"^{name}: .*nested deeper"):
            convert(NESTED[name], file=name, format="openai-chat")


def test_import_says_each_too_deep_file_and_imports_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name, data in NESTED.items():
        (folder / name).write_bytes(data)
    (folder / "z-last.jsonl").write_bytes(FIXTURE.read_bytes())  # after them in name order
    code = main(["sessions", "import", str(folder), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    lines = err.splitlines()
    assert [line.split(":")[0] for line in lines] == [str(folder / n) for n in sorted(NESTED)]
    assert all("nested deeper" in line for line in lines)
    assert "Traceback" not in err and "this is a bug" not in err
    assert out.startswith(f"{folder}/z-last.jsonl: added ")
