"""One `benchmark search` run, in the order of BENCHMARK.md §3.1.

Everything a user can get wrong — the eval file, a case limit, the results
directory, ``--run``, a corpus name, ``--config``, the address — is checked before
the first request and raises `UsageError` (exit 2). After that the run needs the
server: unreachable, no corpus available, or retrieval.json not written raise
`SearchFailed` (exit 1). A model whose corpus could not be built, or a case that
failed against one model, is recorded in the artifact instead: the others are
still measured (exit 0).

``--store DIR`` runs the same flow against an embedded server started for the run
(`embedded.embedded_server`), so the two modes cannot drift apart.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.compare.serde import dumps_pretty
from taguru_ray.benchmark.search.corpora import (
    CorpusBlock,
    build_corpus,
    corpus_name,
    probe_corpus,
)
from taguru_ray.benchmark.search.queries import Target, run_case
from taguru_ray.benchmark.search.report import Inputs, artifact
from taguru_ray.benchmark.search.results import Results, ResultsReader, read_results
from taguru_ray.contract.items import MAX_CONTEXT_NAME_BYTES
from taguru_ray.errors import TaguruRayError, UsageError
from taguru_ray.evalset import EvalSet, Mode, limit_problem, load
from taguru_ray.remote.address import AddressError, base_url, mask_url
from taguru_ray.remote.client import HEALTH_PROBE_SECONDS, RemoteError, TaguruClient
from taguru_ray.store.config_file import read_config_file
from taguru_ray.store.publish import publish

RETRIEVAL = "retrieval.json"
CONFIG_VARIABLE = "TAGURU_CONFIG"
Warn = Callable[[str], None]


class SearchFailed(TaguruRayError):
    """The run could not measure anything, or its artifact was not written (exit 1)."""


@dataclass(frozen=True)
class Request:
    """The parsed command line."""

    eval_path: str
    results_dir: str
    url: str | None = None
    config: str | None = None
    run: int = 1
    context_prefix: str | None = None
    skip_import: bool = False
    store: str | None = None


@dataclass(frozen=True)
class Outcome:
    artifact: dict[str, Any]
    path: str


@dataclass(frozen=True)
class _Plan:
    """Everything checked before the first request."""

    evalset: EvalSet
    results: Results
    contexts: dict[str, str]  # model_id -> corpus context, manifest order


def run_search(
    request: Request,
    environ: Mapping[str, str],
    *,
    warn: Warn = lambda _: None,
    now: Callable[[], str] | None = None,
) -> Outcome:
    """Run the whole flow; write RESULTS_DIR/retrieval.json and return it."""
    plan = _plan(request, warn)
    config_path = request.config or environ.get(CONFIG_VARIABLE) or None
    config = read_config_file(config_path) if config_path else {}
    clock = now or _now
    if request.store is None:
        try:
            base = base_url(request.url, environ, config)
        except AddressError as error:
            raise UsageError(str(error)) from None
        client = TaguruClient.from_environment(base, {**config, **environ})
        return _measure(request, plan, client, warn, clock)
    from taguru_ray.serve.embedded import embedded_server  # aiohttp: only here

    with embedded_server(request.store, environ) as base:
        return _measure(request, plan, TaguruClient(base, None), warn, clock)


def _plan(request: Request, warn: Warn) -> _Plan:
    evalset = load(request.eval_path, Mode.CARRY)
    for warning in evalset.warnings:
        warn(warning)
    limits = [problem for case in evalset.cases if (problem := limit_problem(case))]
    if limits:
        raise UsageError("\n".join(f"{request.eval_path}: {problem}" for problem in limits))
    results = read_results(request.results_dir)
    if not results.model_ids:
        raise UsageError(f"{request.results_dir}: manifest.json lists no models")
    if not request.skip_import and request.run not in results.run_indexes():
        shown = ", ".join(str(index) for index in results.run_indexes())
        raise UsageError(f"no cell recorded for run {request.run} — available runs: {{{shown}}}")
    prefix = request.context_prefix if request.context_prefix is not None else results.context
    contexts = {model: corpus_name(prefix, model) for model in results.model_ids}
    oversized = [
        f"'{name}' ({len(name.encode('utf-8'))} bytes)"
        for name in contexts.values()
        if len(name.encode("utf-8")) > MAX_CONTEXT_NAME_BYTES
    ]
    if oversized:
        raise UsageError(
            f"corpus context names longer than {MAX_CONTEXT_NAME_BYTES} bytes: "
            f"{', '.join(oversized)} — give a shorter --context-prefix"
        )
    return _Plan(evalset, results, contexts)


def _measure(
    request: Request, plan: _Plan, client: TaguruClient, warn: Warn, now: Callable[[], str]
) -> Outcome:
    shown_url = mask_url(client.base)
    try:
        client.health(timeout=HEALTH_PROBE_SECONDS)
    except RemoteError as error:
        raise SearchFailed(f"server at {shown_url} is not reachable: {error.cut()}") from None
    corpus = _corpora(request, plan, client)
    for built in corpus.values():
        if not built.available:
            warn(f"corpus {built.context}: {built.outcome}: {built.reason}")
    if not any(built.available for built in corpus.values()):
        raise SearchFailed("no model's corpus can be searched (see above) — nothing was written")

    targets = [Target(model, plan.contexts[model], corpus[model].available) for model in corpus]

    def search(context: str, body: Mapping[str, Any]) -> Any:
        return client.search(context, body).result

    warnings = list(plan.evalset.warnings)
    cases: list[dict[str, Any]] = []
    for case in plan.evalset.cases:
        block, case_warnings = run_case(case, targets, plan.results.segments, search)
        warnings += case_warnings
        cases.append(block)

    inputs = Inputs(
        results_dir=request.results_dir,
        eval_path=request.eval_path,
        eval_name=plan.evalset.name,
        case_count=len(plan.evalset.cases),
        url=shown_url,
        run_index=request.run,
        store=request.store,
    )
    document = artifact(
        run_id=plan.results.run_id,
        generated_at=now(),
        inputs=inputs,
        warnings=warnings,
        corpus=corpus,
        cases=cases,
    )
    path = posixpath.join(request.results_dir.rstrip("/"), RETRIEVAL)
    body = dumps_pretty(document) + "\n"
    try:
        publish(path, body.encode("utf-8"))
    except OSError as error:
        raise SearchFailed(f"writing {error} — nothing was written") from None
    return Outcome(document, path)


def _corpora(request: Request, plan: _Plan, client: TaguruClient) -> dict[str, CorpusBlock]:
    """Each model's corpus, built (or probed, --skip-import) in manifest order."""
    reader = None if request.skip_import else ResultsReader(request.results_dir)
    corpus: dict[str, CorpusBlock] = {}
    for model, context in plan.contexts.items():
        if reader is None:
            corpus[model] = probe_corpus(client, context)
        else:
            corpus[model] = build_corpus(
                client, reader, plan.results, model_id=model, run=request.run, context=context
            )
    return corpus


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
