"""Where the reference project's conformance data lives, for every test that reads it.

A copy of the reference project's data sits in tests/fixtures/anchor (MIT; its
README says what each folder is for), so a bare clone tests against it. Tests
that need it still mark themselves with ``requires_anchor``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ANCHOR = Path(__file__).resolve().parent / "fixtures" / "anchor"
MODEL_OUTPUT = ANCHOR / "tests" / "fixtures" / "model_output"

requires_anchor = pytest.mark.skipif(
    not MODEL_OUTPUT.is_dir(), reason=f"anchor fixtures missing: {MODEL_OUTPUT} is not a folder"
)


def fixture_names(folder: str) -> set[str]:
    """The stems of ``model_output/<folder>/*.json``."""
    return {path.stem for path in (MODEL_OUTPUT / folder).glob("*.json")}


def fixture_text(folder: str, name: str) -> str:
    return (MODEL_OUTPUT / folder / f"{name}.json").read_text(encoding="utf-8")


def load_fixture(folder: str, name: str) -> Any:
    return json.loads(fixture_text(folder, name))
