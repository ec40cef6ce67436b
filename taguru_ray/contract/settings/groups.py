"""Every setting of `extract`, declared once, grouped by the part of the run that reads it.

        Knob(...)] = default`` (see `knob`): the
flag, the variable, the parser, the help and — for a compute input — the
manifest field it feeds. Nothing else in taguru-ray names a default, a flag
or a variable of these: the parser, ``--config``, the fingerprint, the
settings record and the README's table all read them from here. The groups
follow their consumers: the written file (`Source`), this invocation
(`Run`), reading a segment (`Reading`), the prompt (`Prompting`), the
answer ladder (`Ladder`), the endpoint (`Transport`), Ray (`Scale`) and the
records a run leaves (`Records`).

Its length (over 400 lines) is a table's: one declaration per setting, about
sixty, grouped by consumer; every other module reads them from here.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from taguru_ray.contract.settings import values
from taguru_ray.contract.settings.knob import Group, Input, Knob
from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES
from taguru_ray.contract.steps import STEP_FOLD

DEFAULT_ESCALATION_FACTOR = 2
DEFAULT_RUNAWAY_RATIO = 8

# Seed 002: carryover is on by default (it costs no model call; the naming drift it
# prevents costs one). It orders a segment's chunks, so --parallel then waits on it.
DEFAULT_CARRYOVER = 32
# An object store's lock lease: long enough to ride out a slow renewal, short enough that
# a dead holder's --out is taken over within a minute (ADR 0009).
DEFAULT_LEASE_SECONDS = 60.0
# The most of a bad answer a corrective turn replays (seed 000 replays it whole when
# unset): far above a normal answer, so only a runaway one is cut — it would otherwise
# be paid for again as input on every corrective turn.
DEFAULT_CORRECTIVE_CONTEXT_BYTES = 256 * 1024
# `--max-inflight auto` climbs to at most this many completions per endpoint: one GPU
# server (vLLM on an H200) serves 64-256 sequences at once (ADR 0047). Unpinned, the
# segment window follows the in-flight ceiling, so the default run can fill it.
AUTO_CEILING_PER_ENDPOINT = 256
# A document's converter (ADR 0078): the longest a real one took here was the 2 415-page
# R reference manual, 3 s; its child's address space is capped, the 2 415 pages needed
# 150 MiB of it. Both leave a hundredfold room, and a runaway document is one line.
DEFAULT_CONVERT_TIMEOUT = 300.0
DEFAULT_CONVERT_MEMORY = 2048
MIN_CONVERT_MEMORY = 256


class Source(Group):
    """The segments, the folder and what each written source file says."""

    # fmt: off
    GROUP: ClassVar[str] = "source"

    paths: Annotated[
        tuple[str, ...],
        Knob("segment files, dataset shards (.parquet, .jsonl, .jsonl.gz, .csv), or folders "
             "and prefixes of either", metavar="PATH", form="positional",
             parse=values.location),
    ]
    recursive: Annotated[
        bool,
        Knob("read folders and object-store prefixes at every depth", flag="--recursive",
             form="switch"),
    ] = False
    text_column: Annotated[
        str,
        Knob("a dataset's column holding each row's text", flag="--text-column",
             metavar="NAME", parse=values.column),
    ] = "text"
    id_column: Annotated[
        str | None,
        Knob("a dataset's column holding each row's stable id (default: its position)",
             flag="--id-column", metavar="NAME", parse=values.column),
    ] = None
    out: Annotated[
        str,
        Knob("where source files and records go (a folder or fsspec URL)", flag="--out",
             metavar="DIR", parse=values.location),
    ]
    context: Annotated[
        str,
        Knob("target context, a lowercase UUID", flag="--context", metavar="ID",
             compute=Input("context")),
    ]
    name: Annotated[
        str | None,
        Knob("attach a create block naming the context", flag="--name",
             compute=Input("description", "description")),
    ] = None
    description: Annotated[
        str | None,
        Knob("the create block's description (needs --name)", flag="--description", metavar="TEXT",
             compute=Input("description", "description")),
    ] = None
    source_id: Annotated[
        str | None,
        Knob("write ID (or ID/<stem> for several segments) as the header's source",
             flag="--source-id", metavar="ID", compute=Input("source_id")),
    ] = None
    date: Annotated[
        int | None,
        Knob("YYYY-MM-DD or epoch seconds, on the passage", flag="--date", metavar="WHEN",
             parse=values.date, compute=Input("date", "date")),
    ] = None
    tags: Annotated[
        tuple[str, ...],
        Knob("tag the source (repeatable)", flag="--tag", metavar="TAG", form="repeat",
             compute=Input("tags", "tags"), shown="none"),
    ] = ()
    no_passage: Annotated[
        bool,
        Knob("omit the body text (the passage line)", flag="--no-passage", form="switch",
             compute=Input("no_passage")),
    ] = False


class Run(Group):
    """This invocation: where else settings come from, and what it may redo."""

    # fmt: off
    GROUP: ClassVar[str] = "run"

    config: Annotated[
        str | None,
        Knob("read settings from FILE: KEY=VALUE variables, or a .toml run file naming any "
             "setting (--print-config writes one); the environment beats it, a flag beats both",
             flag="--config", env="TAGURU_CONFIG", metavar="FILE", parse=values.location),
    ] = None
    dry_run: Annotated[
        bool,
        Knob("list what would extract or skip, and exit", flag="--dry-run", form="switch")
    ] = False
    force: Annotated[
        bool,
        Knob("re-extract segments the manifest calls unchanged", flag="--force", form="switch"),
    ] = False
    prune: Annotated[
        bool,
        Knob("retire segments the corpus no longer holds: their source files leave where import "
             "reads, their entries leave the manifest, and a record tells the next import to "
             "retract them", flag="--prune", form="switch"),
    ] = False


class Reading(Group):
    """How a segment is read and cut before any prompt: chunk size, redaction."""

    # fmt: off
    GROUP: ClassVar[str] = "input"

    chunk_bytes: Annotated[
        int,
        Knob(f"segment bytes per model call (at least {MIN_CHUNK_BYTES})", flag="--chunk-bytes",
             env="TAGURU_EXTRACT_CHUNK_BYTES", metavar="N",
             parse=values.int_at_least(MIN_CHUNK_BYTES),
             compute=Input("chunk_bytes", "chunk_bytes")),
    ] = DEFAULT_CHUNK_BYTES
    redact: Annotated[
        str,
        Knob("mask secrets and PII before any step reads a segment: alone both groups, or secrets, "
             "pii", flag="--redact", env="TAGURU_EXTRACT_REDACT", metavar="GROUP",
             parse=values.redact, form="optional", bare="both", takes=("secrets", "pii"),
             compute=Input("redaction", "redaction"), shown="off"),
    ] = ""
    redact_rules: Annotated[
        str | None,
        Knob("more redaction rules from FILE (needs --redact)", flag="--redact-rules",
             env="TAGURU_EXTRACT_REDACT_RULES", metavar="FILE", parse=values.location,
             compute=Input("redaction", "redaction")),
    ] = None
    redact_key: Annotated[
        str | None,
        Knob("the phrase keying redaction placeholders (kept outside --out; default: a key file in "
             "your config folder)", env="TAGURU_EXTRACT_REDACT_KEY", parse=values.passphrase,
             secret=True),
    ] = None
    convert_timeout: Annotated[
        float,
        Knob("seconds a document (PDF, DOCX, PPTX, HTML) may take to convert to text before "
             "it fails (0 = unlimited)", flag="--convert-timeout",
             env="TAGURU_RAY_CONVERT_TIMEOUT_SECS", metavar="S", parse=values.seconds),
    ] = DEFAULT_CONVERT_TIMEOUT
    convert_memory: Annotated[
        int,
        Knob("MiB of memory a document's converter may use before the document fails "
             f"(at least {MIN_CONVERT_MEMORY})", flag="--convert-memory",
             env="TAGURU_RAY_CONVERT_MEMORY_MB", metavar="MIB",
             parse=values.int_at_least(MIN_CONVERT_MEMORY)),
    ] = DEFAULT_CONVERT_MEMORY


class Prompting(Group):
    """What a chunk's prompt offers and asks beyond the chunk itself."""

    # fmt: off
    GROUP: ClassVar[str] = "prompt"

    questions: Annotated[
        int,
        Knob("ask for N questions each chunk answers (1..8)", flag="--questions", metavar="N",
             parse=values.int_between(1, 8), compute=Input("questions_n"), shown="none"),
    ] = 0
    fact_budget: Annotated[
        int,
        Knob("ask for at most N associations per chunk (0 = no cap)", flag="--fact-budget",
             env="TAGURU_EXTRACT_FACT_BUDGET", metavar="N", parse=values.int_at_least(0),
             compute=Input("fact_budget")),
    ] = 0
    chunk_context: Annotated[
        str,
        Knob("what a chunk sees of its segment: off, structure, overview, ingested",
             flag="--chunk-context", env="TAGURU_EXTRACT_CHUNK_CONTEXT", metavar="MODE",
             parse=values.choice("off", "structure", "overview", "ingested"),
             compute=Input("chunk_context", "chunk_context")),
    ] = "off"
    carryover: Annotated[
        int,
        Knob("offer each chunk the last N names earlier chunks settled on (0 = off; then "
             "--parallel applies)", flag="--carryover", env="TAGURU_EXTRACT_CARRYOVER", metavar="N",
             parse=values.int_at_least(0), compute=Input("carryover", own=True)),
    ] = DEFAULT_CARRYOVER
    vocabulary: Annotated[
        str | None,
        Knob("an export of the target context: its names offered, its spellings allowed",
             flag="--vocabulary", env="TAGURU_EXTRACT_VOCABULARY", metavar="PATH",
             parse=values.location, compute=Input("vocabulary_digest", "vocabulary")),
    ] = None
    schema_file: Annotated[
        str | None,
        Knob("the context's schema document: its types prompted, its rules checked",
             flag="--schema", env="TAGURU_EXTRACT_SCHEMA", metavar="FILE",
             parse=values.location, compute=Input("schema_digest", "schema")),
    ] = None
    candidates: Annotated[
        bool,
        Knob("offer the segment's own candidate names", flag="--candidates",
             env="TAGURU_EXTRACT_CANDIDATES", parse=values.boolish, form="switch",
             compute=Input("candidates", "candidates")),
    ] = False


