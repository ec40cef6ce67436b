"""Flags, variables and ``--config`` resolved into one Settings, with the checks that
span settings.

Precedence is flag over environment over ``--config FILE`` over the default,
for every setting (seed 000). A value's text is parsed by its declaration's
parser; an error names where the text came from. A TOML ``--config`` holds
settings by name, typed: each value is checked against its setting's type,
then parsed as its text would be (`config_text`).

A key nothing reads is named with the nearest known one (ADR 0055): in the
``--config`` file, written for this run, it is a usage error; a ``TAGURU_*``
variable in the environment, which outlives the run and may be another
tool's, is a warning line (`Settings.notes`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

from taguru_ray.contract.cli_variables import CLI_VARIABLES
from taguru_ray.contract.items import MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES, MAX_TAG_BYTES, MAX_TAGS
from taguru_ray.contract.server_variables import SERVER_VARIABLES
from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.groups import GROUPS
from taguru_ray.contract.settings.knob import Declared
from taguru_ray.contract.settings.model import Settings, declarations
from taguru_ray.contract.settings.python import as_flag, takes_in_words
from taguru_ray.errors import UsageError

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# taguru-ray's own namespaces: another TAGURU_* variable may belong to another taguru tool.
OWN_PREFIXES = ("TAGURU_EXTRACT_", "TAGURU_RAY_")
STORAGE_ENV_PREFIXES = ("AWS_", "FSSPEC_", "BOTO_", "S3_")
# Stores that end with the process that opened them: a run "written" there is lost (and
# Ray's workers, other processes, never see it at all).
TRANSIENT_PROTOCOLS = frozenset({"memory"})


def known_variables() -> frozenset[str]:
    return frozenset(d.knob.env for d in declarations() if d.knob.env)


def read_variables() -> frozenset[str]:
    """Every TAGURU_* variable some verb of taguru-ray reads."""
    return known_variables() | frozenset(CLI_VARIABLES) | frozenset(SERVER_VARIABLES)


def resolve_settings(
    flags: Mapping[str, Any],
    environ: Mapping[str, str],
    read_config: Callable[[str], Mapping[str, str]],
) -> Settings:
    """Merge parsed flags (None = not given), the environment and ``--config``.

    `flags` holds the raw strings argparse collected (True for a switch, a list
    for a repeatable flag), keyed by setting name; `read_config` reads the
    ``--config`` file (`store.config_file`), so resolving does no I/O itself.
    """
    every = list(declarations())
    config_path = next(_resolve(d, flags, environ, {}) for d in every if d.name == "config")
    config = read_config(config_path) if config_path else {}
    if config_path:
        _refuse_unknown_variables(config, config_path)
    flags, from_file = _with_file_settings(
        flags, environ, getattr(config, "settings", {}), config_path or ""
    )
    _check_source_flags(flags)
    chosen = {d.name: _resolve(d, flags, environ, config, from_file) for d in every}
    chosen["config"] = config_path  # a file never names another
    chosen["tags"] = tuple(dict.fromkeys(chosen["tags"]))
    if not chosen["model"]:
        raise UsageError(
            "TAGURU_EXTRACT_MODEL is not set — export the model name your endpoint serves "
            "(it is a compute input the manifest records)"
        )
    _check_engine(chosen)
    if not chosen["endpoints"] and chosen["url"]:
        chosen["endpoints"] = (chosen["url"],)
    _check_replay(chosen)
    _check_steering(chosen)
    if chosen["diagnostics_out"]:
        check_persists("--diagnostics-out", chosen["diagnostics_out"])
    needs_endpoint = chosen["engine"] is None and not chosen["dry_run"]
    if not chosen["endpoints"] and needs_endpoint and chosen["replay"] != "strict":
        raise UsageError(
            "TAGURU_EXTRACT_URL is not set — export your OpenAI-compatible endpoint, e.g. "
            "TAGURU_EXTRACT_URL=http://127.0.0.1:8000/v1/chat/completions"
        )
    return Settings.of(
        **chosen,
        storage_env=storage_environment(environ),
        notes=unknown_variables(environ),
    )


ENGINE_SETTINGS = {
    "engine_replicas": "--engine-replicas",
    "engine_gpus": "--engine-gpus",
    "engine_accelerator": "--engine-accelerator",
    "engine_args": "--engine-args",
    "engine_command": "--engine-command",
}


def _check_engine(chosen: dict[str, Any]) -> None:
    """`--engine` and what goes with it: its own settings need it, and an endpoint of the
    user's, a batch API or an offline replay have no use for the replicas it starts."""
    engine = chosen["engine"]
    defaults = {d.name: d.default for d in declarations() if d.name in ENGINE_SETTINGS}
    if engine is None:
        given = [flag for name, flag in ENGINE_SETTINGS.items() if chosen[name] != defaults[name]]
        if given:
            raise UsageError(
                f"{given[0]} needs --engine (vllm, sglang, simulate or command): without it "
                "the run calls the endpoint you give and starts no server"
            )
        return
    if engine == "command" and not chosen["engine_command"]:
        raise UsageError(
            "--engine command needs --engine-command, the server's command line with {port} "
            "in it (e.g. --engine-command 'llama-server --port {port} -m {model}')"
        )
    if engine != "command" and chosen["engine_command"]:
        raise UsageError(
            f"--engine-command is --engine command's; --engine {engine} starts its own "
            "server — drop --engine-command, or use --engine command"
        )
    if chosen["endpoints"]:
        raise UsageError(
            f"--engine {engine} starts the model's own replicas and --endpoint names another "
            "server — give one of them"
        )
    if chosen["url"]:
        raise UsageError(
            f"--engine {engine} starts the model's own replicas, but TAGURU_EXTRACT_URL names "
            "an endpoint — unset it (or drop --engine to call that endpoint)"
        )
    if chosen["batch_api"]:
        raise UsageError(
            f"--batch-api sends the completions to a provider, --engine {engine} to replicas "
            "of its own — give one of them"
        )
    if chosen["replay"] == "strict":
        raise UsageError(
            f"--replay strict answers from the attempts log alone — --engine {engine} would "
            "start servers nothing asks; drop one of them"
        )


