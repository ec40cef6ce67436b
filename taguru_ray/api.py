"""taguru-ray from Python: `extract` returns a `RunResult` instead of an exit code.

    import taguru_ray
    result = taguru_ray.extract(["docs/"], out="out/", context="5b0d…", model="qwen",
                                max_inflight=64, lossy=True, tags=["notes"])
    result.written, result.exit_code, [s.status for s in result.segments]

Settings are keyword arguments, typed: ints, floats, bools, lists and paths as such
(`help(taguru_ray.extract)` lists every one with its type and default; a type checker
sees them as `taguru_ray.ExtractSettings`). Each is the setting the flags and variables
declare (`taguru_ray.contract.settings`), by its name or its flag's (``tags`` or
``tag``, ``endpoints`` or ``endpoint``), checked by the same parser: a value it refuses,
a type it does not take or a name nobody declares raises `UsageError` naming the
argument, before anything runs. What is not given comes from the environment
(``TAGURU_EXTRACT_URL``, ``TAGURU_EXTRACT_MODEL``…) and ``config``, as for the CLI.

It runs where it is called: from a script, from a thread, from a notebook whose event
loop is running (the run gets a thread of its own), and inside a Ray task or job (it
joins the running Ray and never shuts down a Ray it did not start). Lines the CLI would
print go to `RunResult.lines`, or to ``echo`` when given. A run that cannot start
raises `StartupError` — what the CLI turns into exit 1.

`taguru-ray extract` is a layer over this module: it parses the command line into the
same flags, then `resolve` and `execute`; `extract` and `taguru_ray.data.extract` take
`resolve` and `run`, which is `execute` plus the `RunResult` — one path from flags to
the engine for all three. This module builds on the settings' declarations, never on
the CLI's parser.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import difflib
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Unpack

from taguru_ray.api_settings import ExtractSettings
from taguru_ray.contract.names import TRACE, attempts_name, join, output_name
from taguru_ray.errors import UsageError

if TYPE_CHECKING:
    from taguru_ray.contract.settings.knob import Declared
    from taguru_ray.engine.scan import Console
    from taguru_ray.settings import Settings

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]

NOT_REACHED = "not reached"  # a stopped run's segments it never started


@dataclass(frozen=True)
class SegmentResult:
    """How one input ended: ``written``, ``unchanged``, ``failed``, ``interrupted`` or
    ``not reached``, where its files are, and what the CLI printed about it."""

    source: str
    status: str
    output: str  # the source file's path or URL in --out (written or kept)
    attempts_log: str  # its attempts log
    report: str | None = None
    notes: tuple[str, ...] = ()
    completions: int = 0


@dataclass(frozen=True)
class RunResult:
    exit_code: int  # the CLI's: 0, 1 a segment failed, 130 stopped
    run_id: str
    out: str
    segments: tuple[SegmentResult, ...]
    completions: int
    requests: int
    input_tokens: int
    output_tokens: int
    stopped: bool
    cost_usd: float | None = None  # None: no price for the model (see `cost_basis`)
    cost_basis: str = ""  # the price it was counted at, or why there is none
    lines: tuple[str, ...] = field(default=(), repr=False)  # what the CLI would have printed

    def _count(self, status: str) -> int:
        return sum(1 for segment in self.segments if segment.status == status)

    @property
    def written(self) -> int:
        return self._count("written")

    @property
    def unchanged(self) -> int:
        return self._count("unchanged")

    @property
    def failed(self) -> int:
        return self._count("failed")


def extract(
    paths: Paths,
    *,
    out: str | os.PathLike[str],
    context: str,
    echo: Callable[[str], None] | None = None,
    **settings: Unpack[ExtractSettings],
) -> RunResult:
    """Extract `paths` into `out` for `context`; the run's result. See the module doc."""
    return _call(_flags(paths, out, context, settings), echo)


def extract_staged(
    staged: Mapping[str, bytes],
    *,
    out: str | os.PathLike[str],
    context: str,
    echo: Callable[[str], None] | None = None,
    **settings: Unpack[ExtractSettings],
) -> RunResult:
    """`extract` over segments held in memory, by source name, instead of paths: the
    engine's ``staged`` run (`taguru_ray.data.extract` gathers a dataset's rows so)."""
    return _call(_flags(list(staged), out, context, settings), echo, staged)