class Ladder(Group):
    """How an answer is asked for, checked, corrected and extended."""

    # fmt: off
    GROUP: ClassVar[str] = "ladder"

    max_attempts: Annotated[
        int,
        Knob("attempts at a valid answer per chunk (1..10)", env="TAGURU_EXTRACT_MAX_ATTEMPTS",
             parse=values.int_between(1, 10)),
    ] = 2
    structured_output: Annotated[
        str,
        Knob("constrain the answer: off, json-object, json-schema, auto (probe and step down)",
             flag="--structured-output", env="TAGURU_EXTRACT_STRUCTURED_OUTPUT", metavar="MODE",
             parse=values.choice("auto", "json-schema", "json-object", "off"),
             compute=Input("structured_output", "structured_output")),
    ] = "off"
    max_output_tokens: Annotated[
        int,
        Knob("the answer budget, sent as max_tokens", flag="--max-output-tokens",
             env="TAGURU_EXTRACT_MAX_OUTPUT_TOKENS", metavar="N", parse=values.int_at_least(1),
             compute=Input("max_output_tokens"), shown="unset"),
    ] = 0
    escalation_factor: Annotated[
        int,
        Knob("the one escalated resend's budget, x the budget (0 = no cap)",
             env="TAGURU_EXTRACT_ESCALATION_FACTOR", parse=values.int_at_least(0),
             compute=Input("escalation_factor", "escalation")),
    ] = DEFAULT_ESCALATION_FACTOR
    runaway_ratio: Annotated[
        int,
        Knob("a cut-off answer this many times its piece is a runaway (0 = off)",
             env="TAGURU_EXTRACT_RUNAWAY_RATIO", parse=values.int_at_least(0),
             compute=Input("runaway_ratio", "runaway")),
    ] = DEFAULT_RUNAWAY_RATIO
    corrective_context_bytes: Annotated[
        int,
        Knob("cap the replay of a bad answer in a corrective turn (the seed replays it whole; 0 = "
             "omit it)", env="TAGURU_EXTRACT_CORRECTIVE_CONTEXT_BYTES",
             parse=values.int_at_least(0)),
    ] = DEFAULT_CORRECTIVE_CONTEXT_BYTES
    lossy: Annotated[
        bool,
        Knob("drop and count invalid items instead of correcting them", flag="--lossy",
             env="TAGURU_EXTRACT_LOSSY", parse=values.boolish, form="switch",
             compute=Input("lossy")),
    ] = False
    gleanings: Annotated[
        int,
        Knob("N more passes per chunk asking what the answer missed (0 = off)", flag="--gleanings",
             env="TAGURU_EXTRACT_GLEANINGS", metavar="N", parse=values.int_at_least(0),
             compute=Input("gleanings", own=True)),
    ] = 0