def _resolve(
    declared: Declared,
    flags: Mapping[str, Any],
    environ: Mapping[str, str],
    config: Mapping[str, str],
    from_file: Mapping[str, str] | None = None,
) -> Any:
    knob = declared.knob
    raw = flags.get(declared.name)
    where = (from_file or {}).get(declared.name) or knob.flag or declared.name
    if raw is None and knob.env:
        if knob.env in environ:
            raw, where = environ[knob.env], knob.env
        elif knob.env in config:
            raw, where = config[knob.env], f"{knob.env} (from --config)"
    if raw is None:
        return declared.default
    if isinstance(raw, bool):  # a switch given on the command line
        return raw
    try:
        if isinstance(raw, list | tuple):
            return tuple(knob.parse(item) for item in raw)
        return knob.parse(raw)
    except ValueError as error:
        raise UsageError(f"{where}: {error}") from None


def unknown_variables(environ: Mapping[str, str]) -> tuple[str, ...]:
    """A warning line per TAGURU_* variable in the environment that nothing reads: one of
    our namespaces (TAGURU_EXTRACT_REDACTT=1), or near one we read (TAGURU_EXTRAC_URL) —
    a misspelling silently ignored would run without what its author asked for."""
    known = sorted(read_variables())
    notes = []
    for key in sorted(environ):
        if not key.startswith("TAGURU_") or key in known:
            continue
        # Outside our namespaces only a near miss counts: TAGURU_DATA_DIR is the server's.
        cutoff = 0.6 if key.startswith(OWN_PREFIXES) else 0.9
        near = difflib.get_close_matches(key, known, n=1, cutoff=cutoff)
        if near:
            notes.append(
                f"{key} (in the environment) is not a variable taguru-ray reads — did you "
                f"mean {near[0]}? (ignored)"
            )
        elif key.startswith(OWN_PREFIXES):
            notes.append(f"{key} (in the environment) is not a variable taguru-ray reads — "
                         "it is ignored")
    return tuple(notes)


