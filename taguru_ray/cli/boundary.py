"""The net under every verb: an exception nothing else caught becomes one line.

A verb handles the failures it knows by name (a missing file, a refused key, a
server that is down) with its own line and exit code. What it does not know is a
bug: the user gets one line naming the verb, what it was reading and where the
traceback went, exit 1 — never a raw traceback on the terminal. ``--debug`` before
the verb (or ``TAGURU_RAY_DEBUG=1``) prints the traceback as well.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence

from taguru_ray.contract.cli_variables import DEBUG
from taguru_ray.errors import prefix
from taguru_ray.text.terminal import printable

DEBUG_ENV = DEBUG
# A flag whose value is a credential: the value never reaches the line or the file.
_SECRET_FLAG = re.compile(r"^--?[\w-]*(key|token|secret|password|passphrase)[\w-]*$", re.I)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE)", re.I)
_SHOWN = 160


def secrets_in(argv: Sequence[str], environ: dict[str, str]) -> list[str]:
    """Every value a traceback must not show: flag values and variables that name a secret."""
    found: list[str] = []
    for index, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if _SECRET_FLAG.match(name):
            if eq:
                found.append(value)
            elif index + 1 < len(argv):
                found.append(argv[index + 1])
    found += [value for name, value in environ.items() if _SECRET_ENV.search(name)]
    # Longest first, so a secret that contains another is hidden whole.
    return sorted({value for value in found if len(value) >= 4}, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


def inputs_of(argv: Sequence[str]) -> str:
    """What the verb was given, shortened for one line, credentials hidden."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            shown.append("[redacted]")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_FLAG.match(name):
            shown.append(f"{name}=[redacted]" if eq else name)
            hide_next = not eq
            continue
        shown.append(arg)
    text = printable(" ".join(shown)) or "no arguments"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


# The verbs that take a sub-verb, and theirs: a line names the command as typed.
SUB_VERBS: dict[str, tuple[str, ...]] = {
    "benchmark": ("extract", "compare", "search"),
    "evaluate": ("compare",),
    "sessions": ("import", "list", "search", "show", "extract", "recall", "replay", "expand",
                 "brief"),
}


def command_of(verb: str, argv: Sequence[str]) -> str:
    """``sessions import`` for ``sessions import …``; the verb alone otherwise."""
    if argv and argv[0] in SUB_VERBS.get(verb, ()):
        return f"{verb} {argv[0]}"
    return verb


def guarded(verb: str, run: Callable[[Sequence[str]], int], argv: Sequence[str],
            *, debug: bool) -> int:
    """``run(argv)``, with an escaped exception turned into one line and exit 1."""
    try:
        return run(argv)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as error:  # the net: a verb's known failures never reach it
        secrets = secrets_in(argv, dict(os.environ))
        text = scrub("".join(traceback.format_exception(error)), secrets)
        where = _keep(verb, text)
        kind = type(error).__name__
        print(f"{prefix(command_of(verb, argv))}unexpected {kind} on {inputs_of(argv)} — "
              "this is a bug; "
              f"the traceback is in {where}", file=sys.stderr)
        if debug:
            print(text, end="", file=sys.stderr)
        return 1


def _keep(verb: str, text: str) -> str:
    """Write the traceback to a private file; the path, or why there is none."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        descriptor, path = tempfile.mkstemp(
            prefix=f"taguru-ray-{verb}-{stamp}-", suffix=".traceback")
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        return f"no file ({error.strerror}; rerun with --debug to see it)"
    return path