class Transport(Group):
    """The endpoint: where completions go, as which model, how many at once."""

    # fmt: off
    GROUP: ClassVar[str] = "transport"

    url: Annotated[
        str | None,
        Knob("the OpenAI-compatible /chat/completions endpoint", env="TAGURU_EXTRACT_URL",
             parse=values.endpoint, shown="required"),
    ] = None
    model: Annotated[
        str,
        Knob("the model name the endpoint serves", env="TAGURU_EXTRACT_MODEL",
             compute=Input("model")),
    ]
    api_key: Annotated[
        str | None,
        Knob("the Bearer credential (an api-key header on Azure); never written anywhere",
             env="TAGURU_EXTRACT_API_KEY", parse=values.credential, secret=True),
    ] = None
    api_key_header: Annotated[
        str,
        Knob("how the key is sent: bearer (Authorization), api-key (Azure OpenAI, also behind "
             "a gateway of your own), auto (api-key on *.openai.azure.com hosts)",
             flag="--api-key-header", env="TAGURU_RAY_API_KEY_HEADER", metavar="STYLE",
             parse=values.choice("auto", "bearer", "api-key")),
    ] = "auto"
    timeout_secs: Annotated[
        float,
        Knob("time budget per completion (0 = unlimited)", env="TAGURU_EXTRACT_TIMEOUT_SECS",
             parse=values.seconds),
    ] = 300.0
    endpoints: Annotated[
        tuple[str, ...],
        Knob("an endpoint (repeatable: balanced by least in flight; one that keeps failing is "
             "rested); replaces TAGURU_EXTRACT_URL", flag="--endpoint", metavar="URL",
             parse=values.endpoint, form="repeat", shown="the URL"),
    ] = ()
    max_inflight: Annotated[
        int | str,
        Knob("completions in flight across the run; auto climbs while completions per second rise "
             f"and holds where they stop, at most {AUTO_CEILING_PER_ENDPOINT} per endpoint",
             flag="--max-inflight", env="TAGURU_RAY_MAX_INFLIGHT", metavar="N|auto",
             parse=values.inflight),
    ] = "auto"
    rpm: Annotated[
        int,
        Knob("a ceiling of requests per sliding minute", flag="--rpm", env="TAGURU_RAY_RPM",
             metavar="N", parse=values.int_at_least(1), shown="none"),
    ] = 0
    tpm: Annotated[
        int,
        Knob("a ceiling of estimated tokens per sliding minute", flag="--tpm", env="TAGURU_RAY_TPM",
             metavar="N", parse=values.int_at_least(1), shown="none"),
    ] = 0
    batch_api: Annotated[
        str | None,
        Knob("send the completions through a provider's batch API, in rounds, at its batch "
             "price (openai: /v1/batches, anthropic: /v1/messages/batches); answers take up to "
             "24 h a round, and a rerun collects batches in flight (ADR 0068)",
             flag="--batch-api", env="TAGURU_RAY_BATCH_API", metavar="API",
             parse=values.choice("openai", "anthropic"), shown="off"),
    ] = None
    batch_poll_secs: Annotated[
        float,
        Knob("the first wait between polls of a batch in flight; it doubles up to 10 minutes",
             flag="--batch-poll-secs", env="TAGURU_RAY_BATCH_POLL_SECS", metavar="S",
             parse=values.seconds),
    ] = 30.0


