"""`taguru_ray.extract` takes typed keyword arguments — ints, floats, bools, lists and paths
as such — checked by the settings' own declarations; `help` and type checkers see them
all; the API builds on the settings, never on the CLI."""

from __future__ import annotations

import ast
import datetime
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import taguru_ray
from taguru_ray import api
from taguru_ray.contract.settings.python import keyword_settings, render_typed_dict
from taguru_ray.errors import UsageError
from tests.support import CONTEXT, REPO

URL = "http://127.0.0.1:8000/v1/chat/completions"


@pytest.fixture(autouse=True)
def no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the arguments say alone: no TAGURU_* or RAY_ADDRESS from the environment."""
    import os

    for key in list(os.environ):
        if key.startswith("TAGURU_") or key == "RAY_ADDRESS":
            monkeypatch.delenv(key)


def settings_of(**given: object) -> taguru_ray.api.Settings:
    flags = api._flags(Path("docs"), Path("out"), CONTEXT, {"model": "m", "url": URL, **given})
    return api.resolve(flags)


def test_ints_floats_bools_lists_paths_and_dates_are_taken_as_such(tmp_path: Path) -> None:
    settings = settings_of(
        max_inflight=64, workers=3, timeout_secs=12.5, budget_usd=3, price_per_hour=1.25,
        lossy=True, coverage=True, trace_attempts=False, progress=False, redact=True,
        tags=["a", "b"], endpoint=URL, schema=None, diagnostics_out=tmp_path / "d.jsonl",
        date=datetime.date(2024, 1, 2),
    )  # fmt: skip
    assert settings.transport.max_inflight == 64 and settings.scale.workers == 3
    assert settings.transport.timeout_secs == 12.5 and settings.spending.budget_usd == 3.0
    assert settings.spending.price_per_hour == 1.25
    assert settings.ladder.lossy and settings.records.coverage
    assert settings.records.trace_attempts is False and settings.records.progress == "off"
    assert settings.input.redact == "both"
    assert settings.source.tags == ("a", "b") and settings.transport.endpoints == (URL,)
    assert settings.records.diagnostics_out == str(tmp_path / "d.jsonl")
    # the inputs as spelt (their source ids); where the workers write, from here
    assert settings.source.paths == ("docs",) and settings.source.out == str(Path("out").resolve())
    assert settings.source.date == 1704153600
    one = settings_of(tag="solo", max_inflight="auto", lossy=False)
    assert one.source.tags == ("solo",) and one.transport.max_inflight == "auto"


def test_an_explicit_false_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAGURU_EXTRACT_LOSSY", "1")
    assert settings_of().ladder.lossy is True
    assert settings_of(lossy=False).ladder.lossy is False


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"max_inflight": [64]}, "max_inflight: takes int | str, got list [64]"),
        ({"max_inflight": 0}, "max_inflight: takes a whole number of at least 1 or auto"),
        ({"workers": "2"}, "workers: takes int, got str '2'"),
        ({"workers": True}, "workers: takes int, got bool True"),
        ({"timeout_secs": "soon"}, "timeout_secs: takes float, got str 'soon'"),
        ({"lossy": "yes"}, "lossy: takes bool, got str 'yes'"),
        ({"tags": [1]}, "tags: takes str | Sequence[str], got list [1]"),
        ({"chunk_context": "all"}, "chunk_context: takes one of off, structure"),
        ({"out": 5}, "out: takes str | os.PathLike[str], got int 5"),
        ({"modle": "x"}, "modle: not a setting — did you mean model?"),
        ({"tag": "a", "tags": ["b"]}, "tags: given twice (also as tag)"),
        ({"dry_run": True}, "dry_run: plan with `taguru-ray extract --dry-run`"),
    ],
)
def test_a_wrong_value_or_type_is_named_with_what_it_takes(
    given: dict[str, object], said: str, tmp_path: Path
) -> None:
    out = given.pop("out", tmp_path / "o")
    with pytest.raises(UsageError) as raised:
        taguru_ray.extract("docs", out=out, context=CONTEXT, **given)  # type: ignore[arg-type]
    assert str(raised.value).startswith(said), str(raised.value)
    assert not (tmp_path / "o").exists()


def test_a_key_of_the_wrong_type_is_never_shown() -> None:
    with pytest.raises(UsageError, match=r"^api_key: takes str, got int$"):
        settings_of(api_key=123456789)


def test_help_lists_every_setting_with_its_type_and_default() -> None:
    signature = inspect.signature(taguru_ray.extract)
    doc = taguru_ray.extract.__doc__ or ""
    for declared in keyword_settings():
        parameter = signature.parameters[declared.name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.annotation is not inspect.Parameter.empty
        assert f"    {declared.name}" in doc and declared.knob.help in doc
    assert signature.parameters["max_inflight"].default == "auto"
    assert "max_inflight: int | str = 'auto'" in doc
    assert "tags (or tag=): str | Sequence[str] = ()" in doc
    assert str(signature.parameters["carryover"]) == "carryover: int = 32"


def test_dir_shows_the_api_and_the_package_ships_its_types() -> None:
    assert set(taguru_ray.__all__) <= set(dir(taguru_ray))
    assert {"extract", "ExtractSettings", "RunResult", "inspect", "metrics"} <= set(dir(taguru_ray))
    assert "importlib" not in dir(taguru_ray)
    assert (REPO / "taguru_ray" / "py.typed").exists()
    assert '"taguru_ray" = ["py.typed"]' in (REPO / "pyproject.toml").read_text()


def test_the_typed_dict_is_rendered_from_the_declarations() -> None:
    shipped = (REPO / "taguru_ray" / "api_settings.py").read_text()
    assert shipped == render_typed_dict(), (
        "regenerate: python -m taguru_ray.contract.settings.python > taguru_ray/api_settings.py"
    )


def test_the_api_imports_nothing_of_the_cli() -> None:
    tree = ast.parse((REPO / "taguru_ray" / "api.py").read_text())
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ] + [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
         for alias in node.names]  # fmt: skip
    assert not [name for name in imported if name.startswith("taguru_ray.cli")]
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, taguru_ray.api as a; a.resolve; "
         "print(sorted(m for m in sys.modules if m.startswith('taguru_ray.cli')))"],
        capture_output=True, text=True, cwd=REPO, check=True,
    )  # fmt: skip
    assert loaded.stdout.strip() == "[]"


GOOD = """\
from pathlib import Path

