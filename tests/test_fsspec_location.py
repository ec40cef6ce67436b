"""A path or URL flag whose filesystem this install cannot open — a protocol fsspec does not
know, or one whose driver package is missing — is a usage error (exit 2) of one line naming
the URL and the fix, on every flag and operand that takes an fsspec URL (issue 37, item 9)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.contract.settings.values import location

BAD = "nosuchproto://bucket/x"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
NO_GCSFS = importlib.util.find_spec("gcsfs") is None


def test_a_local_path_and_a_known_url_pass_as_written() -> None:
    for text in ("corpus", "/tmp/x y", "memory://x", "file:///tmp/x", "s3://b/k",
                 "simplecache::s3://b/k"):  # fmt: skip
        assert location(text) == text


@pytest.mark.parametrize("text", [BAD, "simplecache::nosuchproto://x", "nosuchproto::s3://b/k"])
def test_a_protocol_nobody_knows_names_the_url_and_the_known_ones(text: str) -> None:
    with pytest.raises(ValueError, match=r"no filesystem for nosuchproto:// .*s3://") as refused:
        location(text)
    assert str(refused.value).startswith(text)


@pytest.mark.skipif(not NO_GCSFS, reason="gcsfs is installed here")
def test_a_known_protocol_without_its_package_names_the_install() -> None:
    needs = r"^gs://b/x: gs:// needs the gcsfs package.*pip install gcsfs"
    with pytest.raises(ValueError, match=needs):
        location("gs://b/x")


def one_usage_line(capsys: pytest.CaptureFixture[str], argv: list[str], says: str = BAD) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "this is a bug" not in err, err
    [line] = [line for line in err.splitlines() if "nosuchproto" in line or "gs://" in line]
    assert says in line and ("no filesystem for" in line or "pip install" in line), line
    return line


EXTRACT_FLAGS = ["--out", "--config", "--prices", "--schema", "--vocabulary", "--redact-rules",
                 "--diagnostics-out", "--replay-from", "PATH"]  # fmt: skip


@pytest.mark.parametrize("flag", EXTRACT_FLAGS)
@pytest.mark.parametrize("url", [BAD, "gs://b/x"])
def test_every_extract_flag_that_takes_a_url_refuses_one_it_cannot_open(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    flag: str, url: str,
) -> None:  # fmt: skip
    if url.startswith("gs://") and not NO_GCSFS:
        pytest.skip("gcsfs is installed here")
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    segment = tmp_path / "a.md"
    segment.write_text("# A\n\ntext\n")
    argv = ["extract", "--dry-run", "--context", CONTEXT, "--redact"]
    argv += ["--out", str(tmp_path / "out")] if flag != "--out" else []
    argv += [url] if flag == "PATH" else [flag, url, str(segment)]
    one_usage_line(capsys, argv, url)
    assert not (tmp_path / "out").exists()


def test_a_variable_naming_a_url_is_checked_as_its_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    monkeypatch.setenv("TAGURU_EXTRACT_VOCABULARY", BAD)
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    one_usage_line(capsys, ["extract", "--dry-run", "--context", CONTEXT, "--out",
                            str(tmp_path / "out"), str(tmp_path / "a.md")])  # fmt: skip


def other_verbs(tmp: Path) -> list[list[str]]:
    """Every other verb, once per operand or flag that takes a path or URL."""
    source = next((Path(__file__).parent / "fixtures" / "records" / "run-a").glob("*.jsonl"))
    ok = {"file": str(source), "dir": str(tmp)}
    return [
        ["import", BAD, "--store", str(tmp / "st")],
        ["sessions", "import", BAD, "--store", str(tmp / "ss")],
        ["sessions", "import", ok["file"], "--redact-rules", BAD, "--store", str(tmp / "ss")],
        ["verify", BAD],
        ["inspect", BAD],
        ["anchoring", BAD],
        ["metrics", BAD],
        ["metrics", ok["dir"], "--compare", BAD],
        ["metrics", ok["dir"], "--ledger", BAD],
        ["metrics", ok["dir"], "--prices", BAD],
        ["metrics", ok["dir"], "--parquet", BAD],
        ["benchmark", "compare", BAD],
        ["benchmark", "search", "--eval", BAD, ok["dir"]],
        ["benchmark", "search", "--eval", ok["file"], BAD],
        ["benchmark", "search", "--eval", ok["file"], "--config", BAD, ok["dir"]],
        ["benchmark", "extract", "--models", BAD, "--context", CONTEXT, "--out", ok["dir"],
         ok["dir"]],
        ["benchmark", "extract", "--models", ok["file"], "--context", CONTEXT, "--out", BAD,
         ok["dir"]],
        ["benchmark", "extract", "--models", ok["file"], "--context", CONTEXT, "--out",
         ok["dir"], BAD],
        ["benchmark", "extract", "--models", ok["file"], "--context", CONTEXT, "--out",
         ok["dir"], "--vocabulary", BAD, ok["dir"]],
        ["evaluate", "--eval", BAD, "--context", "c"],
        ["evaluate", "--eval", ok["file"], "--context", "c", "--thresholds", BAD],
        ["evaluate", "--eval", ok["file"], "--context", "c", "--config", BAD],
        ["evaluate", "--eval", ok["file"], "--context", "c", "--out", BAD],
        ["evaluate", "compare", BAD, ok["file"]],
        ["evaluate", "compare", ok["file"], BAD],
        ["evaluate", "compare", ok["file"], ok["file"], "--out", BAD],
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(len(other_verbs(Path("/")))))
def test_every_other_verb_refuses_a_url_it_cannot_open_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    index: int,
) -> None:  # fmt: skip
    for name in [name for name in os.environ if name.startswith("TAGURU_")]:
        monkeypatch.delenv(name)
    argv = other_verbs(tmp_path)[index]
    line = one_usage_line(capsys, argv)
    assert line.startswith("taguru"), line  # the verb's own prefix, one line


def test_a_path_holding_a_nul_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by tests/test_fuzz_extract_flags.py: os.open raised ValueError under the net."""
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    code = main(["extract", "--dry-run", "--context", CONTEXT, "--out", str(tmp_path),
                 "--config", "a\x00b", "x.md"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "--config: a\\u{0}b: holds a NUL character" in err and "this is a bug" not in err
    assert main(["verify", "a\x00b"]) == 2
    assert "holds a NUL character" in capsys.readouterr().err
