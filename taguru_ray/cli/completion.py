"""``taguru-ray completion bash|zsh|fish``: a shell completion script on stdout.

Generated, never written by hand: the verbs and their one-line descriptions
come from the console script's table (`taguru_ray.cli.VERBS`, `USAGE`), each
verb's flags from the parser it builds — extract's from the settings'
declarations (`contract/settings/groups.py`), so a new setting completes as
soon as it is declared. Sub-verbs (``benchmark extract|compare|search``,
``sessions import|…|extract``, ``evaluate compare``) complete after their verb,
and their flags after them: from their parsers, the hand-rolled ones' built from
their usage text (`cli/args.usage_parser`), sessions extract's from its own
flags and the extract flags it takes. A flag's fixed words (``--progress``'s modes,
``--redact``'s groups, argparse ``choices``) complete as words; every other
value and operand as a file name.

    taguru-ray completion bash > ~/.local/share/bash-completion/completions/taguru-ray
    taguru-ray completion zsh > "${fpath[1]}/_taguru-ray"
    taguru-ray completion fish > ~/.config/fish/completions/taguru-ray.fish
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from taguru_ray.cli.boundary import SUB_VERBS as BOUNDARY_SUB_VERBS
from taguru_ray.errors import EXIT_USAGE

PROGRAM = "taguru-ray"
SHELLS = ("bash", "zsh", "fish")
# A verb's sub-verbs (the boundary's table). A sub-verb's flags come from the parser its
# module `taguru_ray.cli.<verb>_<sub>` builds (a hand-rolled one's from its usage text,
# `cli/args.usage_parser`), or from its verb's table of parsers (`sessions.PARSERS`).
SUB_VERBS: dict[str, tuple[str, ...]] = {**BOUNDARY_SUB_VERBS, "completion": SHELLS}
FACTORIES = ("build_parser", "_parser", "parser")
HELP = f"usage: {PROGRAM} completion {{{','.join(SHELLS)}}}\n\n" + (__doc__ or "")


@dataclass(frozen=True)
class Flag:
    """One option as completion needs it."""

    name: str  # --out
    help: str
    takes_value: bool
    words: tuple[str, ...] = ()  # the fixed words its value is one of


@dataclass(frozen=True)
class Command:
    """A verb (or ``verb sub``), what it is for, its flags and its sub-verbs."""

    words: tuple[str, ...]
    help: str
    flags: tuple[Flag, ...]
    subs: tuple[str, ...] = ()


def main(argv: Sequence[str]) -> int:
    if list(argv) in (["-h"], ["--help"]):
        print(HELP, end="")
        return 0
    if len(argv) != 1 or argv[0] not in SHELLS:
        given = " ".join(argv) or "nothing"
        print(
            f"taguru-ray: completion: takes one of {', '.join(SHELLS)}, got {given} — "
            "try 'taguru-ray completion --help'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(RENDER[argv[0]](list(commands())), end="")
    return 0


def commands() -> Iterator[Command]:
    """Every verb and sub-verb, with its flags, from the parsers the CLI builds."""
    from taguru_ray.cli import USAGE, VERBS

    described = dict(re.findall(r"^  (\S+) +(.+)$", USAGE, flags=re.MULTILINE))
    for verb, module in VERBS.items():
        subs = SUB_VERBS.get(verb, ())
        yield Command((verb,), described.get(verb, verb), _flags(_top_parser(module)), subs)
        for sub in subs:
            yield Command((verb, sub), f"{verb} {sub}", _flags(_sub_parser(verb, sub)))


def _top_parser(module: str) -> argparse.ArgumentParser | None:
    loaded = importlib.import_module(f"taguru_ray.cli.{module}")
    for name in FACTORIES:
        factory = getattr(loaded, name, None)
        if callable(factory):
            try:
                built = factory()
            except TypeError:  # a factory of sub-verbs' parsers, taking their names
                continue
            if isinstance(built, argparse.ArgumentParser):
                return built
    return None


def _sub_parser(verb: str, sub: str) -> argparse.ArgumentParser | None:
    table = getattr(importlib.import_module(f"taguru_ray.cli.{verb}"), "PARSERS", {})
    if sub in table:
        built: argparse.ArgumentParser = table[sub]()
        return built
    if importlib.util.find_spec(f"taguru_ray.cli.{verb}_{sub}") is None:
        return None
    return _top_parser(f"{verb}_{sub}")


def _flags(parser: argparse.ArgumentParser | None) -> tuple[Flag, ...]:
    """A parser's long options, with the words an optional-value setting takes."""
    if parser is None:
        return ()
    from taguru_ray.settings import declarations

    takes = {d.knob.flag: d.knob.takes for d in declarations() if d.knob.takes}
    found = []
    for action in parser._actions:
        for name in action.option_strings:
            if not name.startswith("--"):
                continue
            words = tuple(str(c) for c in action.choices or ()) or takes.get(name, ())
            text = action.help if isinstance(action.help, str) else ""
            text = re.sub(r" \([^()]*\)$", "", text)  # its "(default …; or VARIABLE)"
            found.append(Flag(name, _plain(text.replace("%%", "%")), action.nargs != 0, words))
    return tuple(found)


def _plain(text: str) -> str:
    """One line of help with nothing a shell would read as syntax."""
    return re.sub(r"[^A-Za-z0-9 ,.;/=+()-]", " ", text).strip()[:80]


def flag_names(command: Command) -> list[str]:
    return [flag.name for flag in command.flags]


# --- bash ------------------------------------------------------------------------------


