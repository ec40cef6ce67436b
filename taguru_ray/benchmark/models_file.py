"""`models.json`: the model matrix of `benchmark extract` (BENCHMARK.md §1.2).

Pure: the caller reads the file and hands its bytes and the environment here.
Per model only provider identity and capability — the reference's fairness
invariant: every task knob is a global flag. Beyond the reference an entry may
name several endpoints (`urls`), the GPU it runs on (`gpu`, `gpu_count`), a
price per GPU-hour and its in-flight capacity (`max_inflight`) — or, instead of
a URL, an engine the cell starts on the cluster's GPUs (`engine`, `accelerator`,
`gpus`, `replicas`, `args`, `command`: extract's `--engine` settings, ADR 0080);
the cell's record then says what the replicas ran on, read from the nodes.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from taguru_ray.contract.engines import ENGINES, split_args, split_template
from taguru_ray.contract.settings.values import ACCELERATOR_RE

MODELS_VERSION = 1
STRUCTURED_OUTPUTS = ("auto", "json-schema", "json-object", "off")
DEFAULT_TIMEOUT_SECS = 300
DEFAULT_STRUCTURED_OUTPUT = "off"

_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOP_KEYS = ("taguru_benchmark_models", "defaults", "models")
_DEFAULT_KEYS = ("timeout_secs", "structured_output")
_ENTRY_KEYS = (
    "id",
    "label",
    "model",
    "url",
    "urls",
    "api_key_env",
    "structured_output",
    "timeout_secs",
    "note",
    "gpu",
    "gpu_count",
    "price_per_gpu_hour",
    "max_inflight",
    "engine",
    "accelerator",
    "gpus",
    "replicas",
    "args",
    "command",
)


class ModelsError(ValueError):
    """models.json cannot be used; the message names the file and what to fix."""


@dataclass(frozen=True)
class ModelEntry:
    """One model of the matrix, defaults folded in."""

    id: str
    model: str
    urls: tuple[str, ...]  # the first is `url`; the cell balances across all of them (none
    # for an engine entry: the cell starts its own replicas)
    label: str | None = None
    api_key_env: str | None = None
    structured_output: str = DEFAULT_STRUCTURED_OUTPUT
    timeout_secs: float = DEFAULT_TIMEOUT_SECS
    note: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    price_per_gpu_hour: float | None = None
    max_inflight: int | str = "auto"
    engine: str | None = None  # extract's --engine for the cell
    accelerator: str | None = None  # --engine-accelerator (declared; the record says what ran)
    gpus: int = 1  # --engine-gpus, per replica
    replicas: int = 1  # --engine-replicas
    args: str = ""  # --engine-args
    command: str | None = None  # --engine-command

    @property
    def url(self) -> str | None:
        return self.urls[0] if self.urls else None

    def hardware(self) -> set[str]:
        """What a cell of this model occupies: its endpoints, or the GPUs of a type its
        engine starts replicas on (`gpu:*` when it names no type: any of them)."""
        if self.engine is not None:
            return {f"gpu:{self.accelerator or '*'}"}
        return set(self.urls)

    def lock_entry(self) -> dict[str, Any]:
        """The entry as models.lock.json keeps it: defaults folded in, absent as null."""
        return {
            "id": self.id,
            "label": self.label,
            "model": self.model,
            "url": self.url,
            "api_key_env": self.api_key_env,
            "structured_output": self.structured_output,
            "timeout_secs": _number(self.timeout_secs),
            "note": self.note,
            "urls": list(self.urls),
            "gpu": self.gpu,
            "gpu_count": self.gpu_count,
            "price_per_gpu_hour": self.price_per_gpu_hour,
            "max_inflight": self.max_inflight,
            "engine": self.engine,
            "accelerator": self.accelerator,
            "gpus": self.gpus if self.engine else None,
            "replicas": self.replicas if self.engine else None,
            "args": self.args if self.engine else None,
            "command": self.command,
        }


@dataclass(frozen=True)
class Matrix:
    models: tuple[ModelEntry, ...]
    warnings: tuple[str, ...]


def parse_models(path: str, data: bytes, environ: Mapping[str, str]) -> Matrix:
    """The matrix, or ModelsError naming `path`; unknown keys are warnings, not errors."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelsError(f"{path}: not JSON ({error}) — fix the file") from None
    except RecursionError:  # json recurses per level: a deep file is refused, not a crash
        raise ModelsError(f"{path}: not JSON (nested too deeply to read) — fix the file") from None
    if not isinstance(document, dict):
        raise ModelsError(f"{path}: the top level must be an object")
    warnings = [_unknown(path, key, "") for key in document if key not in _TOP_KEYS]
    version = document.get("taguru_benchmark_models")
    if version is None or isinstance(version, bool) or version != MODELS_VERSION:
        raise ModelsError(
            f"{path}: taguru_benchmark_models must be {MODELS_VERSION} (found "
            f"{json.dumps(version)}) — this build reads version {MODELS_VERSION} matrices"
        )
    defaults = document.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ModelsError(f"{path}: defaults must be an object")
    warnings += [_unknown(path, key, "defaults.") for key in defaults if key not in _DEFAULT_KEYS]
    models = document.get("models")
    if not isinstance(models, list) or not models:
        raise ModelsError(f"{path}: models must be a non-empty list")
    entries: list[ModelEntry] = []
    for index, raw in enumerate(models):
        where = f"{path}: models[{index}]"
        if not isinstance(raw, dict):
            raise ModelsError(f"{where} must be an object")
        warnings += [
            _unknown(path, key, f"models[{index}].") for key in raw if key not in _ENTRY_KEYS
        ]
        entry = _entry(where, raw, defaults, environ)
        if any(seen.id == entry.id for seen in entries):
            raise ModelsError(f"{where}: id {entry.id!r} is used twice — ids must be unique")
        entries.append(entry)
    return Matrix(tuple(entries), tuple(warnings))


