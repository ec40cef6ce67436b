"""Every flag of every verb says what it is for (`--help`), and a flag no verb knows is one
stderr line and a hint, never argparse's usage block (issue 22, point 7)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

import taguru_ray.cli as cli_package
from taguru_ray.cli import main
from tests.support import REPO

# Every argparse parser the CLI builds, by module of taguru_ray/cli: the factories' names
# (sessions keeps one factory per sub-verb in its PARSERS table).
ARGPARSE = {
    "extract": ("build_parser",),
    "search": ("build_parser",),
    "inspect": ("build_parser",),
    "anchoring": ("build_parser",),
    "metrics": ("build_parser",),
    "report": ("build_parser",),
    "verify": ("build_parser",),
    "import_": ("build_parser",),
    "serve": ("_parser",),
    "simulate": ("_parser",),
    "evaluate": ("build_parser",),
    "evaluate_compare": ("parser",),
    "benchmark_extract": ("parser",),
    "sessions": ("PARSERS",),
}
# Verbs that parse their argv by hand: their help is a text the test reads instead.
HAND_ROLLED = ("benchmark_compare", "benchmark_search", "completion", "sessions_extract")
# Modules that parse no flags of their own: the shared helpers and a sub-verb dispatcher.
# boundary: the net under every verb; sessions_use: its parsers are in sessions.PARSERS;
# sessions_memory: the cards and briefs step of sessions extract; import_retract: the
# retractions step of import (ADR 0083).
NO_PARSER = ("args", "benchmark", "boundary", "sessions_use", "sessions_memory", "import_retract")


def cli_modules() -> set[str]:
    return {info.name for info in pkgutil.iter_modules(cli_package.__path__)}


def parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for module_name, factories in ARGPARSE.items():
        module = importlib.import_module(f"taguru_ray.cli.{module_name}")
        for factory_name in factories:
            factory = getattr(module, factory_name)
            if isinstance(factory, dict):
                for verb, build in factory.items():
                    yield f"{module_name}.{factory_name}[{verb}]", build()
            else:
                yield f"{module_name}.{factory_name}", factory()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The console script in process: its exit code (argparse's SystemExit included)."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_every_cli_module_is_walked_for_help() -> None:
    """A new verb's module must be listed above, so its flags are checked too."""
    listed = set(ARGPARSE) | set(HAND_ROLLED) | set(NO_PARSER)
    assert cli_modules() == listed


def test_every_option_of_every_argparse_verb_has_help_text() -> None:
    missing = []
    for name, parser in parsers():
        parser.format_help()  # a help string argparse cannot render fails here
        for action in parser._actions:
            text = action.help
            if not isinstance(text, str) or not text.strip() or text == argparse.SUPPRESS:
                missing.append(f"{name}: {'/'.join(action.option_strings) or action.dest}")
    assert not missing, "options without --help text:\n" + "\n".join(missing)


def test_the_hand_rolled_verbs_describe_every_flag_they_take() -> None:
    from taguru_ray.cli import benchmark_compare, benchmark_search, sessions_extract

    takes: dict[str, tuple[str, tuple[str, ...]]] = {
        "benchmark compare": (benchmark_compare.USAGE, ("--with-text",)),
        "benchmark search": (
            benchmark_search.USAGE,
            (*benchmark_search.VALUE_FLAGS, "--skip-import"),
        ),
        "sessions extract": (
            sessions_extract.__doc__ or "",
            tuple(sessions_extract.split(["--store", "s"])[0]),
        ),
    }
    for verb, (text, flags) in takes.items():
        for flag in flags:
            assert flag in text, f"{verb} --help does not describe {flag}"
    # The flags sessions extract does not take itself are extract's, and its help says so.
    assert "taguru-ray extract --help" in (sessions_extract.__doc__ or "")


VERBS_HELP = [
    ["extract"],
    ["simulate"],
    ["inspect"],
    ["anchoring"],
    ["metrics"],
    ["verify"],
    ["import"],
    ["search"],
    ["serve"],
    ["evaluate"],
    ["evaluate", "compare"],
    ["benchmark"],
    ["benchmark", "extract"],
    ["benchmark", "compare"],
    ["benchmark", "search"],
    ["sessions"],
    ["sessions", "import"],
    ["sessions", "list"],
    ["sessions", "search"],
    ["sessions", "show"],
    ["sessions", "extract"],
    ["completion"],
]