def bash(every: list[Command]) -> str:
    verbs = " ".join(c.words[0] for c in every if len(c.words) == 1)
    lines = [
        f"# {PROGRAM} bash completion, generated by `{PROGRAM} completion bash`",
        "_taguru_ray() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local key="" words=""',
        "    if [[ $COMP_CWORD -eq 1 ]]; then",
        f'        COMPREPLY=($(compgen -W "{verbs} --help --version --debug" -- "$cur"))',
        "        return",
        "    fi",
        '    key="${COMP_WORDS[1]}"',
        "    if [[ $COMP_CWORD -ge 3 ]]; then",
        '        case "${COMP_WORDS[1]} ${COMP_WORDS[2]}" in',
    ]
    for command in every:
        if len(command.words) == 2:
            lines.append(
                f'            "{" ".join(command.words)}") key="{"_".join(command.words)}";;'
            )
    lines += ["        esac", "    fi", '    case "$key:$prev" in']
    for command in every:
        key = "_".join(command.words)
        for flag in command.flags:
            if flag.words:
                lines.append(f'        {key}:{flag.name}) words="{" ".join(flag.words)}";;')
    lines += [
        "    esac",
        "    if [[ -n $words ]]; then",
        '        COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))',
        "        return",
        "    fi",
        '    case "$key" in',
    ]
    for command in every:
        key = "_".join(command.words)
        options = " ".join([*command.subs, *flag_names(command)])
        lines.append(f'        {key}) words="{options}";;')
    lines += [
        "    esac",
        "    if [[ $cur == -* || ( $COMP_CWORD -eq 2 && -n $words && $words != --* ) ]]; then",
        '        COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "    fi",
        "    if [[ ${#COMPREPLY[@]} -eq 0 ]]; then",
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        '    : "$i"',
        "}",
        f"complete -o filenames -F _taguru_ray {PROGRAM}",
    ]
    return "\n".join(lines) + "\n"


# --- zsh -------------------------------------------------------------------------------


def zsh(every: list[Command]) -> str:
    lines = [
        f"#compdef {PROGRAM}",
        f"# {PROGRAM} zsh completion, generated by `{PROGRAM} completion zsh`",
        "",
        "_taguru_ray() {",
        "    local -a verbs",
        "    verbs=(",
    ]
    lines += [
        f"        '{c.words[0]}:{c.help and _plain(c.help)}'" for c in every if len(c.words) == 1
    ]
    lines += [
        "    )",
        "    if (( CURRENT == 2 )); then",
        "        _describe 'verb' verbs",
        "        return",
        "    fi",
        '    local key="${words[2]}"',
        "    local -a subs",
        '    case "$key" in',
    ]
    for command in every:
        if command.subs and len(command.words) == 1:
            lines.append(f"        {command.words[0]}) subs=({' '.join(command.subs)});;")
    lines += [
        "    esac",
        "    if (( ${#subs} )); then",
        "        if (( CURRENT == 3 )); then",
        "            _describe 'sub-verb' subs",
        "            return",
        "        fi",
        '        key="${words[2]}_${words[3]}"',
        "        shift 2 words",
        "        (( CURRENT -= 2 ))",
        "    else",
        "        shift words",
        "        (( CURRENT-- ))",
        "    fi",
        '    case "$key" in',
    ]
    for command in every:
        specs = []
        for flag in command.flags:
            help_ = _plain(flag.help)
            if not flag.takes_value:
                specs.append(f"'{flag.name}[{help_}]'")
            elif flag.words:
                specs.append(f"'{flag.name}[{help_}]::value:({' '.join(flag.words)})'")
            else:
                specs.append(f"'{flag.name}[{help_}]:value:_files'")
        specs.append("'*:file:_files'")
        key = "_".join(command.words)
        lines.append(f"        {key})")
        lines.append("            _arguments -s \\")
        lines += [f"                {spec} \\" for spec in specs[:-1]]
        lines.append(f"                {specs[-1]}")
        lines.append("            ;;")
    lines += ["        *) _files;;", "    esac", "}", "", '_taguru_ray "$@"']
    return "\n".join(lines) + "\n"


# --- fish ------------------------------------------------------------------------------


def fish(every: list[Command]) -> str:
    lines = [
        f"# {PROGRAM} fish completion, generated by `{PROGRAM} completion fish`",
        f"complete -c {PROGRAM} -e",
    ]
    for command in every:
        if len(command.words) == 1:
            lines.append(
                f"complete -c {PROGRAM} -f -n '__fish_use_subcommand' -a {command.words[0]} "
                f"-d '{_plain(command.help)}'"
            )
    for command in every:
        verb = command.words[0]
        if len(command.words) == 1:
            condition = f"__fish_seen_subcommand_from {verb}"
            if command.subs:
                others = " ".join(command.subs)
                condition += f"; and not __fish_seen_subcommand_from {others}"
                for sub in command.subs:
                    lines.append(f"complete -c {PROGRAM} -f -n '{condition}' -a {sub}")
        else:
            condition = (
                f"__fish_seen_subcommand_from {verb}; and __fish_seen_subcommand_from "
                f"{command.words[1]}"
            )
        for flag in command.flags:
            spec = f"complete -c {PROGRAM} -n '{condition}' -l {flag.name[2:]}"
            if flag.words:
                spec += f" -a '{' '.join(flag.words)}'"
            elif flag.takes_value:
                spec += " -r -F"
            lines.append(f"{spec} -d '{_plain(flag.help)}'")
    return "\n".join(lines) + "\n"


RENDER: dict[str, Callable[[list[Command]], str]] = {"bash": bash, "zsh": zsh, "fish": fish}
