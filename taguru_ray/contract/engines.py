"""The model servers a run starts itself (`--engine`): how each is launched and asked.

Pure. What a replica runs, as argv, from the engine's settings and the address it
listens on; which path says it is up and which one says its version. The replica
actor (`engine/replicas/`) runs the argv; the settings parser checks an
`--engine-command` template here, so a bad one is a usage error before Ray starts.

- **vllm**: ``vllm serve MODEL --host H --port P --tensor-parallel-size G ARGS`` —
  vLLM's own CLI, as its docs start a server; ``/health`` answers 200 once the
  weights are loaded, ``/version`` says ``{"version": …}``.
- **sglang**: ``PYTHON -m sglang.launch_server --model-path MODEL --host H --port P
  --tp-size G ARGS`` — SGLang's launcher is a module of the interpreter it is
  installed in, so PYTHON is the replica's own (`sys.executable` on the node: a
  ``python`` first on PATH may be another one, without SGLang); ``/health``, and
  ``/get_server_info`` carries ``version``.
- **simulate**: ``PYTHON -m taguru_ray simulate --host H --port P --served-model
  MODEL ARGS`` — the bundled simulator (not a model), so the whole lifecycle runs
  on a machine without a GPU through the same code; ``/health``, ``/version``.
- **command**: the user's template, split as a shell would split it, with
  ``{host}``, ``{port}`` and ``{model}`` filled in; ``/v1/models`` (every
  OpenAI-compatible server answers it), and ``/version`` when it has one.

G is left out at 0 GPUs (a CPU engine); ARGS (`--engine-args`) come last, so a
flag given there is the server's own word on it.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Sequence
from dataclasses import dataclass

ENGINES = ("vllm", "sglang", "simulate", "command")
PLACEHOLDERS = ("host", "port", "model")


@dataclass(frozen=True)
class EngineKind:
    """How one engine is asked whether it is up, and which version it is."""

    name: str
    health: str  # GET this path: 200 once the server takes requests
    versions: tuple[str, ...]  # GET these in turn for a JSON `version`


KINDS = {
    "vllm": EngineKind("vllm", "/health", ("/version",)),
    "sglang": EngineKind("sglang", "/health", ("/get_server_info", "/version")),
    "simulate": EngineKind("simulate", "/health", ("/version",)),
    "command": EngineKind("command", "/v1/models", ("/version",)),
}


@dataclass(frozen=True)
class ServerSpec:
    """What one replica runs: the engine, the weights, its GPUs and the user's extra words."""

    engine: str
    model: str
    gpus: int = 1
    args: tuple[str, ...] = ()
    template: tuple[str, ...] = ()  # --engine-command, split (the `command` engine only)

    def argv(self, python: str, host: str, port: int) -> list[str]:
        """The server's command line, listening on `host`:`port`; `python` is the
        interpreter of the process that starts it (the node's)."""
        if self.engine == "vllm":
            argv = ["vllm", "serve", self.model, "--host", host, "--port", str(port)]
            if self.gpus:
                argv += ["--tensor-parallel-size", str(self.gpus)]
        elif self.engine == "sglang":
            argv = [python, "-m", "sglang.launch_server", "--model-path", self.model]
            argv += ["--host", host, "--port", str(port)]
            if self.gpus:
                argv += ["--tp-size", str(self.gpus)]
        elif self.engine == "simulate":
            argv = [python, "-m", "taguru_ray", "simulate", "--host", host, "--port", str(port)]
            argv += ["--served-model", self.model]
        elif self.engine == "command":
            fields = {"host": host, "port": str(port), "model": self.model}
            return [word.format(**fields) for word in self.template]
        else:
            raise ValueError(f"no engine {self.engine!r}: one of {', '.join(ENGINES)}")
        return [*argv, *self.args]

    @property
    def kind(self) -> EngineKind:
        return KINDS[self.engine]

    @property
    def program(self) -> str:
        """What a person calls the server in a line: `vllm`, `sglang`, the template's first word."""
        if self.engine == "command" and self.template:
            return self.template[0]
        return self.engine


def split_args(text: str) -> tuple[str, ...]:
    """`--engine-args`: words as a shell splits them; ValueError naming an unclosed quote."""
    try:
        return tuple(shlex.split(text))
    except ValueError as error:
        raise ValueError(f"cannot be split into words ({error}) — close the quote") from None


def split_template(text: str) -> tuple[str, ...]:
    """`--engine-command`: its words, each a format string of PLACEHOLDERS alone, `{port}`
    among them (the run must know where the server listens); ValueError with the fix."""
    words = split_args(text)
    if not words:
        raise ValueError(
            "is empty — give the server's command line, e.g. 'my-server --port {port}'"
        )
    seen: set[str] = set()
    for word in words:
        try:
            fields = [
                field for _, field, _, _ in string.Formatter().parse(word) if field is not None
            ]
        except ValueError as error:
            raise ValueError(f"{word!r}: {error} — write a literal brace as {{{{ or }}}}") from None
        for field in fields:
            if field not in PLACEHOLDERS:
                raise ValueError(
                    f"{word!r}: {{{field}}} is not a placeholder — use "
                    f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
                )
            seen.add(field)
    if "port" not in seen:
        raise ValueError(
            "has no {port} — the run picks a free port on the replica's node and must tell the "
            "server, e.g. 'llama-server --port {port} -m {model}'"
        )
    return words


def shown(argv: Sequence[str]) -> str:
    """A command line as a person would type it."""
    return shlex.join(argv)