def _unknown(path: str, key: str, where: str) -> str:
    return f"{path}: '{where}{key}' is not a key taguru-ray reads (typo?)"


def _entry(
    where: str, raw: dict[str, Any], defaults: dict[str, Any], environ: Mapping[str, str]
) -> ModelEntry:
    ident = raw.get("id")
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        raise ModelsError(
            f"{where}: id {json.dumps(ident)} must be 1..64 characters of [a-z0-9._-] starting "
            "with a letter or digit (it names files)"
        )
    where = f"{where} ({ident})"
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ModelsError(f"{where}: model must be a non-empty string")
    engine = _engine(where, raw)
    urls = () if engine is not None else _urls(where, raw)
    key_env = _optional_text(where, raw, "api_key_env")
    if key_env is not None:
        if not _ENV_NAME.fullmatch(key_env):
            raise ModelsError(
                f"{where}: api_key_env must name an environment variable, not hold a key — "
                "put the key in a variable and name it here"
            )
        if key_env not in environ:
            raise ModelsError(f"{where}: api_key_env {key_env} is not set — export it first")
    structured = raw.get("structured_output", defaults.get("structured_output"))
    structured = DEFAULT_STRUCTURED_OUTPUT if structured is None else structured
    if structured not in STRUCTURED_OUTPUTS:
        raise ModelsError(
            f"{where}: structured_output {json.dumps(structured)} must be one of "
            f"{', '.join(STRUCTURED_OUTPUTS)}"
        )
    timeout = raw.get("timeout_secs", defaults.get("timeout_secs", DEFAULT_TIMEOUT_SECS))
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ModelsError(f"{where}: timeout_secs must be a positive number of seconds")
    return ModelEntry(
        id=ident,
        model=model,
        urls=urls,
        label=_optional_text(where, raw, "label"),
        api_key_env=key_env,
        structured_output=structured,
        timeout_secs=float(timeout),
        note=_optional_text(where, raw, "note"),
        # An engine entry's GPU, unless named, is the type it asks for; its count, every
        # replica's (what a GPU-hour price is paid for).
        gpu=_optional_text(where, raw, "gpu") or (engine or {}).get("accelerator"),
        gpu_count=_optional_count(where, raw, "gpu_count")
        or (engine["gpus"] * engine["replicas"] if engine and engine["gpus"] else None),
        price_per_gpu_hour=_optional_price(where, raw),
        max_inflight=_inflight(where, raw.get("max_inflight", "auto")),
        **(engine or {}),
    )


