"""Hostile flags, variables, --config files and flag files for `extract --dry-run` (issue 37,
"fuzz every reader"): every setting's flag from its declaration (so a new one is fuzzed
too), any value; a KEY=VALUE file of any bytes; a --schema, --redact-rules, --vocabulary
or --prices file of any bytes. Read as extract reads them, before any model or Ray:
exit 0/1/2, one line per problem, no traceback, nothing written, the API key never shown.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from taguru_ray.contract.settings.knob import Declared
from taguru_ray.contract.settings.model import declarations
from tests.fuzzing import JSON, TEXT, assert_clean, file_bytes, run, tree

pytestmark = pytest.mark.fuzz

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
SECRET = "sk-fuzz-7f3a9c1e5b2d"  # the API key: it must never reach a line
FLAGGED = [d for d in declarations() if d.knob.flag and d.knob.form != "positional"]
VARIABLES = sorted({d.knob.env for d in declarations() if d.knob.env} - {"RAY_ADDRESS"})


def values(declared: Declared) -> st.SearchStrategy[str]:
    """Text a user might give this setting: one of its words, a number, anything."""
    choices: list[st.SearchStrategy[str]] = [
        st.integers(-3, 10**12).map(str),
        st.sampled_from(["0", "1", "-1", "nan", "inf", "1e309", "auto", "", " ", "yes", "off"]),
        st.text(max_size=30),
    ]
    if declared.knob.takes:
        choices.append(st.sampled_from(declared.knob.takes))
    return st.one_of(*choices).map(_contained)


def _contained(value: str) -> str:
    """Relative, so a value taken as a path lands in the example's own folder (checked)."""
    return "./" + value if value.startswith(("/", "~")) else value


@st.composite
def flags(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for declared in draw(st.lists(st.sampled_from(FLAGGED), max_size=5)):
        knob = declared.knob
        flag = knob.negation if knob.negation and draw(st.booleans()) else knob.flag
        assert flag is not None
        bare = knob.form == "switch" or flag == knob.negation
        if bare or (knob.form == "optional" and draw(st.booleans())):
            argv.append(flag)
        else:
            argv += [flag, draw(values(declared))]
    if draw(st.booleans()):
        argv.append(draw(st.sampled_from(["--no-such-flag", "-x", "--", "--out=", "-"])))
    return argv


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith(("TAGURU_", "RAY_ADDRESS"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    monkeypatch.setenv("TAGURU_EXTRACT_API_KEY", SECRET)


def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder for one example, the working directory, holding one segment."""
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    (scratch / "a.md").write_text("# A\n\nAlpha beta.\n", encoding="utf-8")
    monkeypatch.chdir(scratch)
    return scratch


def check(ran_argv: list[str], capsys: pytest.CaptureFixture[str], scratch: Path) -> None:
    before = tree(scratch)
    ran = run(capsys, ran_argv)
    event(f"exit {ran.code}")
    assert_clean(ran)
    assert SECRET not in ran.out + ran.err
    if ran.code == 2:  # a usage error is said, in lines that each start with the verb's prefix
        assert ran.err.strip(), ran
    assert tree(scratch) == before  # a dry run writes nothing anywhere


@given(extra=flags(), base=st.booleans())
def test_any_flags_end_in_one_line_per_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    endpoint: None, extra: list[str], base: bool,
) -> None:  # fmt: skip
    scratch = example(tmp_path, monkeypatch)
    argv = ["extract", "--dry-run"]
    argv += ["--context", CONTEXT, "--out", "out", "a.md"] if base else []
    check(argv + extra, capsys, scratch)


LINES = st.one_of(
    st.tuples(st.sampled_from(VARIABLES), st.text(max_size=20)).map(lambda kv: f"{kv[0]}={kv[1]}"),
    st.just(f"TAGURU_EXTRACT_API_KEY={SECRET}"),
    st.just(f"TAGURU_EXTRACT_API_KEY {SECRET}"),  # malformed, holding the key
    st.sampled_from(["# a comment", "", "export TAGURU_EXTRACT_REDACT=1", "TAGURU_NOPE=1",
                     "=x", "KEY", "A B=c", "TAGURU_EXTRACT_URL='http://127.0.0.1:9/v1'"]),
    TEXT.map(lambda text: text[:60]),
)  # fmt: skip


@given(lines=st.lists(LINES, max_size=8), garbage=st.none() | file_bytes())
def test_any_config_file_ends_in_one_line_and_never_shows_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    endpoint: None, lines: list[str], garbage: bytes | None,
) -> None:  # fmt: skip
    scratch = example(tmp_path, monkeypatch)
    monkeypatch.delenv("TAGURU_EXTRACT_API_KEY", raising=False)
    data = "\n".join(lines).encode("utf-8", "replace") if garbage is None else garbage
    (scratch / "config.env").write_bytes(data)
    check(["extract", "--dry-run", "--context", CONTEXT, "--out", "out", "--config",
           "config.env", "a.md"], capsys, scratch)  # fmt: skip


FLAG_FILES = {
    "--schema": ["--schema"],
    "--redact-rules": ["--redact", "--redact-rules"],
    "--vocabulary": ["--vocabulary"],
    "--prices": ["--prices"],
}


@given(
    flag=st.sampled_from(sorted(FLAG_FILES)),
    data=st.one_of(file_bytes(), JSON.map(lambda value: repr(value).encode())),
    as_json=st.none() | JSON,
)
def test_any_flag_file_ends_in_one_line_per_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    endpoint: None, flag: str, data: bytes, as_json: object,
) -> None:  # fmt: skip
    import json

    scratch = example(tmp_path, monkeypatch)
    content = data if as_json is None else json.dumps(as_json).encode()
    (scratch / "flag.file").write_bytes(content)
    check(["extract", "--dry-run", "--context", CONTEXT, "--out", "out",
           *FLAG_FILES[flag], "flag.file", "a.md"], capsys, scratch)  # fmt: skip