class Serving(Group):
    """The model's own replicas: a server the run starts on the cluster's GPUs (ADR 0080)."""

    # fmt: off
    GROUP: ClassVar[str] = "serving"

    engine: Annotated[
        str | None,
        Knob("start the model's own OpenAI-compatible replicas on the cluster instead of "
             "calling an endpoint: vllm, sglang, simulate (the bundled simulator, no GPU) or "
             "command (--engine-command)", flag="--engine", env="TAGURU_RAY_ENGINE",
             metavar="ENGINE", parse=values.choice("vllm", "sglang", "simulate", "command"),
             shown="off"),
    ] = None
    engine_replicas: Annotated[
        int,
        Knob("replicas of the model, each an endpoint of the run; a lost one is restarted",
             flag="--engine-replicas", env="TAGURU_RAY_ENGINE_REPLICAS", metavar="N",
             parse=values.int_at_least(1)),
    ] = 1
    engine_gpus: Annotated[
        int,
        Knob("GPUs each replica reserves, on one node (tensor parallel; 0 = a CPU engine)",
             flag="--engine-gpus", env="TAGURU_RAY_ENGINE_GPUS", metavar="G",
             parse=values.int_at_least(0)),
    ] = 1
    engine_accelerator: Annotated[
        str | None,
        Knob("place replicas only on nodes with this Ray accelerator type (H100, A10G, L4, …)",
             flag="--engine-accelerator", env="TAGURU_RAY_ENGINE_ACCELERATOR", metavar="TYPE",
             parse=values.accelerator, shown="any"),
    ] = None
    engine_args: Annotated[
        str,
        Knob("more words for the server's command line, as a shell splits them (one starting "
             "with - needs --engine-args=…)", flag="--engine-args",
             env="TAGURU_RAY_ENGINE_ARGS", metavar="ARGS", parse=values.engine_args,
             shown="none"),
    ] = ""
    engine_command: Annotated[
        str | None,
        Knob("the server's command line for --engine command; {port} (required), {host} and "
             "{model} are filled in", flag="--engine-command", env="TAGURU_RAY_ENGINE_COMMAND",
             metavar="TEMPLATE", parse=values.engine_command),
    ] = None
    engine_start_secs: Annotated[
        float,
        Knob("a replica that does not answer its health check this long after it started "
             "(weights downloaded and loaded) fails the run", env="TAGURU_RAY_ENGINE_START_SECS",
             parse=values.positive_seconds),
    ] = 1800.0


