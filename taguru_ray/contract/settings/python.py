"""A setting given from Python: what a caller may pass, checked against its declaration.

`taguru_ray.extract(…, max_inflight=64, lossy=True, tags=["a"], out=Path("out"))`:
ints, floats, bools, lists and paths are taken as such, and turned into the text
the setting's flag would carry (`as_flag`) — so the API goes through the one
parser each setting declares (`values`), and a value it refuses is refused with
the same words. A value of a type the setting does not take is refused naming
what it takes. The types here are also what `help(taguru_ray.extract)` shows and
what `taguru_ray/api_settings.py` (a TypedDict for type checkers, rendered by
`render_typed_dict`) declares: one source for all three.
"""

from __future__ import annotations

import datetime
import os
import types
from collections.abc import Iterator, Sequence
from typing import Any, Union, get_args, get_origin

from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.groups import GROUPS
from taguru_ray.contract.settings.knob import Declared

# Given outside **settings (`extract(paths, *, out, context)`), or never from Python.
NOT_KEYWORDS = frozenset({"paths", "out", "context", "dry_run"})
PATH = "str | os.PathLike[str]"


def field_types(name: str) -> tuple[type, ...]:
    """The Python types a setting's field holds (``int | str`` gives both; None left out)."""
    for group in GROUPS:
        info = group.model_fields.get(name)
        if info is not None:
            annotation = info.annotation
            if get_origin(annotation) in (Union, types.UnionType):
                found = get_args(annotation)
            else:
                found = (annotation,)
            return tuple(get_origin(t) or t for t in found if t is not type(None) and t is not None)
    raise KeyError(name)


def annotation(declared: Declared) -> str:
    """What a caller may pass for a setting, as a type expression (for the TypedDict and
    the help): the field's type, a path-like where it names a file or folder, a sequence
    where it repeats, a date object for --date, a bool where it may stand alone."""
    knob = declared.knob
    path = knob.parse is values.location
    if knob.form in ("repeat", "positional"):
        item = PATH if path else "str"
        text = f"{item} | Sequence[{item}]"
    elif knob.form == "switch" or bool in field_types(declared.name):
        text = "bool"
    elif knob.form == "optional":
        text = "bool | str"
    elif declared.name == "date":
        text = "int | str | datetime.date"
    elif path:
        text = PATH
    else:
        text = " | ".join(t.__name__ for t in field_types(declared.name))
    if declared.default is None or declared.required:  # None: not given here
        text += " | None"
    return text


# A type in the words a TOML --config's error uses (TOML's own names for its values).
_TOML_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def takes_in_words(declared: Declared) -> str:
    """What a setting takes, in words (``an integer or a string``): for the TOML run
    file's refusals, from the same field types as `annotation`."""
    knob = declared.knob
    if knob.form in ("repeat", "positional"):
        return "a list of strings"
    if knob.form == "switch":
        return "true or false"
    words = [_TOML_WORDS[t] for t in field_types(declared.name) if t in _TOML_WORDS]
    return " or ".join(words) or "a string"


def aliases(every: Sequence[Declared]) -> dict[str, str]:
    """A setting by its flag's name too, where that differs: ``tag`` for ``tags``,
    ``schema`` for ``schema_file``, ``endpoint`` for ``endpoints``."""
    found = {}
    for declared in every:
        flag = declared.knob.flag
        if flag is None:
            continue
        alias = flag.removeprefix("--").replace("-", "_")
        if alias != declared.name:
            found[alias] = declared.name
    return found


def keyword_settings() -> Iterator[Declared]:
    """The settings `extract` takes as keywords, in declaration order."""
    from taguru_ray.contract.settings.model import declarations

    return (d for d in declarations() if d.name not in NOT_KEYWORDS)


def as_flag(declared: Declared, value: Any) -> Any:
    """A Python value as the command line would give it — a bool for a switch (or any
    bool setting), a list of texts for a repeatable one, a text otherwise — once its type
    is one the setting takes; ValueError saying what it takes otherwise. The text then
    goes through the setting's own parser, as a flag's does."""
    knob = declared.knob
    if knob.form in ("repeat", "positional"):
        items = [value] if isinstance(value, str | os.PathLike) else value
        if not isinstance(items, Sequence) or not all(
            isinstance(item, str | os.PathLike) for item in items
        ):
            raise _wrong(declared, value)
        return [os.fspath(item) for item in items]
    if knob.form == "switch" or bool in field_types(declared.name):
        if isinstance(value, bool):
            return value
        raise _wrong(declared, value)
    if knob.form == "optional" and isinstance(value, bool):
        return knob.bare if value else (knob.negated or "false")
    admits = field_types(declared.name)
    if isinstance(value, bool):
        raise _wrong(declared, value)  # True is an int to Python, never a number here
    if isinstance(value, int) and (int in admits or float in admits):
        return str(value)
    if isinstance(value, float) and float in admits:
        return repr(value)
    if isinstance(value, datetime.date) and declared.name == "date":
        if isinstance(value, datetime.datetime):
            raise ValueError("takes a date (datetime.date), not a date and time")
        return value.isoformat()
    if isinstance(value, os.PathLike) and knob.parse is values.location:
        return os.fspath(value)
    if isinstance(value, str) and (str in admits or declared.name == "date"):
        return value
    raise _wrong(declared, value)


def _wrong(declared: Declared, value: Any) -> ValueError:
    shown = "" if declared.knob.secret else f" {value!r}"
    wanted = annotation(declared).removesuffix(" | None")
    return ValueError(f"takes {wanted}, got {type(value).__name__}{shown}")


def render_typed_dict() -> str:
    """The source of `taguru_ray/api_settings.py`: every keyword setting (and its flag's
    name, where that differs), typed as `annotation` says."""
    every = list(keyword_settings())
    lines = [
        '"""The keyword settings of `taguru_ray.extract`, for type checkers.',
        "",
        "Generated from the declarations (`taguru_ray.contract.settings.groups`) by",
        "`python -m taguru_ray.contract.settings.python > taguru_ray/api_settings.py`;",
        "tests/test_api_typed.py fails when it is out of date. Do not edit by hand.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import datetime",
        "import os",
        "from collections.abc import Sequence",
        "from typing import TypedDict",
        "",
        "__all__ = ['ExtractSettings']",
        "",
        "",
        "class ExtractSettings(TypedDict, total=False):",
        '    """`extract`\'s settings by name; unset: the environment, --config, the default."""',
        "",
    ]
    for declared in every:
        lines.append(f"    {declared.name}: {annotation(declared)}")
    named = aliases(every)
    if named:
        lines.append("    # the same settings by their flags' names")
        by_name = {d.name: d for d in every}
        for alias, name in named.items():
            lines.append(f"    {alias}: {annotation(by_name[name])}")
    return "\n".join(lines).replace("'ExtractSettings'", '"ExtractSettings"') + "\n"


if __name__ == "__main__":
    print(render_typed_dict(), end="")
