"""``--config FILE``: the file read, as ``KEY=VALUE`` variables or as a TOML run file.

Two forms, told apart by the file itself (`is_toml`):

- ``KEY=VALUE`` lines name variables (``TAGURU_EXTRACT_MODEL=qwen``), as the
  environment would; every value is text.
- TOML names settings (``model = "qwen"``, ``max_inflight = 64``, ``paths =
  ["docs/"]``), flat or under their group's table (``[transport]``), so one
  file can hold a whole run: context, out, paths, endpoints and every flag.
  Its values are typed; `settings.resolve` checks each against its declaration.
  An upper-case top-level key is a variable, as in a KEY=VALUE file
  (``TAGURU_ADDR = "…"`` for the verbs that read a server's variables).

Either way an unknown key is a usage error naming the nearest known one: the
file was written for this run, and a misspelled key silently ignored would run
without what its author asked for.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from taguru_ray.errors import UsageError
from taguru_ray.store.inputs import read_regular

ENV_KEY = re.compile(r"[A-Z][A-Z0-9_]*")


class ConfigFile(dict[str, str]):
    """What a ``--config`` file holds: its variables (the mapping itself, what every verb
    reads) and, from a TOML file, its settings by name (what `extract` reads too)."""

    def __init__(
        self, path: str, variables: dict[str, str], settings: dict[str, Any] | None = None
    ) -> None:
        super().__init__(variables)
        self.path = path
        self.settings: dict[str, Any] = settings or {}
        self.toml = settings is not None


def read_config_file(path: str) -> ConfigFile:
    """The ``--config`` file read and parsed; unreadable or malformed is a usage error."""
    try:
        text = read_regular(path).decode("utf-8")
    except OSError as error:
        raise UsageError(
            f"--config {path}: cannot read it ({error.strerror or error}) — give a KEY=VALUE "
            "file or a .toml run file"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    if is_toml(text, path):
        document = parse_toml(text, path)
        variables = {k: v for k, v in document.items() if ENV_KEY.fullmatch(k)}
        for key, value in variables.items():
            if not isinstance(value, str):
                raise UsageError(f"--config {path}: {key} is a variable: give it as a string")
        settings = {k: v for k, v in document.items() if k not in variables}
        return ConfigFile(path, variables, settings)
    return ConfigFile(path, parse_config(text, path))


def is_toml(text: str, path: str) -> bool:
    """A ``.toml`` name, or text that parses as TOML with a key that is not a variable's
    name (a KEY=VALUE file of quoted values is also valid TOML; its keys are upper case)."""
    if path.lower().endswith(".toml"):
        return True
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return any(not ENV_KEY.fullmatch(key) for key in table)


def parse_toml(text: str, path: str) -> dict[str, Any]:
    """The TOML document's top-level keys and tables, unchecked (`settings.resolve` checks
    the names and the values against the declarations)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"--config {path}: not valid TOML ({error})") from None


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
