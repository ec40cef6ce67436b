"""jobs/nightly.py's arguments: extract's pass through with --prune added, import's target is
its own (the run itself: tests/test_prune_cli.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def nightly() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jobs_nightly", REPO / "jobs" / "nightly.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_extracts_arguments_pass_through_with_prune_and_import_takes_its_target() -> None:
    split = nightly().split
    extract = ["--context", "c", "--out", "s3://b/out/", "s3://b/docs/"]
    assert split(["--import-url", "http://taguru:8248", *extract]) == (
        ["--prune", *extract],
        ["--url", "http://taguru:8248"],
    )
    assert split([*extract, "--prune", "--import-store=ctx/", "--import-context", "sake"]) == (
        [*extract, "--prune"],
        ["--store", "ctx/", "--context", "sake"],
    )


def test_a_missing_or_doubled_target_is_one_usage_line() -> None:
    split = nightly().split
    assert "--import-url URL or --import-store DIR" in split(["--out", "o", "d/"])
    assert "once" in split(["--import-url", "u", "--import-store", "s"])
    assert "needs a value" in split(["--import-url"])
    assert "local context" in split(["--import-url", "u", "--import-context", "x"])