def _refuse_unknown_variables(config: Mapping[str, str], path: str) -> None:
    """A variable of ours in the --config file that nothing reads is a usage error."""
    known = sorted(read_variables())
    for key in sorted(config):
        if key.startswith(OWN_PREFIXES) and key not in known:
            near = difflib.get_close_matches(key, known, n=1)
            hint = f" — did you mean {near[0]}?" if near else " — remove it"
            raise UsageError(f"--config {path}: {key} is not a variable taguru-ray reads{hint}")


def _with_file_settings(
    flags: Mapping[str, Any], environ: Mapping[str, str], document: Mapping[str, Any], path: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The flags with what a TOML --config sets filled in where no flag (and, for a
    setting with a variable, no variable) gave it; and, by name, where each came from."""
    merged = dict(flags)
    where: dict[str, str] = {}
    every = {d.name: d for d in declarations()}
    for name, value in _flat(document, every, path).items():
        declared = every[name]
        given = merged.get(name)
        if (given is not None and given != []) or (declared.knob.env or "") in environ:
            continue
        if type(value) is type(declared.default) and value == declared.default:
            continue  # the default as the run holds it (rpm = 0: none), as --print-config writes
        label = f"{name} (in --config {path})"
        merged[name] = config_text(declared, value, label)
        where[name] = label
    return merged, where


def _flat(
    document: Mapping[str, Any], every: Mapping[str, Declared], path: str
) -> dict[str, Any]:
    """A TOML document's settings by name: top-level keys and those under a group's table.
    An unknown name is a usage error naming the nearest setting."""
    groups = {group.GROUP for group in GROUPS}
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if key in groups and isinstance(value, dict):
            items = [(inner, inner_value, f"[{key}] ") for inner, inner_value in value.items()]
        else:
            items = [(key, value, "")]
        for name, item, table in items:
            if name not in every or name == "config":
                if name == "config":
                    raise UsageError(f"--config {path}: {table}config: a file never names another")
                near = difflib.get_close_matches(name, [*every, *groups], n=1)
                hint = f" — did you mean {near[0]}?" if near else " — remove it"
                raise UsageError(f"--config {path}: {table}{name} is not a setting{hint}")
            if name in flat:
                raise UsageError(f"--config {path}: {name} given twice — give it once")
            flat[name] = item
    return flat


def config_text(declared: Declared, value: Any, where: str) -> Any:
    """A TOML value as the command line would give it, by the Python API's own rule
    (`contract/settings/python.as_flag`: what a setting takes is declared once) — except
    that a TOML string is the flag's text as it stands, for the setting's parser to read
    (``workers = "2"`` and ``workers = 2`` both read; a switch takes one only where a
    variable would). A type it does not take is a usage error naming it in TOML's words
    (`takes_in_words`): ``workers = true`` takes an integer."""
    knob = declared.knob
    text = isinstance(value, str) and knob.form not in ("repeat", "positional")
    if text and (knob.form != "switch" or knob.env):
        return value
    try:
        return as_flag(declared, value)
    except ValueError:
        return _refused(where, takes_in_words(declared), value)


def _refused(where: str, wanted: str, value: Any) -> Any:
    shown = "true" if value is True else "false" if value is False else repr(value)
    raise UsageError(f"{where}: takes {wanted}, got {shown}")


def storage_environment(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables fsspec and s3fs configure themselves from, sorted."""
    return tuple(sorted((k, v) for k, v in environ.items() if k.startswith(STORAGE_ENV_PREFIXES)))


def _check_replay(chosen: Mapping[str, Any]) -> None:
    """--replay and --resume-from (taguru ADR 0031, #822): one or the other, and strict is
    offline."""
    if chosen["resume_from"] is not None and chosen["replay"] != "off":
        raise UsageError(
            "--resume-from and --replay cannot both be given — --resume-from already selects "
            "a --replay mode"
        )
    if chosen["replay"] == "strict" and chosen["structured_output"] == "auto":
        raise UsageError(
            "--replay strict with --structured-output auto: the auto probe needs a live call — "
            "pin the rung the recording used (its attempts' `rung` field names it)"
        )


def _check_steering(chosen: Mapping[str, Any]) -> None:
    if chosen["redact_rules"] and not chosen["redact"]:
        raise UsageError(
            "--redact-rules needs --redact: with redaction off the rules would run nothing — "
            "add --redact (or TAGURU_EXTRACT_REDACT=1)"
        )
    if chosen["chunk_context"] == "ingested" and not chosen["vocabulary"]:
        raise UsageError(
            "--chunk-context ingested needs --vocabulary: what the context holds is read from "
            "its export — add --vocabulary PATH"
        )


def check_persists(flag: str, url: str) -> None:
    protocol = url.split("://", 1)[0].lower() if "://" in url else "file"
    if protocol in TRANSIENT_PROTOCOLS:
        raise UsageError(
            f"{flag} {url}: a {protocol}:// store ends with this process (and the run's "
            "workers never see it), so nothing written there would last — give a folder or "
            "an object store URL"
        )


def _check_source_flags(flags: Mapping[str, Any]) -> None:
    """The checks on --context/--name/--description/--source-id/--date/--tag (seed 000)."""
    context = flags.get("context")
    if not context:
        raise UsageError("--context ID is required: the target context's lowercase UUID")
    if not UUID_RE.match(context):
        hint = " (write it in lowercase)" if UUID_RE.match(context.lower()) else ""
        raise UsageError(
            f"--context {context!r}: not a lowercase hyphenated UUID{hint} — use the id column "
            "of GET /contexts, or a fresh one from uuidgen alongside --name"
        )
    if not flags.get("out"):
        raise UsageError("--out DIR is required: the folder (or fsspec URL) source files go to")
    check_persists("--out", flags["out"])
    if not flags.get("paths"):
        raise UsageError("no segments given: name one or more .md/.txt files or folders")
    name, description = flags.get("name"), flags.get("description")
    if description is not None and name is None:
        raise UsageError("--description needs --name (it describes the context --name creates)")
    if name is not None and (not name.strip() or len(name.encode()) > MAX_NAME_BYTES):
        raise UsageError(f"--name must be 1..{MAX_NAME_BYTES} bytes and not blank")
    if description is not None and len(description.encode()) > MAX_DESCRIPTION_BYTES:
        raise UsageError(
            f"--description of {len(description.encode())} bytes exceeds the "
            f"{MAX_DESCRIPTION_BYTES}-byte cap"
        )
    source_id = flags.get("source_id")
    if source_id is not None:
        if not source_id.strip():
            raise UsageError("--source-id must not be empty or whitespace")
        if len(source_id.encode()) > MAX_NAME_BYTES:
            raise UsageError(
                f"--source-id of {len(source_id.encode())} bytes exceeds the "
                f"{MAX_NAME_BYTES}-byte cap (the server's source-name cap)"
            )
    if flags.get("date"):
        try:
            values.date(flags["date"])
        except ValueError as error:
            raise UsageError(f"--date {flags['date']!r}: {error}") from None
    tags = list(dict.fromkeys(flags.get("tags") or ()))
    for tag in tags:
        if not tag.strip():
            raise UsageError("--tag must not be empty")
        if len(tag.encode()) > MAX_TAG_BYTES:
            raise UsageError(
                f"--tag of {len(tag.encode())} bytes exceeds the {MAX_TAG_BYTES}-byte cap"
            )
    if len(tags) > MAX_TAGS:
        raise UsageError(
            f"more than {MAX_TAGS} distinct --tag values; a source carries at most {MAX_TAGS}"
        )
    if flags.get("no_passage") and (flags.get("date") or tags):
        raise UsageError(
            "--date/--tag ride the passage line; --no-passage strips it — drop one or the other"
        )
    if flags.get("no_passage") and flags.get("questions"):
        raise UsageError(
            "--questions needs the passage (--no-passage strips the text the questions would "
            "attach to)"
        )
