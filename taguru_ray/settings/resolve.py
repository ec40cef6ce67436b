"""Flags, variables and ``--config`` resolved into one Settings, with the checks that
span settings.

Precedence is flag over environment over ``--config FILE`` over the default,
for every setting (seed 000). A value's text is parsed by its declaration's
parser; an error names where the text came from.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

from taguru_ray.contract.items import MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES, MAX_TAG_BYTES, MAX_TAGS
from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.knob import Declared
from taguru_ray.contract.settings.model import Settings, declarations
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
    _check_source_flags(flags)
    chosen = {d.name: _resolve(d, flags, environ, config) for d in every}
    chosen["config"] = config_path  # a file never names another
    chosen["tags"] = tuple(dict.fromkeys(chosen["tags"]))
    if not chosen["model"]:
        raise UsageError(
            "TAGURU_EXTRACT_MODEL is not set — export the model name your endpoint serves "
            "(it is a compute input the manifest records)"
        )
    if not chosen["endpoints"] and chosen["url"]:
        chosen["endpoints"] = (chosen["url"],)
    _check_replay(chosen)
    _check_steering(chosen)
    if chosen["diagnostics_out"]:
        check_persists("--diagnostics-out", chosen["diagnostics_out"])
    if not chosen["endpoints"] and not chosen["dry_run"] and chosen["replay"] != "strict":
        raise UsageError(
            "TAGURU_EXTRACT_URL is not set — export your OpenAI-compatible endpoint, e.g. "
            "TAGURU_EXTRACT_URL=http://127.0.0.1:8000/v1/chat/completions"
        )
    return Settings.of(
        **chosen,
        storage_env=storage_environment(environ),
        notes=unknown_variables(environ, config, config_path),
    )


def _resolve(
    declared: Declared,
    flags: Mapping[str, Any],
    environ: Mapping[str, str],
    config: Mapping[str, str],
) -> Any:
    knob = declared.knob
    raw = flags.get(declared.name)
    where = knob.flag or declared.name
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


def unknown_variables(
    environ: Mapping[str, str], config: Mapping[str, str], config_path: str | None
) -> tuple[str, ...]:
    """A line per variable of ours that nothing reads — a misspelling silently ignored
    (TAGURU_EXTRACT_REDACTT=1) would run without what its author asked for."""
    known = sorted(known_variables())
    notes = []
    sources = [("the environment", environ)]
    if config_path:
        sources.append((f"--config {config_path}", config))
    for where, keys in sources:
        for key in sorted(keys):
            if key.startswith(OWN_PREFIXES) and key not in known:
                near = difflib.get_close_matches(key, known, n=1)
                hint = f" — did you mean {near[0]}?" if near else " — it is ignored"
                notes.append(f"{key} (in {where}) is not a variable taguru-ray reads{hint}")
    return tuple(notes)


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
