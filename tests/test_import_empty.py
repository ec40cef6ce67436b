"""An empty or blank source file is named and refused by `import`, as `verify` refuses it —
never passed over without a line (found by tests/test_fuzz_import.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from taguru_ray.cli import main

SOURCE = next((Path(__file__).parent / "fixtures" / "records" / "run-a").glob("*.jsonl"))


@pytest.mark.parametrize("data", [b"", b"\n\n", b"\xef\xbb\xbf"])
def test_an_empty_source_file_is_one_line_and_exit_1_and_the_rest_imported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a-empty.jsonl").write_bytes(data)
    (folder / "b.jsonl").write_bytes(SOURCE.read_bytes())
    code = main(["import", str(folder), "--store", str(tmp_path / "st")])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        f"{folder}/a-empty.jsonl: line 1: file: no header line: the file is empty or blank "
        "— nothing of this file was applied"
    ]
    assert out.startswith(f"{folder}/b.jsonl: imported ")
