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


def sub_flags() -> dict[tuple[str, ...], list[str]]:
    from taguru_ray.cli.completion import commands

    return {c.words: [f.name for f in c.flags] for c in commands() if len(c.words) == 2}


def test_every_sub_verb_with_a_parser_has_its_flags() -> None:
    found = sub_flags()
    assert found[("benchmark", "compare")] == ["--help", "--with-text"]
    assert {"--eval", "--url", "--store", "--run", "--skip-import"} <= set(
        found[("benchmark", "search")]
    )
    assert {"--store", "--agent", "--passage", "--out", "--max-inflight"} <= set(
        found[("sessions", "extract")]
    )
    # sessions extract refuses the flags that shape extract's own prompt: not offered.
    assert "--questions" not in found[("sessions", "extract")]
    for verb, subs in {"benchmark": ("extract", "search"), "sessions": ("import", "show")}.items():
        for sub in subs:
            assert len(found[(verb, sub)]) > 2, (verb, sub)


@pytest.mark.parametrize("shell", sorted(SYNTAX_CHECK))
def test_the_script_names_every_sub_verb_flag(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = script(shell, capsys)
    for (verb, sub), flags in sub_flags().items():
        assert sub in text
        for flag in flags:
            assert (f" -l {flag[2:]} " if shell == "fish" else flag) in text, (verb, sub, flag)


def test_bash_completes_sub_verbs_their_flags_and_their_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "taguru-ray.bash"
    path.write_text(script("bash", capsys), encoding="utf-8")
    probe = (
        f"source {path}\n"
        't(){ COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); '
        '_taguru_ray; echo "${COMPREPLY[*]}"; }\n'
        "t taguru-ray benchmark search --sk\n"
        "t taguru-ray benchmark compare --w\n"
        "t taguru-ray sessions ex\n"
        "t taguru-ray sessions extract --pas\n"
        "t taguru-ray sessions extract --passage d\n"
        "t taguru-ray sessions extract --ques\n"
    )
    done = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.splitlines() == [
        "--skip-import",
        "--with-text",
        "extract expand",
        "--passage",
        "dialogue",
        "",
    ]


def test_fish_completes_sub_verbs_and_their_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed")
    path = tmp_path / "taguru-ray.fish"
    path.write_text(script("fish", capsys), encoding="utf-8")
    asked = {
        "taguru-ray benchmark ": "search",
        "taguru-ray benchmark search --sk": "--skip-import",
        "taguru-ray sessions extract --sto": "--store",
    }
    for line, expected in asked.items():
        done = subprocess.run(
            ["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        offered = [row.split("\t")[0] for row in done.stdout.splitlines()]
        assert expected in offered, (line, done.stdout, done.stderr)
