"""The driver: the `taguru-ray extract` process.

`extract` locks --out, starts or joins Ray and hands the run to `ExtractRun`;
`dry_run` plans every segment without Ray, a model, a write or a lock.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import ray

from taguru_ray.contract.names import join, output_name, written_id
from taguru_ray.contract.ray_variables import USE_TLS
from taguru_ray.engine.batch_price import chain, rounds_line, run_tariff
from taguru_ray.engine.cluster_paths import for_the_cluster, remote_head
from taguru_ray.engine.documents import DryDocuments
from taguru_ray.engine.local_ray import local_system_config
from taguru_ray.engine.run import ExtractRun
from taguru_ray.engine.run_inputs import load_run_inputs
from taguru_ray.engine.same_bytes import SameBytes, manifest_holders
from taguru_ray.engine.scan import Console, Tally, scan, skip_line
from taguru_ray.engine.segment import FAILURE_PREFIX
from taguru_ray.engine.spend import estimate_line
from taguru_ray.errors import MESSAGE_PREFIX, StartupError, TaguruRayError, exit_code
from taguru_ray.llm.tokenizer import load_counter
from taguru_ray.pipeline.chunk_context import plan_segment
from taguru_ray.pipeline.estimate import Estimate, estimate_segment
from taguru_ray.pipeline.prompt import system_prompt
from taguru_ray.pipeline.read import SegmentRefused, read_segment, redact_segment
from taguru_ray.pipeline.segment_job import SegmentJob
from taguru_ray.pipeline.steering import steering_for
from taguru_ray.settings import Settings, checkpoint_fingerprint
from taguru_ray.store.checkpoints import count_reusable
from taguru_ray.store.corpus import Corpus
from taguru_ray.store.footprint import Footprint
from taguru_ray.store.inputs import corpus_of, read_source
from taguru_ray.store.lock import lock_for
from taguru_ray.store.manifest import Manifest
from taguru_ray.store.orphans import Coverage, orphans_line
from taguru_ray.store.outdir import LinkRefused, OutDir
from taguru_ray.store.retire import pending, segments

__all__ = ["Console", "dry_run", "extract", "start_ray"]


def dry_run(settings: Settings, console: Console) -> int:
    """Plan every segment: calls nothing, writes nothing, takes no lock."""
    for line in settings.notes:
        console.err(f"{MESSAGE_PREFIX}{line}")
    inputs = load_run_inputs(settings)  # the digests are fingerprint inputs
    tariff = run_tariff(settings)  # the batch price under --batch-api
    out = OutDir(settings.source.out)
    sources = corpus_of(settings.source)
    for line in sources.notes:  # what the corpus holds that the run does not read
        console.err(f"{MESSAGE_PREFIX}{line}")
    estimate = Estimate()
    counter = load_counter(settings.transport.model)  # tiktoken's for OpenAI's models
    manifest, note = Manifest.load(out)
    if note:
        console.err(f"{FAILURE_PREFIX}{note}")
    corpus = Coverage.of(sources)
    for unfinished in pending(out):
        console.err(
            f"{MESSAGE_PREFIX}the prune of run {unfinished.run_id} was left unfinished "
            f"({segments(unfinished.records)} segment(s)): the next run completes it"
        )
    orphans = corpus.orphans(lambda: (path for path, _ in manifest.entries.sorted_rows()))
    if orphans:
        console.err(f"{MESSAGE_PREFIX}{orphans_line(orphans, prune=False)}")
    existing = out.presence()
    tally = Tally(total=len(sources))
    seen: set[str] = set()
    chains: list[int] = []  # rounds per planned segment, under --batch-api
    several = len(sources) > 1
    same_bytes = SameBytes(
        lambda i: (sources[i], written_id(sources[i], settings.source.source_id, several)),
        manifest_holders(lambda: manifest),
        console.err,
        renamed=lambda path: corpus.covers(path) and not corpus.holds(path),
    )
    # A dry run converts a document here to count its chunks (a run converts on the
    # workers); its child ends with this process if the loop does not reach the close.
    documents = DryDocuments(settings, out)
    for index, source in enumerate(sources):
        scanned = scan(
            settings,
            index,
            source,
            several,
            seen,
            inputs,
            lambda _, i=index: sources.read(i),
            document=sources.document(index),
        )
        if scanned.refusal or scanned.inputs is None or scanned.data is None:
            console.err(f"{FAILURE_PREFIX}{source}: {scanned.refusal}")
            tally.failed += 1
            continue
        skippable = not settings.run.force and not settings.records.bypasses_store
        if skippable and manifest.unchanged(source, scanned.inputs, existing):
            console.out(skip_line(source))
            tally.unchanged += 1
            continue
        same_bytes.check(index, scanned.inputs["sha256"])
        converter = scanned.inputs.get("converter")
        try:
            read = (
                read_segment(source, scanned.data)
                if converter is None
                else documents.read(converter, scanned.data, scanned.inputs["sha256"], source)
            )
        except SegmentRefused as refusal:
            console.err(f"{FAILURE_PREFIX}{source}: {refusal}")
            tally.failed += 1
            continue
        segment, redactions = redact_segment(read, inputs.redaction, inputs.redact_key)
        _, chunks = plan_segment(
            settings.prompt.chunk_context, segment.paragraphs, settings.input.chunk_bytes
        )
        masked = sum(1 for found in redactions if not found.preexisting)
        chains.append(chain(settings, len(chunks)))
        fingerprint = checkpoint_fingerprint(settings, inputs.digests, segment.sha256, converter)
        reusable = (
            0
            if settings.run.force
            else count_reusable(
                out,
                source,
                fingerprint,
                [chunk.sha256 for chunk in chunks],
                logged=settings.records.trace_attempts,
            )
        )
        system = system_prompt(
            steering_for(
                SegmentJob(index, source, b"", "", ()), settings.prompt, inputs, segment.text
            )
        )
        estimate += estimate_segment(
            system,
            source,
            chunks,
            gleanings=settings.ladder.gleanings,
            questions=settings.prompt.questions or 0,
            counter=counter,
        )
        extra = f", {masked} redaction(s)" if settings.input.redact else ""
        extra += f", {reusable} reusable from checkpoint" if reusable else ""
        console.out(
            f"{source}: would extract ({segment.bytes} bytes, {len(chunks)} chunk(s){extra}) "
            f"→ {join(settings.source.out, output_name(source))}"
        )
        tally.planned += 1
    documents.close()
    same_bytes.close()
    console.out(
        f"extract: {tally.planned} planned, {tally.unchanged} unchanged, {tally.failed} failed "
        f"of {tally.total} segment(s)"
    )
    if tally.planned:
        console.err(f"{MESSAGE_PREFIX}{estimate_line(estimate, tariff, counter)}")
    if tally.planned and settings.transport.batch_api:
        console.err(f"{MESSAGE_PREFIX}{rounds_line(settings, chains)}")
    return exit_code(tally.failed, stopped=False)


def unmasked_note(settings: Settings) -> str | None:
    """Said once, before the first segment is read: text is about to leave the machine."""
    if settings.input.redact:
        return None
    remote = [host for host in map(_host, settings.transport.endpoints) if not _loopback(host)]
    if not remote:
        return None
    return (
        f"{MESSAGE_PREFIX}--redact is off and the endpoint {remote[0]} is not this machine: "
        "segments are sent as written — add --redact to mask secrets and personal data first"
    )


def _host(url: str) -> str:
    return urlsplit(url).hostname or url


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    # 0.0.0.0 / :: as a destination reaches this host, as a loopback address does.
    return address.is_loopback or address.is_unspecified


JOIN_TIMEOUT_S = 15.0  # a head that does not answer a TCP connect by then is not there

# HTTP/2's client preface and an empty SETTINGS frame. Ray's GCS (and the Ray Client
# server behind ray://) speak gRPC, so they answer with a SETTINGS frame of their own;
# a dashboard, a database or any other service on that port does not, and ray.init()
# would retry such an address for many minutes.
_HTTP2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS_FRAME = 0x04


def start_ray(address: str | None) -> bool:
    """Connect to `address` (--address or RAY_ADDRESS), or start a local Ray; True when this
    process started it.

    With no address a new local Ray is started — never whatever cluster Ray's
    current-cluster file names, whose head may be long dead. A head that does
    not accept a connection within JOIN_TIMEOUT_S, a port where something other
    than a Ray head answers, or a head that refuses this driver (a cluster that
    needs a token) is one `StartupError` line, never a hang or a traceback; a
    Ctrl+C meanwhile ends the run at once.
    """
    if ray.is_initialized():
        return False
    if address is not None:
        _reachable(address)
    try:
        _init(address)
    except (KeyboardInterrupt, StartupError):
        raise
    except Exception as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        where = f"--address {address}" if address else "a local Ray"
        fix = (
            "check the address, and for a cluster that needs a token, RAY_AUTH_TOKEN"
            if address
            else "see `ray start --head` for what this machine is missing"
        )
        raise StartupError(
            f"{where}: Ray did not start ({type(error).__name__}: {first[:300]}) — {fix}"
        ) from None
    return address is None


LOCAL_START_ATTEMPTS = 3


def _init(address: str | None) -> None:
    """ray.init; a local start is tried again when its raylet missed Ray's fixed 30 s to
    register, which a machine loaded far past its cores does now and then (seen in CI at a
    load of 30 on 2 cores). A failed start's processes end with this one (Ray's reaper)."""
    for attempt in range(1 if address else LOCAL_START_ATTEMPTS):
        try:
            ray.init(
                address=address or "local",
                logging_level=logging.ERROR,
                log_to_driver=False,
                include_dashboard=False if address is None else None,
                **({} if address else {"_system_config": local_system_config(os.environ)}),
            )
            return
        except Exception as error:
            if address or attempt == LOCAL_START_ATTEMPTS - 1:
                raise
            if "timed out during startup" not in str(error):
                raise
            ray.shutdown()


def _reachable(address: str) -> None:
    """A TCP connect to the head and a gRPC greeting, each bounded by JOIN_TIMEOUT_S: Ray's
    own join retries for minutes, at a port where nothing listens and at one where
    something other than a Ray head does."""
    target = address.removeprefix("ray://")
    if target in ("auto", "local") or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    if "://" in host or not port.isdigit():
        raise StartupError(
            f"--address {address}: expected HOST:PORT (or ray://HOST:PORT) of the head — an "
            "http:// address is the dashboard's, for `ray job submit`"
        )
    try:
        with socket.create_connection(
            (host.strip("[]"), int(port)), timeout=JOIN_TIMEOUT_S
        ) as connection:
            speaks_grpc = _tls() or _answers_http2(connection)
    except OSError as error:
        why = (
            f"no answer within {JOIN_TIMEOUT_S:g} s"
            if isinstance(error, TimeoutError)
            else (error.strerror or str(error))
        )
        raise StartupError(
            f"--address {address}: no Ray head answers there ({why}) — start the cluster, "
            "or drop --address (and RAY_ADDRESS) to run on a local Ray"
        ) from None
    if not speaks_grpc:
        raise StartupError(
            f"--address {address}: something answers there, but not a Ray head (no gRPC) — "
            "give the head's GCS port (6379 unless `ray start --port` said otherwise), or "
            "ray://HOST:10001 for Ray Client"
        )


def _answers_http2(connection: socket.socket) -> bool:
    """Whether the peer answers HTTP/2's greeting with a SETTINGS frame, as a gRPC server
    does; a peer that stays silent for JOIN_TIMEOUT_S or closes does not."""
    try:
        connection.sendall(_HTTP2_GREETING)
        header = b""
        while len(header) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
            chunk = connection.recv(9 - len(header))
            if not chunk:
                return False
            header += chunk
    except (TimeoutError, ConnectionError):  # silent, or reset: not a gRPC server
        return False
    return header[3] == _SETTINGS_FRAME


def _tls() -> bool:
    """Ray's own TLS switch: the greeting would be plaintext to a TLS port, so it is skipped."""
    return os.environ.get(USE_TLS, "0").lower() in ("1", "true")


