"""`taguru_ray.data.extract` over a Ray Dataset of ``{path, text}`` rows: the engine's own
run on the rows, one result row per input, a rerun unchanged, a bad row refused by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
import ray.data

import taguru_ray
import taguru_ray.data
from taguru_ray.errors import UsageError
from taguru_ray.simulate.harness import SimulatorProcess
from tests.support import CONTEXT, REPO, assert_imports_whole

CORPUS = REPO / "examples" / "corpus"
NAMES = ("01-ray-overview.md", "02-object-storage-operations.md", "03-sake-brewing.md")


@pytest.fixture(scope="module")
def endpoint(simulator_process: SimulatorProcess) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAGURU_EXTRACT_URL", simulator_process.chat_url)
        patch.setenv("TAGURU_EXTRACT_MODEL", "taguru-sim")
        yield


def rows() -> list[dict[str, str]]:
    return [{"path": f"notes/{name}", "text": (CORPUS / name).read_text()} for name in NAMES]


@pytest.mark.usefixtures("endpoint")
def test_three_rows_give_three_results_whose_text_is_the_files_written(
    ray_address: str, simulator_process: SimulatorProcess, tmp_path: Path
) -> None:
    simulator_process.set_script([])
    simulator_process.reset()
    out = tmp_path / "out"
    ds = ray.data.from_items([{**row, "extra": 1} for row in rows()])  # other columns: ignored
    results = taguru_ray.data.extract(ds, out=str(out), context=CONTEXT).take_all()

    assert [row["path"] for row in results] == [f"notes/{name}" for name in NAMES]
    assert [row["status"] for row in results] == ["written"] * 3
    for row in results:
        assert Path(row["output"]).parent == out
        assert row["output_text"] == Path(row["output"]).read_text()
        assert row["input_tokens"] > 0 and row["output_tokens"] > 0 and row["completions"] > 0
        assert row["error"] is None
    assert {p.name for p in out.glob("*.jsonl")} == {Path(r["output"]).name for r in results}
    assert_imports_whole(str(out))
    assert ray.is_initialized()  # the caller's Ray is left running

    again = taguru_ray.data.extract(ray.data.from_items(rows()), out=str(out), context=CONTEXT)
    rerun = again.take_all()
    assert [row["status"] for row in rerun] == ["unchanged"] * 3
    assert [row["output_text"] for row in rerun] == [row["output_text"] for row in results]
    assert all(row["input_tokens"] == row["completions"] == 0 for row in rerun)
    assert again.schema().names == [
        "path",
        "status",
        "output",
        "output_text",
        "input_tokens",
        "output_tokens",
        "completions",
        "error",
    ]


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ([{"path": "a.md", "body": "x"}], r"dataset row 0: no 'text' column .*columns: path, body"),
        ([{"name": "a.md"}], r"no 'path' or 'text' column"),
        ([{"path": "a.md", "text": "x"}, {"path": "a.md", "text": "y"}], "'a.md' is given twice"),
        ([{"path": "", "text": "x"}], "'path' must be a non-empty string"),
        ([{"path": "a.md", "text": 3}], r"row 0 \(a.md\): 'text' must be a string or bytes"),
    ],
)
def test_a_bad_row_is_one_error_naming_it_and_nothing_is_written(
    ray_address: str, tmp_path: Path, items: list[dict[str, object]], said: str
) -> None:
    ds = ray.data.from_items(items)
    with pytest.raises(UsageError, match=said):
        taguru_ray.data.extract(ds, out=str(tmp_path / "o"), context=CONTEXT)
    assert not (tmp_path / "o").exists()
    assert taguru_ray.data is taguru_ray.__getattr__("data")
