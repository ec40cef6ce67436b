"""The effective settings of a run written as a TOML ``--config`` file that reads back to
the same settings (``taguru-ray extract --print-config``).

One table per group, every setting by its name, its value as the run holds it.
Secrets (the API key, the redaction phrase) are never written: a comment names
the variable each is read from. Every text value passes the one masker
(`text/masking.py`) first, as everything the tool shows does: a URL is written
without its userinfo and credential parameters (``user:pass@``, ``?api-key=``),
with a comment saying what was left out and where to give it (the environment
beats this file, as for ``api_key``); a value that still holds a secret — a key
in a URL's path, a token in a folder name — is not written at all, and the
comment says so. A setting at None (unset) is left out, as TOML has no null and
leaving it out reads back as unset; ``config`` itself is left out, as a file
never names another.
"""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.settings.groups import GROUPS
from taguru_ray.contract.settings.knob import knobs_of
from taguru_ray.contract.settings.model import Settings
from taguru_ray.text.masking import secrets_in, url_without_credentials

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
            shown, note = _masked(value)
            if note:
                where = declared.knob.env or declared.knob.flag or "the command line"
                body.append(f"# {declared.name}: {note} — give them in {where}")
            if shown is not None:
                body.append(f"{declared.name} = {_value(shown)}")
        if body:
            lines += ["", f"[{group.GROUP}]", *body]
    return "\n".join(lines) + "\n"


def _masked(value: Any) -> tuple[Any, str | None]:
    """The value as it may be written, and what was left out of it (None: nothing)."""
    texts = value if isinstance(value, tuple | list) else (value,)
    if not all(isinstance(text, str) for text in texts):
        return value, None
    shown: list[str] = []
    removed: list[str] = []
    whole = True
    for text in texts:
        kept, left_out = url_without_credentials(text)
        if kept is not None and secrets_in(kept):
            kept, left_out = None, (*left_out, f"a secret ({', '.join(secrets_in(kept))})")
        removed += left_out
        if kept is None:
            whole = False
        else:
            shown.append(kept)
    if not removed:
        return value, None
    what = ", ".join(dict.fromkeys(removed))
    if not whole:
        return None, f"not written, as it holds {what}"
    note = f"written without its credentials ({what})"
    return (tuple(shown) if isinstance(value, tuple | list) else shown[0]), note


def _value(value: Any) -> str:
    """A TOML literal: JSON's strings, numbers and arrays are TOML's too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, float) and value != value:  # never: the parsers refuse nan
        raise ValueError("nan has no TOML form here")
    return json.dumps(value, ensure_ascii=False)
