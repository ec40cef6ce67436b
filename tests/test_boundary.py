"""The net under every verb (ADR 0050): an escaped exception is one line and exit 1."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from taguru_ray.cli.boundary import guarded, inputs_of, secrets_in


def boom(argv: Sequence[str]) -> int:
    raise ValueError(f"the key was {argv[1]}")


def test_an_escaped_exception_is_one_line_naming_the_verb_and_its_inputs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    code = guarded("extract", boom, ["--api-key", "sk-live-0123456789", "docs"], debug=False)
    assert code == 1
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert line.startswith("taguru: extract: unexpected ValueError on --api-key [redacted] ")
    assert "this is a bug" in line and "Traceback" not in err
    assert "sk-live-0123456789" not in err
    (kept,) = tmp_path.glob("taguru-ray-extract-*.traceback")
    text = kept.read_text()
    assert "Traceback" in text and "ValueError" in text
    assert "sk-live-0123456789" not in text and "[redacted]" in text
    assert re.search(r"traceback is in .*taguru-ray-extract-.*\.traceback$", line)


def test_debug_prints_the_traceback_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert guarded("import", boom, ["a", "b"], debug=True) == 1
    err = capsys.readouterr().err
    assert "unexpected ValueError" in err and "Traceback (most recent call last)" in err


def test_exits_and_interrupts_pass_through() -> None:
    def leave(_: Sequence[str]) -> int:
        raise SystemExit(2)

    with pytest.raises(SystemExit):
        guarded("search", leave, [], debug=False)


def test_credentials_are_found_in_flags_and_variables() -> None:
    found = secrets_in(["--token=abcd1234", "--redact-key", "passphrase here", "x"],
                       {"TAGURU_EXTRACT_API_KEY": "sk-env-secret", "HOME": "/root"})
    assert found == ["passphrase here", "sk-env-secret", "abcd1234"]
    assert inputs_of(["--token=abcd1234", "a\x1bb"]) == "--token=[redacted] a\\u{1b}b"
