"""What the record-reading verbs share: argparse's exit turned into an exit code."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import NoReturn

import fsspec

from taguru_ray.contract.settings.values import location as _location
from taguru_ray.errors import EXIT_USAGE, prefix


def write_report(path: str, data: object) -> str | None:
    """Write a JSON report (pretty, UTF-8) to a path or fsspec URL; the error, if any."""
    body = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    try:
        with fsspec.open(path, "w", encoding="utf-8") as handle:
            handle.write(body)
    except OSError as error:
        return f"writing {path}: {error}"
    return None


def location(text: str) -> str:
    """argparse's ``type`` for a path or fsspec URL: one this install cannot open (an
    unknown protocol, a driver not installed) is a usage error naming it and the fix."""
    try:
        return _location(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# SQLite's INTEGER: a number past it cannot be bound to a query (OverflowError), so a flag
# that reaches one is held to it at parse time, a usage error like any other.
SQLITE_INT_MAX = 2**63 - 1


def whole_number(text: str) -> int:
    """argparse's ``type`` for a count or a turn number: a whole number in
    0..2^63−1 (what SQLite can hold), else a usage error naming the range."""
    try:
        number = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number > SQLITE_INT_MAX:
        raise argparse.ArgumentTypeError(
            f"{text.strip()} is past the largest number a store holds ({SQLITE_INT_MAX})"
        )
    return number  # a negative one is refused by the verb, which names what it counts


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the code to exit with: --help is 0, a usage error 2
    (argparse has already printed either)."""
    try:
        return parser.parse_args(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line and a hint, not the whole usage, and whose
    value flags may not be given twice (never last-wins). The line starts as every other
    line of its command does (`taguru_ray.errors.prefix`)."""

    def __init__(self, *args: object, label: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.label = label  # e.g. "benchmark extract"

    def error(self, message: str) -> NoReturn:
        self.exit(
            EXIT_USAGE,
            f"{prefix(self.label)}{message} — try 'taguru-ray {self.label} --help'\n",
        )

    def parse_once(self, argv: Sequence[str]) -> argparse.Namespace:
        """Parse, refusing a value flag given twice."""
        seen: set[str] = set()
        for token in argv:
            flag = token.split("=", 1)[0]
            action = self._option_string_actions.get(flag)
            if action is None or action.nargs == 0 or isinstance(action, argparse._AppendAction):
                continue
            if action.dest in seen:
                self.error(f"{flag} given twice — give it once")
            seen.add(action.dest)
        return self.parse_args(list(argv))


# An option line of a hand-written usage text: `  --eval FILE     what it is` (two spaces
# in, the flag, its metavar when it takes a value, two or more spaces, the help); the help
# goes on over the lines indented deeper below it.
_USAGE_OPTION = re.compile(r"^  (--[a-z][a-z-]*)(?: ([A-Z][A-Z_]*))?(?: {2,}(\S.*))?$")


def usage_flags(usage: str) -> dict[str, tuple[str | None, str]]:
    """The long options a hand-written usage text describes: flag → (metavar, or None for
    a switch; its help on one line). The usage text is where a hand-rolled verb declares
    its flags, once: its parser reads the value flags from here, and shell completion
    the parser `usage_parser` builds from it."""
    found: dict[str, tuple[str | None, str]] = {}
    flag: str | None = None
    for line in usage.splitlines():
        match = _USAGE_OPTION.match(line)
        if match is not None:
            flag, metavar, text = match.groups()
            found[flag] = (metavar, text or "")
        elif flag is not None and line.startswith("    ") and line.strip():
            metavar, text = found[flag]
            found[flag] = (metavar, f"{text} {line.strip()}".strip())
        else:
            flag = None
    return found


def usage_parser(label: str, usage: str) -> OneLineParser:
    """An argparse parser holding the flags a hand-written usage text describes (never
    used to parse: the verb reads its argv by hand, as its reference does) — so shell
    completion finds every verb's flags the same way."""
    built = OneLineParser(prog=f"taguru-ray {label}", label=label)
    for flag, (metavar, text) in usage_flags(usage).items():
        if flag == "--help":
            continue
        text = text.replace("%", "%%")  # argparse formats help with %
        if metavar is None:
            built.add_argument(flag, action="store_true", help=text)
        else:
            built.add_argument(flag, metavar=metavar, help=text)
    return built
