"""What one setting's declaration says, and the base its groups are built on.

A setting is a field of a group model, declared once as
``name: Annotated[type, Knob(...)] = default``: the pydantic field gives the
name, type and default; the `Knob` beside it says where the value may come
from (flag, variable), how its text parses, what `--help` and the README say,
and whether — and as what — it enters the compute inputs. The parser, the
environment and ``--config`` reading, the fingerprint, the settings record
and the README's table are all derived from these declarations (`declared`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from taguru_ray.contract.settings import values

Form = Literal["value", "switch", "repeat", "positional", "optional"]


@dataclass(frozen=True)
class Input:
    """How a setting enters the compute inputs the manifest and checkpoints compare.

    `field` is the manifest field (CONTRACT section 2); `form` names the function of
    `forms` that turns the run's settings into the field's value (None: the setting's
    value as it is);
    `own` marks taguru-ray's own inputs, absent from an entry at their default
    so an entry a default run writes stays the reference's, field for field.
    """

    field: str
    form: str | None = None  # a function of forms.py, by name
    own: bool = False


@dataclass(frozen=True)
class Knob:
    """Where a setting comes from and how it reads (the field beside it has the rest).

    `form`: ``value`` takes an argument; ``switch`` takes none and sets True;
    ``repeat`` may be given many times; ``positional`` is the operands;
    ``optional`` may stand alone (meaning `bare`) or take one of `takes`.
    `negation` is a second flag that sets the value `negated`.
    """

    help: str
    flag: str | None = None
    env: str | None = None
    parse: Callable[[str], Any] = values.text
    metavar: str | None = None
    form: Form = "value"
    bare: str | None = None
    takes: tuple[str, ...] = ()
    negation: str | None = None
    negated: Any = None
    compute: Input | None = None
    secret: bool = False  # never in a repr, a log line or a record
    shown: str | None = None  # the README's default column, when the value alone misleads


@dataclass(frozen=True)
class Declared:
    """One setting as declared: its group, its name, its knob and its default."""

    group: str
    name: str
    knob: Knob
    default: Any
    required: bool

    @property
    def metavar(self) -> str:
        """What stands for its value in --help and the README."""
        return self.knob.metavar or self.name.upper()


class Group(BaseModel):
    """A group of settings one part of the run receives. Immutable; ships to workers."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    GROUP: ClassVar[str] = ""  # the Settings field that holds it

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        secret = {d.name for d in knobs_of(type(self)) if d.knob.secret}
        for name, value in super().__repr_args__():
            if name not in secret:
                yield name, value


def knobs_of(group: type[BaseModel]) -> Iterator[Declared]:
    """The settings a group declares, in declaration order."""
    for name, info in group.model_fields.items():
        knob = next((m for m in info.metadata if isinstance(m, Knob)), None)
        if knob is None:
            continue
        required = info.is_required()
        yield Declared(
            group.GROUP if issubclass(group, Group) else group.__name__.lower(),
            name,
            knob,
            None if required else info.get_default(call_default_factory=True),
            required,
        )
