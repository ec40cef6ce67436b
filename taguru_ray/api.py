"""taguru-ray from Python: `extract` returns a `RunResult` instead of an exit code.

    import taguru_ray
    result = taguru_ray.extract(["docs/"], out="out/", context="5b0d…", model="qwen")
    result.written, result.exit_code, [s.status for s in result.segments]

Settings are the CLI's, by their names (``model``, ``max_inflight``, ``carryover``…,
as `taguru-ray extract --help` lists them without the dashes); the environment and
``config`` (a ``--config`` file) fill the rest, as for the CLI. It runs where it is
called: from a script, from a thread, from a notebook whose event loop is running
(the run gets a thread of its own), and inside a Ray task or job (it joins the
running Ray and never shuts down a Ray it did not start). Lines the CLI would print
go to `RunResult.lines`, or to ``echo`` when given. A bad setting raises `UsageError`;
a run that cannot start, `StartupError` — what the CLI turns into exit 2 and 1.

`taguru-ray extract` is a layer over this module: it parses the command line into
the same flags, then `resolve` and `execute`; `extract` and `taguru_ray.data.extract`
take `resolve` and `run`, which is `execute` plus the `RunResult` — one path from
flags to the engine for all three.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from taguru_ray.contract.names import TRACE, attempts_name, join, output_name
from taguru_ray.errors import UsageError

if TYPE_CHECKING:
    from taguru_ray.engine.scan import Console
    from taguru_ray.settings import Settings

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
    paths: str | Sequence[str],
    *,
    out: str,
    context: str,
    echo: Callable[[str], None] | None = None,
    **settings: Any,
) -> RunResult:
    """Extract `paths` into `out` for `context`; the run's result. See the module doc."""
    flags = _flags([paths] if isinstance(paths, str) else list(paths), out, context, settings)
    return _call(flags, echo)


def extract_staged(
    staged: Mapping[str, bytes],
    *,
    out: str,
    context: str,
    echo: Callable[[str], None] | None = None,
    **settings: Any,
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


def _flags(paths: list[str], out: str, context: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    from taguru_ray.cli.extract import build_parser

    known = {action.dest for action in build_parser()._actions} - {"help", "steps"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise UsageError(
            f"unknown setting(s) {', '.join(unknown)} — the names are extract's "
            "flags without the dashes (taguru-ray extract --help)"
        )
    flags: dict[str, Any] = dict.fromkeys(known)
    flags.update(settings, paths=paths, out=out, context=context)
    if flags.get("dry_run"):
        raise UsageError("dry_run: plan with `taguru-ray extract --dry-run`; extract() runs")
    return flags


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
