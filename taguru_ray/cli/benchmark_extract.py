"""``taguru-ray benchmark extract --models FILE --context ID --out DIR [flags] CORPUS_DIR``.

One `taguru-ray extract` per (model, run) cell into a results directory
(BENCHMARK.md §1). Exit codes: 0 every cell complete, 1 a cell failed (the
matrix still ran to its end and every measurement is kept — ADR 0051) or the
harness failed, 2 a usage, models.json, corpus or drift error (nothing run),
130 stopped — rerun the same command to resume.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import secrets
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import ray

from taguru_ray import __version__
from taguru_ray.benchmark.cell_run import iso
from taguru_ray.benchmark.child import TaskFlags
from taguru_ray.benchmark.corpus import CorpusError, read_corpus
from taguru_ray.benchmark.manifest import (
    Harness,
    ManifestError,
    drift,
    model_entry,
    models_lock,
    new_manifest,
    parse_manifest,
    resumed,
)
from taguru_ray.benchmark.matrix import MatrixRun, write_json
from taguru_ray.benchmark.models_file import ModelsError, parse_models
from taguru_ray.benchmark.probe import probe
from taguru_ray.cli.args import OneLineParser, location
from taguru_ray.contract.answer_schema import response_format_json_schema
from taguru_ray.contract.settings.fingerprint import PROMPT_VERSION
from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES
from taguru_ray.engine.driver import start_ray
from taguru_ray.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    StartupError,
    TaguruRayError,
    UsageError,
    prefix,
)
from taguru_ray.settings.resolve import UUID_RE, check_persists
from taguru_ray.store.inputs import read_regular
from taguru_ray.store.outdir import OutDir
from taguru_ray.store.run_inputs import read_run_inputs

LABEL = "benchmark extract"
PREFIX = prefix(LABEL)  # taguru: benchmark: (BENCHMARK.md, ADR 0058)
MODELS_LIMIT = 1024 * 1024


def _int(low: int, high: int | None = None) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(text) from None
        if value < low or (high is not None and value > high):
            raise ValueError(text)
        return value

    parse.__name__ = f"integer {low}..{high}" if high else f"integer ≥ {low}"
    return parse


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="taguru-ray benchmark extract",
        label=LABEL,
        description="Run one extract per (model, run) cell of a models.json matrix into a "
        "results directory; rerun the same command to resume.",
    )
    p.add_argument("corpus", metavar="CORPUS_DIR", type=location,
                   help="the folder of .md/.txt segments")  # fmt: skip
    p.add_argument("--models", required=True, metavar="FILE", type=location,
                   help="the models.json matrix")  # fmt: skip
    p.add_argument("--context", required=True, metavar="ID", help="target context (UUID)")
    p.add_argument("--out", required=True, metavar="DIR", type=location,
                   help="results folder or fsspec URL")  # fmt: skip
    p.add_argument("--runs", type=_int(1, 99), default=1, metavar="N", help="runs per model")
    p.add_argument("--questions", type=_int(1, 8), metavar="N", help="questions per paragraph")
    p.add_argument("--fact-budget", type=_int(1), metavar="N", help="facts per paragraph")
    p.add_argument("--no-passage", action="store_true", help="write no passage line")
    p.add_argument("--lossy", action="store_true", help="drop invalid items, keep the rest")
    p.add_argument("--candidates", action="store_true", help="offer candidate names")
    p.add_argument("--vocabulary", metavar="PATH", type=location,
                   help="a label vocabulary export")  # fmt: skip
    p.add_argument("--name", metavar="NAME", help="the create block's context name")
    p.add_argument("--description", metavar="TEXT", help="the create block's description")
    p.add_argument(
        "--chunk-bytes", type=_int(MIN_CHUNK_BYTES), metavar="N", help="chunk cap in bytes"
    )
    p.add_argument("--parallel", type=_int(1), default=1, metavar="N", help="chunks at once")
    p.add_argument("--max-output-tokens", type=_int(1), metavar="N", help="completion cap")
    p.add_argument(
        "--max-attempts", type=_int(1, 10), default=2, metavar="N", help="attempts per chunk"
    )
    p.add_argument("--address", metavar="HOST:PORT", help="a Ray cluster every cell joins")
    p.add_argument("--workers", type=_int(1), metavar="N", help="segment workers per cell")
    p.add_argument(
        "--worker-resource", metavar="NAME", help="place segment workers on nodes with it"
    )
    p.add_argument(
        "--segment-window",
        type=_int(1),
        metavar="W",
        help="segments in flight per cell (default: extract's, the in-flight ceiling)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    try:
        args = parser().parse_once(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return _run(args)
    except UsageError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE


def _usage(message: str) -> int:
    print(f"{PREFIX}{message} — try 'taguru-ray {LABEL} --help'", file=sys.stderr)
    return EXIT_USAGE


def _flags(args: Any) -> TaskFlags | str:
    if not UUID_RE.match(args.context):
        return f"--context {args.context!r}: not a lowercase hyphenated UUID"
    if args.questions and args.no_passage:
        return "--questions needs the passage — drop --no-passage"
    if args.description is not None and args.name is None:
        return "--description needs --name (they make the create block together)"
    if args.description is not None and len(args.description.encode("utf-8")) > 4096:
        return "--description is over 4096 bytes"
    return TaskFlags(
        context=args.context,
        questions=args.questions,
        no_passage=args.no_passage,
        fact_budget=args.fact_budget,
        lossy=args.lossy,
        candidates=args.candidates,
        vocabulary=args.vocabulary,
        name=args.name,
        description=args.description,
        chunk_bytes=args.chunk_bytes,
        parallel=args.parallel,
        max_output_tokens=args.max_output_tokens,
        max_attempts=args.max_attempts,
        address=args.address or os.environ.get("RAY_ADDRESS") or None,
        workers=args.workers,
        worker_resource=args.worker_resource,
        segment_window=args.segment_window,
    )


def _run(args: Any) -> int:
    flags = _flags(args)
    if isinstance(flags, str):
        return _usage(flags)
    check_persists("--out", args.out)
    environ = dict(os.environ)
    try:
        raw = read_regular(args.models, MODELS_LIMIT)
    except OSError as error:
        print(f"{PREFIX}{args.models}: cannot be read ({error.strerror or error})", file=sys.stderr)
        return EXIT_USAGE
    try:
        matrix = parse_models(args.models, raw, environ)
    except ModelsError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE
    for warning in matrix.warnings:
        print(f"{PREFIX}{warning}", file=sys.stderr)
    chunk_bytes = flags.chunk_bytes or DEFAULT_CHUNK_BYTES
    try:
        segments = read_corpus(args.corpus, chunk_bytes)
    except CorpusError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE
    vocabulary_digest = ""
    if flags.vocabulary:
        try:
            inputs = read_run_inputs(
                vocabulary=flags.vocabulary,
                schema=None,
                redact="",
                redact_rules=None,
                redact_key=None,
                chunk_context="off",
            )
        except TaguruRayError as error:  # the loader's own line names the file and the fix
            print(f"{PREFIX}{error}", file=sys.stderr)
            return EXIT_FAILED
        except OSError as error:
            print(f"{PREFIX}--vocabulary {flags.vocabulary}: {error}", file=sys.stderr)
            return EXIT_FAILED
        vocabulary_digest = inputs.digests.vocabulary_digest
    results = OutDir(args.out)
    harness = Harness(
        runs_per_model=args.runs,
        segments_root=args.corpus,
        config_path=args.models,
        config_sha256=hashlib.sha256(raw).hexdigest(),
    )
    fresh = new_manifest(
        run_id=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3),
        started_at=iso(time.time()),
        version=__version__,
        harness=harness,
        segments=segments,
        extraction_settings=_extraction_settings(flags, chunk_bytes, vocabulary_digest),
        models=[],
        environment={},
    )
    try:
        existing = results.read("manifest.json")
    except OSError as error:
        print(f"{PREFIX}{args.out}: cannot be read ({error})", file=sys.stderr)
        return EXIT_FAILED
    try:
        if existing is not None:
            old = parse_manifest(results.path("manifest.json"), existing)
            fresh["models"] = [model_entry(m, _unprobed()) for m in matrix.models]
            why = drift(old, fresh)
            if why is not None:
                print(f"{PREFIX}{why} — use a new --out directory", file=sys.stderr)
                return EXIT_USAGE
            if old.get("taguru_version") != __version__:
                print(
                    f"{PREFIX}the results were started by taguru-ray "
                    f"{old.get('taguru_version')}; this is {__version__}",
                    file=sys.stderr,
                )
            manifest = resumed(old, args.runs)
        else:
            manifest = _started(results, fresh, matrix.models, environ)
        write_json(results, "manifest.json", manifest)
    except ManifestError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"{PREFIX}{args.out}: cannot be written ({error})", file=sys.stderr)
        return EXIT_FAILED
    run = MatrixRun(
        results=results,
        manifest=manifest,
        flags=flags,
        models=matrix.models,
        runs=int(manifest["harness"]["runs_per_model"]),
        corpus=args.corpus,
        segments=segments,
        environ=environ,
        say=lambda line: print(f"{PREFIX}{line}", file=sys.stderr, flush=True),
    )
    started_ray = False
    if flags.address is None:
        # One local Ray for the whole matrix: every child joins it, so lanes share its
        # start-up cost, and concurrent cells do not each start a cluster.
        try:
            started_ray = start_ray(None)
        except StartupError as error:
            print(f"{PREFIX}{error}", file=sys.stderr)
            return EXIT_FAILED
        run.flags = replace(flags, address=ray.get_runtime_context().gcs_address)
        run.environ = dict(os.environ)  # Ray's own variables now (RAY_AUTH_MODE): children join
    try:
        run.run()
    finally:
        if started_ray:
            ray.shutdown()
    if run.error is not None:
        print(f"{PREFIX}{run.error}", file=sys.stderr)
        return EXIT_FAILED
    if run.interrupted:
        print(f"{PREFIX}stopped — rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    finished = {**run.manifest, "finished_at": iso(time.time())}
    try:
        write_json(results, "manifest.json", finished)
    except OSError as error:
        print(f"{PREFIX}{args.out}: cannot be written ({error})", file=sys.stderr)
        return EXIT_FAILED
    cells = finished["cells"]
    counts = {o: sum(1 for c in cells if c["outcome"] == o) for o in ("complete", "failed")}
    print(
        f"benchmark extract: {len(cells)} cell(s), {counts['complete']} complete, "
        f"{counts['failed']} failed — {args.out}"
    )
    for cell in cells:
        if cell["outcome"] == "failed":
            print(f"{PREFIX}cell {cell['cell_id']} failed — its measurements are kept "
                  f"(`benchmark compare` reads them); why: {cell['cell_dir']}/stderr.log",
                  file=sys.stderr)
    # A failed cell fails the command, as a failed segment fails `extract`: a nightly
    # script must not read exit 0 over a matrix that holds one (ADR 0051).
    return EXIT_FAILED if counts["failed"] else EXIT_OK


def _unprobed() -> dict[str, Any]:
    return {"provider_probe": {"attempted": [], "ok": False, "note": None}}


def _started(
    results: OutDir, fresh: dict[str, Any], models: Any, environ: dict[str, str]
) -> dict[str, Any]:
    """A fresh results directory: the lock file, the probe, the environment."""
    if results.local:
        os.makedirs(results.local_path(""), exist_ok=True)
    write_json(results, "models.lock.json", models_lock(models))
    probed = []
    for model in models:
        key = environ.get(model.api_key_env) if model.api_key_env else None
        if model.url is None:  # an engine entry: its replicas exist while its cells run
            probed.append(model_entry(model, _unprobed()))
            continue
        probed.append(model_entry(model, probe(model.url, model.model, key)))
    return {**fresh, "models": probed, "environment": _environment()}


def _extraction_settings(flags: TaskFlags, chunk_bytes: int, vocabulary: str) -> dict[str, Any]:
    schema = json.dumps(response_format_json_schema(), sort_keys=True, separators=(",", ":"))
    return {
        "prompt_version": PROMPT_VERSION,
        "chunk_bytes": chunk_bytes,
        "temperature": 0,
        "context": flags.context,
        "questions": flags.questions or 0,
        "fact_budget": flags.fact_budget or 0,
        "no_passage": flags.no_passage,
        "description": flags.description or "",
        "name": flags.name or "",
        "max_output_tokens": flags.max_output_tokens,
        "max_attempts": flags.max_attempts,
        "parallel": flags.parallel,
        "timeout_secs": 300,
        "schema_sha256": hashlib.sha256(schema.encode("utf-8")).hexdigest(),
        "lossy": flags.lossy,
        "candidates": flags.candidates,
        "vocabulary_sha256": vocabulary,
        "corrective_context_bytes": None,
        "coverage": False,
        "diagnostics": "",
        "diagnostics_raw_bytes": None,
        "context_schema": "",
    }


def _environment() -> dict[str, Any]:
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = None
    return {
        "os": platform.system().lower(),
        "arch": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "memory_bytes": memory,
        "gpu": None,
        "hostname_hash": hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest(),
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None