@pytest.mark.parametrize("verb", VERBS_HELP, ids=" ".join)
def test_help_prints_on_stdout_and_exits_0(
    verb: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([*verb, "--help"], capsys)
    assert (code, err) == (0, "")
    assert out.strip()


def hint(verb: str) -> str:
    return f" — try 'taguru-ray {verb} --help'"


def unrecognized(verb: str) -> str:
    return f"taguru-ray: {verb}: unrecognized arguments: --bogus{hint(verb)}"


BENCHMARK_EXTRACT = ["benchmark", "extract", "corpus", "--models", "m.json", "--context", "c"]
UNKNOWN_FLAG = [
    (["--bogus"], "taguru-ray: unknown verb '--bogus' — try 'taguru-ray --help'"),
    # extract's every stderr line starts `taguru: extract: ` (tests/test_console_streams.py).
    (["extract", "--bogus"], f"taguru: extract: unrecognized arguments: --bogus{hint('extract')}"),
    (["search", "sake", "--store", "ctx", "--bogus"], unrecognized("search")),
    (["inspect", "a.attempts.jsonl", "--bogus"], unrecognized("inspect")),
    (["anchoring", "out", "--bogus"], unrecognized("anchoring")),
    (["metrics", "out", "--bogus"], unrecognized("metrics")),
    (["verify", "out", "--bogus"], unrecognized("verify")),
    (["import", "out", "--store", "ctx", "--bogus"], unrecognized("import")),
    (["serve", "--store", "ctx", "--bogus"], unrecognized("serve")),
    (["simulate", "--bogus"], unrecognized("simulate")),
    (["evaluate", "--eval", "e.jsonl", "--context", "sake", "--bogus"], unrecognized("evaluate")),
    (["evaluate", "compare", "a.json", "b.json", "--bogus"], unrecognized("evaluate compare")),
    (
        ["benchmark", "--bogus"],
        f"taguru-ray: benchmark: unknown verb '--bogus'{hint('benchmark')}",
    ),
    # benchmark extract's lines are the reference's `taguru: benchmark:` (BENCHMARK.md).
    (
        [*BENCHMARK_EXTRACT, "--out", "results", "--bogus"],
        f"taguru: benchmark: unrecognized arguments: --bogus{hint('benchmark extract')}",
    ),
    (
        ["benchmark", "compare", "results", "--bogus"],
        f"taguru-ray: benchmark compare: unknown flag '--bogus'{hint('benchmark compare')}",
    ),
    (
        ["benchmark", "search", "--eval", "e.jsonl", "results", "--bogus"],
        f"taguru-ray: benchmark search: unknown flag '--bogus'{hint('benchmark search')}",
    ),
    (["sessions", "--bogus"], f"taguru-ray: sessions: unknown verb '--bogus'{hint('sessions')}"),
    (
        ["completion", "--bogus"],
        f"taguru-ray: completion: takes one of bash, zsh, fish, got --bogus{hint('completion')}",
    ),
    (["sessions", "import", "--store", "s", "a.jsonl", "--bogus"], unrecognized("sessions import")),
    (["sessions", "list", "--store", "s", "--bogus"], unrecognized("sessions list")),
    (["sessions", "search", "--store", "s", "sake", "--bogus"], unrecognized("sessions search")),
    (["sessions", "show", "--store", "s", "cc:1#2", "--bogus"], unrecognized("sessions show")),
    # sessions extract's flags are extract's, parsed by extract's parser: its line and hint.
    (
        ["sessions", "extract", "--store", "s", "--bogus"],
        f"taguru: extract: unrecognized arguments: --bogus{hint('extract')}",
    ),
]


@pytest.mark.parametrize(("argv", "line"), UNKNOWN_FLAG, ids=lambda v: " ".join(v)[:40])
def test_an_unknown_flag_is_one_line_and_a_hint_exit_2(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.splitlines() == [line]


def test_the_console_script_says_it_in_one_line_too() -> None:
    """The same, through `python -m taguru_ray` (argparse's exit path, not only main's)."""
    done = subprocess.run(
        [sys.executable, "-m", "taguru_ray", "search", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("taguru-ray: search: ") and line.endswith(hint("search"))


VARIABLE = re.compile(r"\b((?:TAGURU|RAY)_[A-Z0-9_]*[A-Z0-9])\b")


def test_the_readme_names_every_variable_the_help_does_and_the_reverse(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A variable the README documents is one some --help names, and the reverse: the
    README and the helps cannot drift apart (issue 39, item 5)."""
    in_help: set[str] = set()
    for verb in [[], *VERBS_HELP]:
        _, out, _ = run([*verb, "--help"], capsys)
        in_help |= set(VARIABLE.findall(out))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    in_readme = set(VARIABLE.findall(readme))
    assert sorted(in_readme - in_help) == [], "the README names them; no --help does"
    assert sorted(in_help - in_readme) == [], "a --help names them; the README does not"


def test_extract_help_names_every_variable_of_its_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from taguru_ray.settings import declarations

    _, out, _ = run(["extract", "--help"], capsys)
    declared = {d.knob.env for d in declarations() if d.knob.env}
    assert declared <= set(VARIABLE.findall(out))


def test_address_says_its_default_once(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(["extract", "--help"], capsys)
    start = out.index("--address HOST:PORT ")
    text = " ".join(out[start : out.index("--workers N ", start)].split())
    assert text.count("default") == 1, text