def extract(settings: Settings, console: Console, staged: Mapping[str, bytes] | None = None) -> int:
    """A real run (`execute`) or a dry one; the exit code."""
    if settings.run.dry_run:
        return dry_run(settings, console)
    return execute(settings, console, staged).exit_code


@dataclass(frozen=True)
class Executed:
    """A run that happened: its exit code and the run, for what the Python API reports."""

    exit_code: int
    run: ExtractRun


def execute(
    settings: Settings, console: Console, staged: Mapping[str, bytes] | None = None
) -> Executed:
    """A real run: lock --out, check the endpoints, start or join Ray, extract, summarise.
    `staged`: the run's segments in memory, by source name (agent sessions), instead of
    the input paths."""
    for line in settings.notes:
        console.err(f"{MESSAGE_PREFIX}{line}")
    # Before anything is sent: the cluster's processes resolve a relative path elsewhere.
    settings, lines = for_the_cluster(settings, remote_head(settings.scale.address))
    for line in lines:
        console.err(f"{MESSAGE_PREFIX}{line}")
    inputs = load_run_inputs(settings)  # before the lock: nothing written yet
    tariff = run_tariff(settings)  # the batch price under --batch-api
    note = unmasked_note(settings)
    if note:
        console.err(note)
    out = OutDir(settings.source.out)
    sources = list(staged) if staged is not None else corpus_of(settings.source)
    for line in getattr(sources, "notes", ()):  # what the corpus holds that is not read
        console.err(f"{MESSAGE_PREFIX}{line}")
    # The inputs' corpus, whose orphans the run names (ADR 0083): none for staged segments.
    corpus = Coverage.of(sources) if isinstance(sources, Corpus) else None
    footprint = Footprint(out)  # what a run refused before its first request takes back
    try:
        out.ensure()
    except LinkRefused as error:
        raise StartupError(str(error)) from None
    except OSError as error:
        raise StartupError(f"--out {settings.source.out}: cannot create it ({error})") from None
    with lock_for(out, console.err, settings.scale.lease_seconds) as lock:
        read = staged.__getitem__ if staged is not None else read_source
        run = ExtractRun(settings, console, out, sources, inputs, lock, read, tariff, corpus)
        # A prune a killed run left is completed before the manifest is read.
        run.pruning.complete_pending()
        # Reading and the skips of unchanged segments go on while Ray starts.
        run.start_reading()
        try:
            # The preflight before Ray (ADR 0054): a run that cannot go ends in a second.
            if settings.scale.address is not None and not ray.is_initialized():
                _reachable(settings.scale.address)  # a dead head is named first, as before
            run.check_endpoints()
            started = start_ray(settings.scale.address)
            if run.fleet is not None:
                run.fleet.own_ray = started  # too few GPUs there is one line, not a wait
            try:
                return Executed(asyncio.run(run.run()), run)
            finally:
                run.detach_lease()  # no renewal may call an actor once Ray is going
                if started:
                    ray.shutdown()
        except TaguruRayError:
            # Refused before the first request (the preflight, a Ray that is not there):
            # the run leaves nothing behind it made (ADR 0037).
            footprint.take_back()
            raise
        finally:
            run.stop_reading()