class Scale(Group):
    """Ray: the cluster, the workers, how many segments and chunks run at once."""

    # fmt: off
    GROUP: ClassVar[str] = "scale"

    address: Annotated[
        str | None,
        Knob("a Ray cluster to join", flag="--address", env="RAY_ADDRESS", metavar="HOST:PORT",
             shown="start a local one"),
    ] = None
    workers: Annotated[
        int,
        Knob("segment worker actors (at most one per segment)", flag="--workers",
             env="TAGURU_RAY_WORKERS", metavar="N", parse=values.int_at_least(1)),
    ] = 2
    worker_resource: Annotated[
        str | None,
        Knob("place segment workers only on nodes declaring this custom resource",
             flag="--worker-resource", env="TAGURU_RAY_WORKER_RESOURCE", metavar="NAME"),
    ] = None
    segment_window: Annotated[
        int | None,
        Knob("segment i's prompt offers the labels of segments 0..i-W; up to W segments extract at "
             "once (1 = sequential; unset: the in-flight ceiling, N for --max-inflight N, "
             f"{AUTO_CEILING_PER_ENDPOINT} per endpoint under auto)", flag="--segment-window",
             env="TAGURU_RAY_SEGMENT_WINDOW", metavar="W", parse=values.int_at_least(1),
             shown="the in-flight ceiling"),
    ] = None
    parallel: Annotated[
        int,
        Knob("chunk completions at once within a segment (with --carryover 0)", flag="--parallel",
             env="TAGURU_EXTRACT_PARALLEL", metavar="N", parse=values.int_at_least(1)),
    ] = 1
    worker_hang_secs: Annotated[
        float,
        Knob("a worker silent this long while it holds segments is restarted (0 = never)",
             env="TAGURU_RAY_WORKER_HANG_SECS", parse=values.seconds),
    ] = 120.0
    lease_seconds: Annotated[
        float,
        Knob("the object-store lock's lease, renewed every quarter of it",
             env="TAGURU_RAY_LEASE_SECONDS", parse=values.positive_seconds),
    ] = DEFAULT_LEASE_SECONDS
    # "arrival" is the benchmark's baseline only (ADR 0019): segments judged as their
    # answers land, against whatever settled; the folder may then not import whole.
    commit_order: Annotated[
        str,
        Knob("name (the folder imports whole) or arrival (the benchmark's baseline only)",
             env="TAGURU_RAY_COMMIT_ORDER", parse=values.choice("name", "arrival")),
    ] = "name"


