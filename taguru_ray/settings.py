"""Flags, ``TAGURU_EXTRACT_*`` variables and ``--config`` resolved into one Settings.

Precedence is flag over environment over ``--config FILE`` over the default,
for every knob (seed 000). Each knob is declared once in `KNOBS` with the flag
and the variable that set it and the parser both share. The compute inputs —
what the manifest and the checkpoints compare — are derived from a Settings in
`compute_inputs`, the one place that knows them.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.items import MAX_DESCRIPTION_BYTES, MAX_NAME_BYTES, MAX_TAG_BYTES, MAX_TAGS
from taguru_ray.contract.manifest_entry import MANIFEST_FIELDS
from taguru_ray.errors import UsageError
from taguru_ray.pipeline.plan import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES
from taguru_ray.pipeline.steps import STEP_FOLD

# Our prompts are our own words, so our prompt version must never equal one the
# reference writes: a manifest entry from `taguru extract` is not our answer.
# 102: the --schema block joined the prompt (seed 000: the version moves with it).
PROMPT_VERSION = 102

# Seed 002: carryover is on by default (it costs no model call; the naming drift it
# prevents costs one). It orders a segment's chunks, so --parallel then waits on it.
DEFAULT_CARRYOVER = 32
# The most of a bad answer a corrective turn replays (seed 000 replays it whole when
# unset): far above a normal answer, so only a runaway one is cut — it would otherwise
# be paid for again as input on every corrective turn.
DEFAULT_CORRECTIVE_CONTEXT_BYTES = 256 * 1024

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"needs an integer of at least {minimum}, got {text!r}") from None
        if value < minimum:
            raise ValueError(f"needs an integer of at least {minimum}, got {value}")
        return value

    return parse


def _int_between(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"takes {low}..={high}, got {text!r}") from None
        if not low <= value <= high:
            raise ValueError(f"takes {low}..={high}, got {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"needs a number of seconds (0 = unlimited), got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"needs a finite number of seconds of at least 0, got {text!r}")
    return value


def _boolish(text: str) -> bool:
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"takes 1/true/yes/on or 0/false/no/off, got {text!r}")


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"takes one of {', '.join(choices)}, got {text!r}")
        return text

    return parse


def _text(text: str) -> str:
    return text


def _credential(text: str) -> str | None:
    """A key as pasted: surrounding whitespace (a trailing newline from a file) dropped;
    a line break or control character inside would split the request's header, so it
    is refused — without ever echoing the value."""
    key = text.strip()
    if any(char.isspace() or not char.isprintable() for char in key):
        raise ValueError(
            "holds a line break, a space or a control character inside (not shown) — set it "
            "to the key alone"
        )
    return key or None


def _passphrase(text: str) -> str | None:
    """A secret phrase (spaces allowed), trimmed; a control character inside is refused,
    never echoed."""
    phrase = text.strip()
    if any(not char.isprintable() for char in phrase):
        raise ValueError("holds a control character (not shown) — set it to the phrase alone")
    return phrase or None


def _inflight(text: str) -> int | str:
    if text.strip() == "auto":
        return "auto"
    try:
        return _int_at_least(1)(text)
    except ValueError:
        raise ValueError(f"takes a whole number of at least 1 or auto, got {text!r}") from None


def _progress(text: str) -> str:
    word = text.strip().lower()
    if word in ("auto", "bar", "lines", "off"):
        return word
    raise ValueError(f"takes auto, bar, lines or off, got {text!r}")


def _step(text: str) -> str:
    from taguru_ray.pipeline.steps import STEP_NAMES

    if text not in STEP_NAMES:
        raise ValueError(f"takes one of: {', '.join(STEP_NAMES)}; got {text!r}")
    return text


def _trace_attempts(text: str) -> bool:
    # Seed 000: off/0/false/no disables the attempts log; anything else keeps it.
    return text.strip().lower() not in {"off", "0", "false", "no"}


def _redact(text: str) -> str:
    word = text.strip().lower()
    if word in FALSE_WORDS:
        return ""
    if word in TRUE_WORDS or word == "both":
        return "both"
    if word in {"secrets", "pii"}:
        return word
    raise ValueError(f"takes 1/true (both groups), secrets, pii or 0/false, got {text!r}")


@dataclass(frozen=True)
class Knob:
    """One setting: where it may come from and how it parses."""

    field: str
    flag: str | None
    env: str | None
    parse: Callable[[str], Any]
    default: Any


# One line per knob: field, flag, variable, parser, default.
# fmt: off
KNOBS: tuple[Knob, ...] = (
    Knob("url", None, "TAGURU_EXTRACT_URL", _text, None),
    Knob("model", None, "TAGURU_EXTRACT_MODEL", _text, None),
    Knob("api_key", None, "TAGURU_EXTRACT_API_KEY", _credential, None),
    Knob("timeout_secs", None, "TAGURU_EXTRACT_TIMEOUT_SECS", _seconds, 300.0),
    Knob("parallel", "--parallel", "TAGURU_EXTRACT_PARALLEL", _int_at_least(1), 1),
    Knob("max_attempts", None, "TAGURU_EXTRACT_MAX_ATTEMPTS", _int_between(1, 10), 2),
    Knob("corrective_context_bytes", None, "TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES",
         _int_at_least(0), DEFAULT_CORRECTIVE_CONTEXT_BYTES),
    Knob("chunk_bytes", "--chunk-bytes", "TAGURU_EXTRACT_CHUNK_BYTES",
         _int_at_least(MIN_CHUNK_BYTES), DEFAULT_CHUNK_BYTES),
    Knob("trace_attempts", None, "TAGURU_EXTRACT_TRACE_ATTEMPTS", _trace_attempts, True),
    Knob("diagnostics_out", "--diagnostics-out", "TAGURU_EXTRACT_DIAGNOSTICS", _text, None),
    Knob("diagnostics_raw_bytes", None, "TAGURU_EXTRACT_DIAGNOSTICS_RAW_BYTES",
         _int_at_least(0), 0),
    Knob("fact_budget", "--fact-budget", "TAGURU_EXTRACT_FACT_BUDGET", _int_at_least(0), 0),
    Knob("questions", "--questions", None, _int_between(1, 8), 0),
    Knob("structured_output", "--structured-output", "TAGURU_EXTRACT_STRUCTURED_OUTPUT",
         _choice("auto", "json-schema", "json-object", "off"), "off"),
    Knob("max_output_tokens", "--max-output-tokens", "TAGURU_EXTRACT_MAX_OUTPUT_TOKENS",
         _int_at_least(1), 0),
    Knob("escalation_factor", None, "TAGURU_EXTRACT_ESCALATION_FACTOR", _int_at_least(0), 2),
    Knob("runaway_ratio", None, "TAGURU_EXTRACT_RUNAWAY_RATIO", _int_at_least(0), 8),
    Knob("chunk_context", "--chunk-context", "TAGURU_EXTRACT_CHUNK_CONTEXT",
         _choice("off", "structure", "overview", "ingested"), "off"),
    Knob("lossy", "--lossy", "TAGURU_EXTRACT_LOSSY", _boolish, False),
    Knob("carryover", "--carryover", "TAGURU_EXTRACT_CARRYOVER", _int_at_least(0),
         DEFAULT_CARRYOVER),
    Knob("gleanings", "--gleanings", "TAGURU_EXTRACT_GLEANINGS", _int_at_least(0), 0),
    Knob("candidates", "--candidates", "TAGURU_EXTRACT_CANDIDATES", _boolish, False),
    Knob("redact", "--redact", "TAGURU_EXTRACT_REDACT", _redact, ""),
    Knob("redact_rules", "--redact-rules", "TAGURU_EXTRACT_REDACT_RULES", _text, None),
    Knob("redact_key", None, "TAGURU_EXTRACT_REDACT_KEY", _passphrase, None),
    Knob("vocabulary", "--vocabulary", "TAGURU_EXTRACT_VOCABULARY", _text, None),
    Knob("coverage", "--coverage", "TAGURU_EXTRACT_COVERAGE", _boolish, False),
    Knob("schema", "--schema", "TAGURU_EXTRACT_SCHEMA", _text, None),
    Knob("replay", "--replay", "TAGURU_EXTRACT_REPLAY", _choice("auto", "strict", "off"), "off"),
    Knob("replay_from", "--replay-from", "TAGURU_EXTRACT_REPLAY_FROM", _text, None),
    Knob("resume_from", "--resume-from", None, _step, None),
    # Ray and scale.
    Knob("segment_window", "--segment-window", "TAGURU_RAY_SEGMENT_WINDOW", _int_at_least(1), 8),
    Knob("max_inflight", "--max-inflight", "TAGURU_RAY_MAX_INFLIGHT", _inflight, 32),
    Knob("rpm", "--rpm", "TAGURU_RAY_RPM", _int_at_least(1), 0),
    Knob("tpm", "--tpm", "TAGURU_RAY_TPM", _int_at_least(1), 0),
    Knob("progress", "--progress", "TAGURU_RAY_PROGRESS", _progress, "auto"),
    Knob("workers", "--workers", "TAGURU_RAY_WORKERS", _int_at_least(1), 2),
    Knob("worker_resource", "--worker-resource", "TAGURU_RAY_WORKER_RESOURCE", _text, None),
    Knob("worker_hang_secs", None, "TAGURU_RAY_WORKER_HANG_SECS", _seconds, 120.0),
    # "arrival" is the benchmark's baseline only (ADR 0019): segments judged as their
    # answers land, against whatever settled; the folder may then not import whole.
    Knob("commit_order", None, "TAGURU_RAY_COMMIT_ORDER", _choice("name", "arrival"), "name"),
    Knob("address", "--address", "RAY_ADDRESS", _text, None),
)
# fmt: on
KNOB_BY_FIELD = {knob.field: knob for knob in KNOBS}
# Variables read outside the knob table: the config file's own, and two that tests and
# operators tune (the S3 lease's length, the progress line's interval).
OTHER_VARIABLES = ("TAGURU_CONFIG", "TAGURU_RAY_LEASE_SECONDS", "TAGURU_RAY_PROGRESS_SECONDS")
KNOWN_VARIABLES = frozenset({knob.env for knob in KNOBS if knob.env} | set(OTHER_VARIABLES))
# taguru-ray's own namespaces: another TAGURU_* variable may belong to another taguru tool.
OWN_PREFIXES = ("TAGURU_EXTRACT_", "TAGURU_RAY_")


def unknown_variables(
    environ: Mapping[str, str], config: Mapping[str, str], config_path: str | None
) -> tuple[str, ...]:
    """A line per variable of ours that nothing reads — a misspelling silently ignored
    (TAGURU_EXTRACT_REDACTT=1) would run without what its author asked for."""
    notes = []
    sources = [("the environment", environ)]
    if config_path:
        sources.append((f"--config {config_path}", config))
    for where, keys in sources:
        for key in sorted(keys):
            if key.startswith(OWN_PREFIXES) and key not in KNOWN_VARIABLES:
                near = difflib.get_close_matches(key, sorted(KNOWN_VARIABLES), n=1)
                hint = f" — did you mean {near[0]}?" if near else " — it is ignored"
                notes.append(f"{key} (in {where}) is not a variable taguru-ray reads{hint}")
    return tuple(notes)


@dataclass(frozen=True)
class Settings:
    """Everything one `extract` invocation settled on. Immutable; safe to ship to workers."""

    paths: tuple[str, ...]
    out: str
    context: str
    model: str
    url: str | None
    api_key: str | None = field(default=None, repr=False)
    redact_key: str | None = field(default=None, repr=False)  # see store/redact_key.py
    name: str | None = None
    description: str | None = None
    source_id: str | None = None
    date: int | None = None
    tags: tuple[str, ...] = ()
    no_passage: bool = False
    dry_run: bool = False
    force: bool = False
    timeout_secs: float = 300.0
    parallel: int = 1
    max_attempts: int = 2
    corrective_context_bytes: int | None = DEFAULT_CORRECTIVE_CONTEXT_BYTES
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    trace_attempts: bool = True
    diagnostics_out: str | None = None
    diagnostics_raw_bytes: int = 0
    fact_budget: int = 0
    questions: int = 0
    structured_output: str = "off"
    max_output_tokens: int = 0
    escalation_factor: int = 2
    runaway_ratio: int = 8
    chunk_context: str = "off"
    lossy: bool = False
    candidates: bool = False
    redact: str = ""
    redact_rules: str | None = None
    vocabulary: str | None = None
    coverage: bool = False
    schema: str | None = None
    replay: str = "off"
    replay_from: str | None = None
    resume_from: str | None = None

    @property
    def replay_mode(self) -> str:
        """off, auto or strict: --replay as given, or what --resume-from STEP folds onto."""
        if self.resume_from is not None:
            return STEP_FOLD[self.resume_from][0]
        return self.replay

    @property
    def pin_system(self) -> bool:
        """--resume-from prompt replays the calls but never the conversation's system turn."""
        return self.resume_from != "prompt"

    @property
    def bypasses_store(self) -> bool:
        """Replay and --resume-from read neither the manifest nor the checkpoints."""
        return self.replay != "off" or self.resume_from is not None

    def replay_dir(self) -> str:
        if self.replay_from:
            return self.replay_from
        return self.out.rstrip("/") + "/.extract-trace"

    segment_window: int = 8
    carryover: int = DEFAULT_CARRYOVER  # seed 002: names from earlier chunks offered to later
    gleanings: int = 0  # seed 002: extra "what did you miss" passes per chunk
    max_inflight: int | str = 32  # or "auto": adaptive concurrency
    rpm: int = 0
    tpm: int = 0
    progress: str = "auto"  # auto: a bar on a terminal, periodic lines otherwise
    endpoints: tuple[str, ...] = ()
    workers: int = 2
    worker_resource: str | None = None  # a custom resource only worker nodes declare
    worker_hang_secs: float = 120.0  # a worker silent this long is restarted (0: never)
    commit_order: str = "name"  # ADR 0019; "arrival" only as the benchmark's baseline
    address: str | None = None
    # What fsspec/s3fs read from the environment (credentials, endpoint, region),
    # carried to the workers, which may run on other nodes. Never printed.
    storage_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    notes: tuple[str, ...] = ()  # said once on stderr before the run (unknown variables)
    # What --vocabulary/--schema hash to, filled once the driver has read them
    # (store/run_inputs.py): the fingerprints bind the content, never the path.
    schema_digest: str = ""
    vocabulary_digest: str = ""
    ingested_digest: str = ""  # --chunk-context ingested: the offered relations
    redaction_input: str = ""  # --redact: the rule set's version (+ the rules file's sha256)

    def redacted_repr(self) -> str:
        """For logs: every field but the key (which `repr` already leaves out)."""
        return repr(self)