def _call(
    flags: dict[str, Any],
    echo: Callable[[str], None] | None,
    staged: Mapping[str, bytes] | None = None,
) -> RunResult:
    """Run where it is called, or — under a running event loop — on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(flags, echo, staged)
    # A running loop (a notebook, an async app): asyncio.run cannot nest, so the run
    # gets a thread of its own, and this call waits for it as a plain call would.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="taguru-ray") as pool:
        return pool.submit(_run, flags, echo, staged).result()


def _flags(
    paths: Paths, out: str | os.PathLike[str], context: str, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments as the command line would give them (`as_flag`), each checked
    by its setting's parser; a `UsageError` naming the first that is wrong. None: not
    given (the environment and --config fill it)."""
    from taguru_ray.contract.settings import values
    from taguru_ray.contract.settings.model import declarations
    from taguru_ray.contract.settings.python import NOT_KEYWORDS, aliases

    every = {declared.name: declared for declared in declarations()}
    named = aliases(list(every.values()))
    flags: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for given, value in settings.items():
        name = named.get(given, given)
        if name not in every or name in NOT_KEYWORDS:
            if name == "dry_run":
                raise UsageError(
                    "dry_run: plan with `taguru-ray extract --dry-run`; extract() runs"
                )
            near = difflib.get_close_matches(given, [*every, *named], n=1)
            hint = f" — did you mean {near[0]}?" if near else ""
            raise UsageError(f"{given}: not a setting{hint} (help(taguru_ray.extract) lists them)")
        if name in given_as:
            raise UsageError(f"{given}: given twice (also as {given_as[name]}) — give it once")
        given_as[name] = given
        if value is not None:
            flags[name] = _checked(given, every[name], value)
    flags["paths"] = _checked("paths", every["paths"], paths)
    flags["out"] = _checked("out", every["out"], out)
    flags["context"] = _checked("context", every["context"], context)
    for name in [name for name in flags if name != "paths"]:
        if every[name].knob.parse is values.location:
            flags[name] = _absolute(flags[name])
    return flags


def _absolute(location: str) -> str:
    """A local path as seen from here: Ray's workers (the segment workers, the sidecar's
    writer) run in their own folder — a joined cluster's, not this process's — and would
    write ``out="out/"`` there. The inputs keep their spelling: it is their source id."""
    if "://" in location or "::" in location:
        return location
    return os.path.abspath(location)


def _checked(given: str, declared: Declared, value: Any) -> Any:
    """`value` in its flag's form, once its type and the setting's parser accept it."""
    from taguru_ray.contract.settings.python import as_flag

    try:
        raw = as_flag(declared, value)
        if isinstance(raw, list):
            for item in raw:
                declared.knob.parse(item)
        elif not isinstance(raw, bool):
            declared.knob.parse(raw)
    except ValueError as error:
        raise UsageError(f"{given}: {error}") from None
    return raw


def _run(
    flags: dict[str, Any],
    echo: Callable[[str], None] | None,
    staged: Mapping[str, bytes] | None = None,
) -> RunResult:
    from taguru_ray.engine.scan import Console

    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        if echo is not None:
            echo(line)

    result = run(resolve(flags), Console(say, say), staged)
    return replace(result, lines=tuple(lines))


def resolve(flags: Mapping[str, Any]) -> Settings:
    """Flags (extract's, by their names) to one Settings: the environment and a --config
    file fill what the flags leave unset."""
    from taguru_ray.settings import resolve_settings
    from taguru_ray.store.config_file import read_config_file

    return resolve_settings(flags, os.environ, read_config_file)


def execute(settings: Settings, console: Console) -> int:
    """A real run of `settings`, its lines to `console`; only the exit code — what the CLI
    needs, without a `SegmentResult` per segment (a million-segment rerun's worth)."""
    from taguru_ray.engine.driver import execute as execute_run

    return execute_run(settings, console).exit_code


