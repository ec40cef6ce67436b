"""``taguru-ray completion bash|zsh|fish``: a script generated from the parsers (extract's
from the settings' declarations), naming every flag, that each shell accepts."""

import shutil
import subprocess
from pathlib import Path

import pytest

from taguru_ray.cli import main
from taguru_ray.cli.extract import build_parser

SYNTAX_CHECK = {
    "bash": ["bash", "-n"],
    "zsh": ["zsh", "-n"],
    "fish": ["fish", "--no-execute"],
}


def extract_flags() -> list[str]:
    return [
        name
        for action in build_parser()._actions
        for name in action.option_strings
        if name.startswith("--")
    ]


def script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["completion", shell])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return out


@pytest.mark.parametrize("shell", sorted(SYNTAX_CHECK))
def test_the_script_names_every_flag_of_extract(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = script(shell, capsys)
    flags = extract_flags()
    assert {"--out", "--context", "--redact", "--progress", "--config", "--print-config"} <= set(
        flags
    )
    if shell == "fish":  # fish names a long option without its dashes: -l out
        missing = [f for f in flags if f" -l {f[2:]} " not in text]
    else:
        missing = [f for f in flags if f not in text]
    assert not missing
    for verb in ("extract", "report", "sessions", "benchmark", "completion"):
        assert verb in text


@pytest.mark.parametrize("shell", sorted(SYNTAX_CHECK))
def test_the_shell_accepts_the_script(
    shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    path = tmp_path / f"taguru-ray.{shell}"
    path.write_text(script(shell, capsys), encoding="utf-8")
    done = subprocess.run(
        [*SYNTAX_CHECK[shell], str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_bash_completes_verbs_flags_and_an_optional_flag_s_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "taguru-ray.bash"
    path.write_text(script("bash", capsys), encoding="utf-8")
    probe = (
        f"source {path}\n"
        't(){ COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); '
        '_taguru_ray; echo "${COMPREPLY[*]}"; }\n'
        "t taguru-ray ext\n"
        "t taguru-ray extract --redact-\n"
        "t taguru-ray benchmark ''\n"
        "t taguru-ray extract --progress li\n"
    )
    done = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.splitlines() == [
        "extract",
        "--redact-rules",
        "extract compare search",
        "lines",
    ]


def test_an_unknown_shell_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "taguru-ray: completion: takes one of bash, zsh, fish, got tcsh — "
        "try 'taguru-ray completion --help'"
    ]