class Records(Group):
    """What a run leaves besides source files, and what it may answer from."""

    # fmt: off
    GROUP: ClassVar[str] = "records"

    trace_attempts: Annotated[
        bool,
        Knob("off disables the attempts log", env="TAGURU_EXTRACT_TRACE_ATTEMPTS",
             parse=values.trace_attempts),
    ] = True
    diagnostics_out: Annotated[
        str | None,
        Knob("write a JSONL sidecar of run/chunk/attempt/segment records", flag="--diagnostics-out",
             env="TAGURU_EXTRACT_DIAGNOSTICS", metavar="FILE", parse=values.location),
    ] = None
    diagnostics_raw_bytes: Annotated[
        int,
        Knob("attach the raw answer, capped at N bytes, to sidecar attempt records",
             env="TAGURU_EXTRACT_DIAGNOSTICS_RAW_BYTES", parse=values.int_at_least(0)),
    ] = 0
    coverage: Annotated[
        bool,
        Knob("report the sentences no item covers", flag="--coverage",
             env="TAGURU_EXTRACT_COVERAGE", parse=values.boolish, form="switch"),
    ] = False
    replay: Annotated[
        str,
        Knob("answer from the attempts log first: auto (then the model), strict (offline)",
             flag="--replay", env="TAGURU_EXTRACT_REPLAY", metavar="MODE",
             parse=values.choice("auto", "strict", "off")),
    ] = "off"
    replay_from: Annotated[
        str | None,
        Knob("the trace folder replay reads (default: OUT/.extract-trace)", flag="--replay-from",
             env="TAGURU_EXTRACT_REPLAY_FROM", metavar="DIR", parse=values.location),
    ] = None
    resume_from: Annotated[
        str | None,
        Knob("redo segments, satisfying the steps before STEP from the attempts log",
             flag="--resume-from", metavar="STEP", parse=values.step),
    ] = None
    progress: Annotated[
        str,
        Knob("auto (a bar on a terminal, plain lines otherwise), bar, lines", flag="--progress",
             env="TAGURU_RAY_PROGRESS", metavar="MODE", parse=values.progress, form="optional",
             bare="bar", takes=("auto", "bar", "lines", "off"), negation="--no-progress",
             negated="off"),
    ] = "auto"
    progress_seconds: Annotated[
        float | None,
        Knob("seconds between progress updates (default 1 for the bar, 15 for lines)",
             env="TAGURU_RAY_PROGRESS_SECONDS", parse=values.positive_seconds, shown="1 / 15"),
    ] = None

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


class Spending(Group):
    """What completions cost, and what this invocation may spend."""

    # fmt: off
    GROUP: ClassVar[str] = "spending"

    prices: Annotated[
        str | None,
        Knob('dollars per 1M tokens by model, {"<model>": {"input": $, "output": $}}, instead of '
             "the bundled table of hosted models' list prices", flag="--prices",
             env="TAGURU_RAY_PRICES", metavar="FILE", shown="bundled", parse=values.location),
    ] = None
    price_per_hour: Annotated[
        float | None,
        Knob("dollars per hour of the GPUs behind a self-hosted endpoint: cost by time, not "
             "tokens", flag="--price-per-hour", env="TAGURU_RAY_PRICE_PER_HOUR", metavar="USD",
             parse=values.dollars, shown="none"),
    ] = None
    budget_usd: Annotated[
        float | None,
        Knob("stop before a completion would take this run's cost past USD (resumable; needs a "
             "price)", flag="--budget-usd", env="TAGURU_RAY_BUDGET_USD", metavar="USD",
             parse=values.dollars, shown="none"),
    ] = None
    budget_tokens: Annotated[
        int | None,
        Knob("stop before a completion would take this run's tokens past N (resumable)",
             flag="--budget-tokens", env="TAGURU_RAY_BUDGET_TOKENS", metavar="N",
             parse=values.int_at_least(1), shown="none"),
    ] = None


# What `taguru-ray extract --help` and the README call each group.
TITLES: dict[str, str] = {
    "source": "segments and source files",
    "run": "this invocation",
    "input": "reading a segment",
    "prompt": "the prompt",
    "ladder": "the answer ladder",
    "transport": "the endpoint",
    "serving": "the model's own replicas",
    "spending": "cost and budgets",
    "scale": "Ray and scale",
    "records": "records and replay",
}

GROUPS: tuple[type[Group], ...] = (
    Source,
    Run,
    Reading,
    Prompting,
    Ladder,
    Transport,
    Serving,
    Spending,
    Scale,
    Records,
)
