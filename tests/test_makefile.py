"""`make venv` builds with uv when it is on PATH, with pip otherwise (issue 39 item 8)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def recipe(tmp_path: Path, *assign: str) -> str:
    """The commands `make venv` would run for a venv not built yet (`-n`: none run)."""
    result = subprocess.run(
        ["make", "-n", "venv", f"VENV={tmp_path / 'venv'}", *assign],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


def test_uv_builds_the_venv_when_it_is_given(tmp_path: Path) -> None:
    commands = recipe(tmp_path, "UV=/opt/bin/uv")
    assert f"/opt/bin/uv venv --quiet --seed --allow-existing --python python3 {tmp_path}" in (
        commands
    )
    assert "/opt/bin/uv pip install --quiet --python" in commands
    assert "pip install --quiet --upgrade pip" not in commands


def test_pip_builds_it_without_uv(tmp_path: Path) -> None:
    commands = recipe(tmp_path, "UV=")
    assert f"python3 -m venv {tmp_path / 'venv'}" in commands
    assert "bin/pip install --quiet -e '.[test]'" in commands
    assert "uv " not in commands