import taguru_ray

result: taguru_ray.RunResult = taguru_ray.extract(
    ["docs/", Path("more")], out=Path("out"), context="5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f",
    model="qwen", max_inflight=64, timeout_secs=30.5, lossy=True, tags=["a", "b"], tag="c",
)
written: int = result.written
settings: taguru_ray.ExtractSettings = {"workers": 4, "budget_usd": 2.5, "redact": True}
again = taguru_ray.extract("docs/", out="out/", context="x", echo=print, **settings)
print(written, again.exit_code, [s.status for s in again.segments])
"""

BAD = """\
import taguru_ray

taguru_ray.extract("docs/", out="out/", context="x", max_inflight=[64])
taguru_ray.extract("docs/", out="out/", context="x", lossy="yes")
taguru_ray.extract("docs/", out="out/", context="x", modle="qwen")
"""

# Only the scripts and the API's public modules are analysed: the rest is skipped (Any).
MYPY_INI = """\
[mypy]
strict = True
follow_imports = skip

[mypy-taguru_ray,taguru_ray.api,taguru_ray.api_settings]
follow_imports = silent
"""


def test_mypy_passes_a_script_using_the_api_and_names_each_wrong_argument(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mypy")
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "mypy.ini").write_text(MYPY_INI)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir",
         str(tmp_path / "cache"), "good.py", "bad.py"],
        capture_output=True, text=True, cwd=tmp_path, env={"MYPYPATH": str(REPO),
        "PATH": "/usr/bin:/bin"}, timeout=300,
    )  # fmt: skip
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if line.startswith("good.py")], checked.stdout
    assert [line.split(": error:")[0] for line in errors] == ["bad.py:3", "bad.py:4", "bad.py:5"]
    assert '"max_inflight"' in errors[0] and '"lossy"' in errors[1] and '"modle"' in errors[2]
