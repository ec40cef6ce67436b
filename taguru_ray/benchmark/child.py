"""The child `taguru-ray extract` of one cell: its command, its environment, its exit.

Pure. Every task knob is the same global flag for every cell (the fairness
invariant); per model only the endpoint (or the engine the cell starts), the
model name, the key, the timeout, the structured-output request and the
in-flight capacity change.
The environment is scrubbed of every variable extract reads, so a stray
`TAGURU_EXTRACT_*` in the caller's shell cannot make two cells differ.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from taguru_ray.benchmark.models_file import ModelEntry
from taguru_ray.contract.settings.model import declarations

# The child's flags from a forwarded value: (flag, value) pairs in a fixed order.
FORWARDED = (
    "questions",
    "no_passage",
    "fact_budget",
    "lossy",
    "candidates",
    "vocabulary",
    "name",
    "description",
    "chunk_bytes",
    "parallel",
    "max_output_tokens",
    "address",
    "workers",
    "worker_resource",
    "segment_window",
)


@dataclass(frozen=True)
class TaskFlags:
    """The global flags of `benchmark extract`, one value for every cell."""

    context: str
    questions: int | None = None
    no_passage: bool = False
    fact_budget: int | None = None
    lossy: bool = False
    candidates: bool = False
    vocabulary: str | None = None
    name: str | None = None
    description: str | None = None
    chunk_bytes: int | None = None
    parallel: int = 1
    max_output_tokens: int | None = None
    max_attempts: int = 2
    address: str | None = None
    workers: int | None = None
    worker_resource: str | None = None
    segment_window: int | None = None  # unset: extract's own, the in-flight ceiling


def extract_variables() -> frozenset[str]:
    """Every variable extract reads, scrubbed from a child's environment."""
    return frozenset(d.knob.env for d in declarations() if d.knob.env) - {"RAY_ADDRESS"}


def child_argv(
    flags: TaskFlags, model: ModelEntry, out: str, sidecar: str, corpus: str
) -> list[str]:
    argv = [sys.executable, "-m", "taguru_ray", "extract", "--context", flags.context]
    argv += ["--out", out, "--diagnostics-out", sidecar, "--no-progress"]
    flag_of = {d.name: d.knob.flag for d in declarations()}
    for name in FORWARDED:
        value = getattr(flags, name)
        if value is None or value is False:
            continue
        argv += [flag_of[name]] if value is True else [flag_of[name], str(value)]
    argv += ["--structured-output", model.structured_output]
    argv += ["--max-inflight", str(model.max_inflight)]
    if len(model.urls) > 1:
        for url in model.urls:
            argv += ["--endpoint", url]
    return [*argv, *engine_argv(model), corpus]


def engine_argv(model: ModelEntry) -> list[str]:
    """An engine entry's --engine flags: the cell starts, measures and stops its replicas."""
    if model.engine is None:
        return []
    argv = ["--engine", model.engine, "--engine-replicas", str(model.replicas)]
    argv += ["--engine-gpus", str(model.gpus)]
    if model.accelerator:
        argv += ["--engine-accelerator", model.accelerator]
    if model.args:
        argv.append(f"--engine-args={model.args}")  # `=`: words starting with - stay its value
    if model.command:
        argv.append(f"--engine-command={model.command}")
    return argv


def child_env(environ: Mapping[str, str], flags: TaskFlags, model: ModelEntry) -> dict[str, str]:
    scrubbed = extract_variables()
    env = {key: value for key, value in environ.items() if key not in scrubbed}
    if flags.address is None:
        env.pop("RAY_ADDRESS", None)  # a child starts its own Ray unless --address
    if model.url is not None:  # an engine entry's cell starts its own endpoints
        env["TAGURU_EXTRACT_URL"] = model.url
    env["TAGURU_EXTRACT_MODEL"] = model.model
    env["TAGURU_EXTRACT_TIMEOUT_SECS"] = _seconds(model.timeout_secs)
    env["TAGURU_EXTRACT_MAX_ATTEMPTS"] = str(flags.max_attempts)
    if model.api_key_env and model.api_key_env in environ:
        env["TAGURU_EXTRACT_API_KEY"] = environ[model.api_key_env]
    return env


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def cell_outcome(exit_code: int | None) -> str | None:
    """complete | failed | interrupted, or None for an exit the harness cannot read."""
    if exit_code is None or exit_code == 130 or exit_code < 0:
        return "interrupted"  # a signal killed it, or it stopped on one
    if exit_code == 0:
        return "complete"
    if exit_code in (1, 2):
        return "failed"  # 2: extract refused the config — a measurement, not the matrix's end
    return None


RUNGS = {"json_schema": "json_schema", "json_object": "json_object", "prompted": "prompted"}


def resolved_rung(stderr_lines: list[str], requested: str) -> str | None:
    """The rung the cell ran under: `off` when asked for none, else the last rung extract
    named on stderr (resolved or demoted to), else the one requested explicitly."""
    if requested == "off":
        return "off"
    rung = None
    for line in stderr_lines:
        _, found, rest = line.partition("structured output: ")
        if not found:
            continue
        for marker in ("resolved to ", "demoted to "):
            if marker in rest:
                rest = rest.split(marker, 1)[1]
        words = rest.split()
        if words and words[0] in RUNGS:
            rung = RUNGS[words[0]]
    if rung is None and requested != "auto":
        return requested.replace("-", "_")
    return rung
