"""``--config FILE``: the file read and its ``KEY=VALUE`` lines parsed, for `settings.resolve`."""

from __future__ import annotations

import re

from taguru_ray.errors import UsageError
from taguru_ray.store.inputs import read_regular


def read_config_file(path: str) -> dict[str, str]:
    """The variables a ``--config`` file sets; unreadable or malformed is a usage error."""
    try:
        text = read_regular(path).decode("utf-8")
    except OSError as error:
        raise UsageError(
            f"--config {path}: cannot read it ({error.strerror or error}) — give a KEY=VALUE file"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    return parse_config(text, path)


def parse_config(text: str, path: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, blank lines, optional ``export``, quotes)."""
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            # The line itself is never echoed: a malformed one may well hold a key.
            raise UsageError(
                f"--config {path}: line {number}: expected KEY=VALUE (the line is not shown: "
                "it may hold a secret)"
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        found[key] = value
    return found
