"""``taguru-ray extract``: parse the command line, then hand one Settings to the engine.

Every flag of seed 000's ``taguru extract`` is here, plus the Ray and scale
flags. A flag given twice is a usage error (never "last one wins"); a flag
whose feature is not built yet parses, then `settings.resolve_settings`
refuses it by name.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from taguru_ray.errors import EXIT_INTERRUPTED, EXIT_USAGE, MESSAGE_PREFIX, TaguruRayError

if TYPE_CHECKING:
    from taguru_ray.contract.settings.knob import Declared

HELP_HINT = " — try 'taguru-ray extract --help'"


class _Parser(argparse.ArgumentParser):
    """Usage errors as every other stderr line of extract: one ``taguru: extract:`` line
    naming the fix, exit 2 (argparse would print its usage block and its own prefix)."""

    def error(self, message: str) -> NoReturn:
        print(f"{MESSAGE_PREFIX}{message}{HELP_HINT}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


class _Once(argparse.Action):
    """Store a value, refusing a second occurrence of the same flag."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} given twice")
        setattr(namespace, self.dest, values)


DESCRIPTION = (
    "Extract Taguru source files from .md/.txt segments with an OpenAI-compatible model, as "
    "a Ray job. The endpoint comes from TAGURU_EXTRACT_URL and TAGURU_EXTRACT_MODEL (and "
    "TAGURU_EXTRACT_API_KEY)."
)


def build_parser() -> argparse.ArgumentParser:
    """The flags, each from its setting's declaration (`taguru_ray.contract.settings.groups`),
    under its group's title; the settings with only a variable after them."""
    from taguru_ray.contract.settings.groups import TITLES
    from taguru_ray.settings import declarations

    parser = _Parser(
        prog="taguru-ray extract",
        description="\n".join(textwrap.wrap(DESCRIPTION, 78)),
        epilog=_variables_only(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    sections: dict[str, Any] = {}
    for declared in declarations():
        knob = declared.knob
        if knob.flag is None and knob.form != "positional":
            continue
        title = TITLES[declared.group]
        section = sections.setdefault(title, parser.add_argument_group(title))
        text = _help(declared)
        if knob.form == "positional":
            section.add_argument(declared.name, nargs="*", metavar=knob.metavar, help=text)
            continue
        action: Any = {"switch": "store_const", "repeat": "append"}.get(knob.form, _Once)
        extra = {"const": True} if knob.form == "switch" else {"metavar": knob.metavar}
        section.add_argument(knob.flag, dest=declared.name, action=action, help=text, **extra)
        if knob.negation:
            section.add_argument(
                knob.negation,
                dest=declared.name,
                action="store_const",
                const=knob.negated,
                help=f"the same as {knob.flag} {knob.negated}",
            )
    parser.add_argument(
        "--steps", action="store_true", help="print the pipeline's step table and exit"
    )
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print the run's effective settings as a TOML --config file and exit "
        "(secrets are never written)",
    )
    return parser


def _variables_only() -> str:
    """The epilog: each setting read from a variable only, with its meaning and default."""
    from taguru_ray.settings import declarations

    lines = ["settings with only a variable (or a key of a --config file):"]
    for declared in declarations():
        knob = declared.knob
        if knob.flag is None and knob.env and knob.form != "positional":
            text = _help(declared).replace(f"; or {knob.env}", "").replace(f" (or {knob.env})", "")
            lines.append(f"  {knob.env}")
            lines += textwrap.wrap(
                text.replace("%%", "%"), 74, initial_indent="      ", subsequent_indent="      "
            )
    return "\n".join(lines)


def _help(declared: Declared) -> str:
    """The declaration's help, with its default and its variable."""
    knob = declared.knob
    said = []
    if (declared.required and knob.form != "positional") or knob.shown == "required":
        said.append("required")
    elif knob.shown is not None:
        said.append(f"default {knob.shown}")
    elif declared.default not in (None, False, (), ""):
        said.append(f"default {declared.default}")
    if knob.env:
        said.append(f"or {knob.env}")
    text = knob.help.replace("%", "%%")
    return f"{text} ({'; '.join(said)})" if said else text


def _normalise_optional(argv: Sequence[str]) -> list[str]:
    """A flag whose value is optional (``--redact``, ``--progress``) consumes the next
    word only when it is one of the words it takes (in any case); alone, it means its
    bare value. So it never swallows an input path (``--redact docs/``: docs/ is a
    segment folder), and a near miss of its words that is no file (``--progress line``)
    is refused by name instead of read as a path that is not there."""
    from taguru_ray.settings import declarations

    optional = {d.knob.flag: d.knob for d in declarations() if d.knob.form == "optional"}
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        token = items[i]
        if token == "--":
            out.extend(items[i:])
            break
        knob = optional.get(token)
        following = items[i + 1] if i + 1 < len(items) else None
        if knob is None:
            out.append(token)
        elif following is not None and following.lower() in knob.takes:
            out.append(f"{token}={following.lower()}")
            i += 1
        else:
            if following is not None:
                _refuse_near_miss(token, following, knob.takes)
            out.append(f"{token}={knob.bare}")
        i += 1
    return out


def _refuse_near_miss(flag: str, word: str, takes: tuple[str, ...]) -> None:
    """A word after an optional-value flag that reads as a misspelt value of it, and is
    neither path-like nor an existing file, is a usage error naming the nearest value."""
    import difflib
    import os

    if word.startswith("-") or any(c in word for c in "/.:\\") or os.path.exists(word):
        return
    near = difflib.get_close_matches(word.lower(), takes, n=1, cutoff=0.75)
    if near:
        _Parser(prog="taguru-ray extract").error(
            f"{flag} {word}: not one of {', '.join(takes)} — did you mean {flag} {near[0]}? "
            f"(a segment named {word} reads as ./{word})"
        )


def parse_flags(argv: Sequence[str]) -> dict[str, Any]:
    parser = build_parser()
    # Operands may sit among the flags (``docs/ --progress lines more/``).
    namespace = parser.parse_intermixed_args(_normalise_optional(argv))
    return vars(namespace)


def main(argv: Sequence[str]) -> int:
    """The command line to flags, then the Python API's own path (`taguru_ray.api.resolve`
    and `execute`), its lines to stdout and stderr; the exit code."""
    # Imported late so `--help` and usage errors answer without loading Ray.
    from taguru_ray.api import execute, resolve

    flags = parse_flags(argv)
    if flags.pop("steps", False):
        from taguru_ray.contract.steps import render_table

        print(render_table())
        return 0
    print_config = flags.pop("print_config", False)
    try:
        settings = resolve(flags)
        if print_config:
            from taguru_ray.settings.toml import render_toml

            for line in settings.notes:
                print(f"{MESSAGE_PREFIX}{line}", file=sys.stderr)
            print(render_toml(settings), end="")
            return 0
        from taguru_ray.engine.driver import Console, dry_run
        from taguru_ray.heap import steady_arrow, steady_malloc

        steady_malloc()  # this process is the driver: a million segments' peak (ADR 0042)
        steady_arrow()  # a dataset's batches from malloc (ADR 0075)
        if settings.run.dry_run:
            return dry_run(settings, Console())
        return execute(settings, Console())
    except TaguruRayError as error:
        print(f"{MESSAGE_PREFIX}{error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(
            f"{MESSAGE_PREFIX}interrupted — chunk checkpoints saved; rerun to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