def _engine(where: str, raw: dict[str, Any]) -> dict[str, Any] | None:
    """An entry's engine settings (None for an entry naming a URL), checked as extract
    checks its --engine flags, so a bad entry is refused before any cell runs."""
    engine = raw.get("engine")
    own = [key for key in ("accelerator", "gpus", "replicas", "args", "command") if key in raw]
    if engine is None:
        if own:
            raise ModelsError(f"{where}: {own[0]} is an engine's setting — add engine")
        return None
    if engine not in ENGINES:
        raise ModelsError(
            f"{where}: engine {json.dumps(engine)} must be one of {', '.join(ENGINES)}"
        )
    if "url" in raw or "urls" in raw:
        raise ModelsError(
            f"{where}: names both an engine and a url — an engine entry starts its own replicas; "
            "give one of them"
        )
    accelerator = _optional_text(where, raw, "accelerator")
    if accelerator is not None and not ACCELERATOR_RE.fullmatch(accelerator):
        raise ModelsError(
            f"{where}: accelerator {accelerator!r} is not a Ray accelerator type (H100, L4, …)"
        )
    gpus = raw.get("gpus", 1)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ModelsError(f"{where}: gpus must be a whole number ≥ 0 (per replica)")
    replicas = _optional_count(where, raw, "replicas") or 1
    args = raw.get("args", "")
    if isinstance(args, list) and all(isinstance(word, str) for word in args):
        args = shlex.join(args)
    if not isinstance(args, str):
        raise ModelsError(f"{where}: args must be a string (or a list of strings)")
    command = _optional_text(where, raw, "command")
    try:
        split_args(args)
        if command is not None:
            split_template(command)
    except ValueError as error:
        raise ModelsError(f"{where}: {'command' if command else 'args'} {error}") from None
    if (engine == "command") != (command is not None):
        raise ModelsError(
            f"{where}: engine command needs command (a template with {{port}}), and only it "
            "takes one"
        )
    return {
        "engine": engine,
        "accelerator": accelerator,
        "gpus": gpus,
        "replicas": replicas,
        "args": args,
        "command": command,
    }


def _urls(where: str, raw: dict[str, Any]) -> tuple[str, ...]:
    urls: list[Any] = []
    if "url" in raw:
        urls.append(raw["url"])
    extra = raw.get("urls", [])
    if not isinstance(extra, list):
        raise ModelsError(f"{where}: urls must be a list of endpoint URLs")
    urls += [url for url in extra if url not in urls]
    if not urls:
        raise ModelsError(f"{where}: url is required (the /chat/completions endpoint)")
    for url in urls:
        _check_url(where, url)
    return tuple(urls)


def _check_url(where: str, url: Any) -> None:
    if not isinstance(url, str):
        raise ModelsError(f"{where}: url {json.dumps(url)} must be a string")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise ModelsError(f"{where}: url {url!r} cannot be parsed") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelsError(f"{where}: url {url!r} must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ModelsError(
            f"{where}: url carries inline credentials — remove them and name the key's "
            "variable in api_key_env"
        )


def _optional_text(where: str, raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise ModelsError(f"{where}: {key} must be a string")
    return value


def _optional_count(where: str, raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelsError(f"{where}: {key} must be a whole number ≥ 1")
    return value


def _optional_price(where: str, raw: dict[str, Any]) -> float | None:
    value = raw.get("price_per_gpu_hour")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelsError(f"{where}: price_per_gpu_hour must be a number (USD per GPU-hour)")
    if value < 0:
        raise ModelsError(f"{where}: price_per_gpu_hour must not be negative")
    return float(value)


def _inflight(where: str, value: Any) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelsError(f'{where}: max_inflight must be "auto" or a whole number ≥ 1')
    return value


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
