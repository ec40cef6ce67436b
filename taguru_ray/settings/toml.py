"""The effective settings of a run written as a TOML ``--config`` file that reads back to
the same settings (``taguru-ray extract --print-config``).

One table per group, every setting by its name, its value as the run holds it.
Secrets (the API key, the redaction phrase) are never written: a comment names
the variable each is read from. A setting at None (unset) is left out, as TOML
has no null and leaving it out reads back as unset; ``config`` itself is left
out, as a file never names another.
"""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.settings.groups import GROUPS
from taguru_ray.contract.settings.knob import knobs_of
from taguru_ray.contract.settings.model import Settings

HEADER = (
    "# taguru-ray extract --config FILE: the effective settings of a run "
    "(flags beat variables beat this file)\n"
)


def render_toml(settings: Settings) -> str:
    """The settings as TOML, group by group in declaration order."""
    lines = [HEADER.rstrip("\n")]
    for group in GROUPS:
        values = getattr(settings, group.GROUP)
        body = []
        for declared in knobs_of(group):
            if declared.name == "config":
                continue
            if declared.knob.secret:
                if declared.knob.env:
                    body.append(f"# {declared.name}: from {declared.knob.env}, never written")
                continue
            value = getattr(values, declared.name)
            if value is None:
                continue
            body.append(f"{declared.name} = {_value(value)}")
        if body:
            lines += ["", f"[{group.GROUP}]", *body]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    """A TOML literal: JSON's strings, numbers and arrays are TOML's too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, float) and value != value:  # never: the parsers refuse nan
        raise ValueError("nan has no TOML form here")
    return json.dumps(value, ensure_ascii=False)