def read_config_file(path: str) -> dict[str, str]:
    """Read ``KEY=VALUE`` lines (``#`` comments, blank lines, optional ``export``, quotes)."""
    from taguru_ray.store.inputs import read_regular  # the one reader of a user's file

    try:
        lines = read_regular(path).decode("utf-8").splitlines()
    except OSError as error:
        raise UsageError(
            f"--config {path}: cannot read it ({error.strerror or error}) — give a KEY=VALUE file"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text") from None
    values: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            # The line itself is never echoed: a malformed one may well hold a key.
            raise UsageError(
                f"--config {path}: line {number}: expected KEY=VALUE (the line is not shown: "
                "it may hold a secret)"
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def parse_date(text: str) -> int:
    """``YYYY-MM-DD`` (UTC midnight) or positive epoch-second digits."""
    if text.isdigit():
        seconds = int(text)
        if seconds > 0:
            return seconds
        raise ValueError("takes YYYY-MM-DD (UTC midnight) or positive epoch seconds")
    try:
        day = _dt.date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        day = None
    if day is None:
        raise ValueError("takes YYYY-MM-DD (UTC midnight) or positive epoch seconds")
    seconds = int(_dt.datetime(day.year, day.month, day.day, tzinfo=_dt.UTC).timestamp())
    if seconds <= 0:
        raise ValueError("takes a date after 1970-01-01 or positive epoch seconds")
    return seconds


def resolve_settings(flags: Mapping[str, Any], environ: Mapping[str, str]) -> Settings:
    """Merge parsed flags (None = not given), the environment and ``--config``.

    `flags` holds the raw strings argparse collected (booleans for switch
    flags), keyed by Settings field, plus `paths`, `out`, `context`, `name`,
    `description`, `source_id`, `date`, `tags`, `no_passage`, `dry_run`,
    `force` and `config`.
    """
    config_path = flags.get("config") or environ.get("TAGURU_CONFIG")
    config = read_config_file(config_path) if config_path else {}
    values: dict[str, Any] = {}
    for knob in KNOBS:
        values[knob.field] = _resolve_knob(knob, flags, environ, config)
    _check_source_flags(flags)
    if not values["model"]:
        raise UsageError(
            "TAGURU_EXTRACT_MODEL is not set — export the model name your endpoint serves "
            "(it is a compute input the manifest records)"
        )
    endpoints = tuple(flags.get("endpoints") or ()) or ((values["url"],) if values["url"] else ())
    _check_replay(values)
    _check_steering(values)
    if values["diagnostics_out"]:
        _check_persists("--diagnostics-out", values["diagnostics_out"])
    if not endpoints and not flags.get("dry_run") and values["replay"] != "strict":
        raise UsageError(
            "TAGURU_EXTRACT_URL is not set — export your OpenAI-compatible endpoint, e.g. "
            "TAGURU_EXTRACT_URL=http://127.0.0.1:8000/v1/chat/completions"
        )
    return Settings(
        paths=tuple(flags["paths"]),
        out=flags["out"],
        context=flags["context"],
        name=flags.get("name"),
        description=flags.get("description"),
        source_id=flags.get("source_id"),
        date=parse_date(flags["date"]) if flags.get("date") else None,
        tags=tuple(dict.fromkeys(flags.get("tags") or ())),
        no_passage=bool(flags.get("no_passage")),
        dry_run=bool(flags.get("dry_run")),
        force=bool(flags.get("force")),
        storage_env=storage_environment(environ),
        endpoints=endpoints,
        notes=unknown_variables(environ, config, config_path),
        **values,
    )


STORAGE_ENV_PREFIXES = ("AWS_", "FSSPEC_", "BOTO_", "S3_")


def storage_environment(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables fsspec and s3fs configure themselves from, sorted."""
    return tuple(sorted((k, v) for k, v in environ.items() if k.startswith(STORAGE_ENV_PREFIXES)))


def _resolve_knob(
    knob: Knob, flags: Mapping[str, Any], environ: Mapping[str, str], config: Mapping[str, str]
) -> Any:
    raw = flags.get(knob.field)
    where = knob.flag
    if raw is None and knob.env:
        if knob.env in environ:
            raw, where = environ[knob.env], knob.env
        elif knob.env in config:
            raw, where = config[knob.env], f"{knob.env} (from --config)"
    if raw is None:
        return knob.default
    if isinstance(raw, bool):
        value: Any = raw
    else:
        try:
            value = knob.parse(raw)
        except ValueError as error:
            raise UsageError(f"{where}: {error}") from None
    return value


def _check_replay(values: Mapping[str, Any]) -> None:
    """--replay and --resume-from (ADR 0031, #822): one or the other, and strict is offline."""
    if values["resume_from"] is not None and values["replay"] != "off":
        raise UsageError(
            "--resume-from and --replay cannot both be given — --resume-from already selects "
            "a --replay mode"
        )
    if values["replay"] == "strict" and values["structured_output"] == "auto":
        raise UsageError(
            "--replay strict with --structured-output auto: the auto probe needs a live call — "
            "pin the rung the recording used (its attempts' `rung` field names it)"
        )


def _check_steering(values: Mapping[str, Any]) -> None:
    if values["redact_rules"] and not values["redact"]:
        raise UsageError(
            "--redact-rules needs --redact: with redaction off the rules would run nothing — "
            "add --redact (or TAGURU_EXTRACT_REDACT=1)"
        )
    if values["chunk_context"] == "ingested" and not values["vocabulary"]:
        raise UsageError(
            "--chunk-context ingested needs --vocabulary: what the context holds is read from "
            "its export — add --vocabulary PATH"
        )


# Stores that end with the process that opened them: a run "written" there is lost (and
# Ray's workers, other processes, never see it at all).
TRANSIENT_PROTOCOLS = frozenset({"memory"})


def _check_persists(flag: str, url: str) -> None:
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
    _check_persists("--out", flags["out"])
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
            parse_date(flags["date"])
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


def description_input(settings: Settings) -> str:
    """The manifest's `description` field: --name and --description folded into one string.

    Empty without --name, so entries written by default runs keep matching.
    """
    if settings.name is None:
        return ""
    return json.dumps([settings.name, settings.description or ""], ensure_ascii=False)


def checkpoint_fingerprint(settings: Settings, segment_sha256: str) -> dict[str, Any]:
    """The compute inputs a checkpoint file is bound to (CONTRACT section 3)."""
    return {
        "sha256": segment_sha256,
        "model": settings.model,
        "prompt_version": PROMPT_VERSION,
        "context": settings.context,
        "questions_n": settings.questions,
        "no_passage": settings.no_passage,
        "description": description_input(settings),
        "fact_budget": settings.fact_budget,
        "structured_output": ""
        if settings.structured_output == "off"
        else settings.structured_output,
        "max_output_tokens": settings.max_output_tokens,
        "escalation_factor": _escalation_input(settings),
        "runaway_ratio": "" if settings.runaway_ratio == 8 else str(settings.runaway_ratio),
        "chunk_bytes": ""
        if settings.chunk_bytes == DEFAULT_CHUNK_BYTES
        else str(settings.chunk_bytes),
        "chunk_context": _chunk_context_input(settings),
        "lossy": settings.lossy,
        "schema_digest": settings.schema_digest,
        "candidates": "seg1" if settings.candidates else "",
        "redaction": settings.redaction_input,
        "vocabulary_digest": settings.vocabulary_digest,
        # taguru-ray's own inputs (seed 002): present only off their defaults, so every
        # entry a default run writes stays the reference's, field for field (and entries
        # written before the carryover default moved to seed 002's 32 still match).
        **({"carryover": settings.carryover} if settings.carryover != DEFAULT_CARRYOVER else {}),
        **({"gleanings": settings.gleanings} if settings.gleanings else {}),
    }


def _chunk_context_input(settings: Settings) -> str:
    if settings.chunk_context == "off":
        return ""
    if settings.chunk_context == "ingested":
        return f"ingested:{settings.ingested_digest}"
    return settings.chunk_context


def _escalation_input(settings: Settings) -> str:
    if not settings.max_output_tokens or settings.escalation_factor == 2:
        return ""
    return str(settings.escalation_factor)




def compute_inputs(
    settings: Settings, segment_sha256: str, written_id: str | None, output: str
) -> dict[str, Any]:
    """A manifest entry: the checkpoint fingerprint plus what names the written file."""
    fingerprint = checkpoint_fingerprint(settings, segment_sha256)
    fingerprint.update(
        source_id=written_id if settings.source_id is not None else "",
        date=settings.date or 0,
        tags=list(settings.tags),
        output=output,
    )
    return {key: fingerprint[key] for key in MANIFEST_FIELDS if key in fingerprint}


def settings_record_fields(settings: Settings) -> dict[str, Any]:
    """The attempts log's `settings` record body (a diagnostic snapshot, never a gate)."""
    fingerprint = checkpoint_fingerprint(settings, "")
    keys = (
        "prompt_version",
        "model",
        "questions_n",
        "fact_budget",
        "structured_output",
        "max_output_tokens",
        "chunk_bytes",
        "chunk_context",
        "lossy",
        "schema_digest",
        "candidates",
        "redaction",
        "vocabulary_digest",
    )
    return {key: fingerprint[key] for key in keys}