def run(
    settings: Settings, console: Console, staged: Mapping[str, bytes] | None = None
) -> RunResult:
    """A real run of `settings` (`engine.driver.execute`), its lines to `console`; the
    result (`lines` left empty: the console has them). `staged`: the run's segments in
    memory by source name, instead of the input paths."""
    from taguru_ray.engine.driver import execute

    executed = execute(settings, console, staged)
    done = executed.run
    out = settings.source.out
    trace = join(out, TRACE)
    segments = []
    for index, source in enumerate(done.sources):
        row = done.row(index)
        segments.append(
            SegmentResult(
                source,
                row.status if row else NOT_REACHED,
                join(out, output_name(source)),
                f"{trace}/{attempts_name(source)}",
                row.report if row else None,
                row.notes if row else (),
                row.completions if row else 0,
            )
        )
    stats = done.stats
    return RunResult(
        exit_code=executed.exit_code,
        run_id=done.run_id,
        out=out,
        segments=tuple(segments),
        completions=int(stats.get("attempts", 0)),
        requests=int(sum(stats.get("outcomes", {}).values())),
        input_tokens=int(stats.get("input_tokens", 0)),
        output_tokens=int(stats.get("output_tokens", 0)),
        stopped=done.stopping,
        cost_usd=stats.get("cost_usd"),
        cost_basis=done.tariff.basis,
    )


def _signature(first: inspect.Parameter) -> inspect.Signature:
    """`extract`'s signature as `help` and `inspect` show it: every setting a keyword, with
    the type it takes and its default (unset, the environment and --config come first)."""
    from taguru_ray.contract.settings.python import annotation, keyword_settings

    names = {"os": os, "Sequence": Sequence, "datetime": datetime, "Callable": Callable}
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [
        first,
        inspect.Parameter("out", keyword, annotation=str | os.PathLike[str]),
        inspect.Parameter("context", keyword, annotation=str),
        inspect.Parameter("echo", keyword, default=None, annotation=Callable[[str], None] | None),
    ]
    for declared in keyword_settings():
        default = None if declared.required else declared.default
        parameters.append(
            inspect.Parameter(
                declared.name, keyword, default=default,
                annotation=eval(annotation(declared), names),  # our own text, from `annotation`
            )
        )  # fmt: skip
    return inspect.Signature(parameters, return_annotation=RunResult)


def _settings_doc() -> str:
    """Every setting, group by group: its type, its default, what it does, its variable."""
    from taguru_ray.contract.settings.groups import GROUPS
    from taguru_ray.contract.settings.knob import knobs_of
    from taguru_ray.contract.settings.python import NOT_KEYWORDS, aliases, annotation

    lines = [
        "",
        "Settings (keyword arguments; one not given comes from its variable, then",
        "``config``, then the default shown):",
    ]
    for group in GROUPS:
        declared = [d for d in knobs_of(group) if d.name not in NOT_KEYWORDS]
        if not declared:
            continue
        lines += ["", (group.__doc__ or group.GROUP).strip().splitlines()[0]]
        flag_names = {name: alias for alias, name in aliases(declared).items()}
        for d in declared:
            default = "required" if d.required else repr(d.default)
            also = f" (or {flag_names[d.name]}=)" if d.name in flag_names else ""
            lines.append(f"    {d.name}{also}: {annotation(d)} = {default}")
            where = ", ".join(x for x in (d.knob.flag, d.knob.env) if x)
            lines.append(f"        {d.knob.help}" + (f" [{where}]" if where else ""))
    return "\n".join(lines)


def _describe() -> None:
    """Give `extract` and `extract_staged` their settings' signature and docstring."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    doc = _settings_doc()
    paths = inspect.Parameter("paths", keyword, annotation=Paths)
    staged = inspect.Parameter("staged", keyword, annotation=Mapping[str, bytes])
    for function, first in ((extract, paths), (extract_staged, staged)):
        function.__signature__ = _signature(first)  # type: ignore[attr-defined]
        function.__doc__ = f"{function.__doc__}\n{doc}"


_describe()
