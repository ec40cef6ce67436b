"""One cell, run: the child extract, its sidecar tailed into the runs file, its exit read.

The shell around `child` and `transcribe`: a subprocess, a 50 ms tail of the
diagnostics sidecar, the runs file appended a poll's lines at a time, the
cell's logs. On an object store the sidecar and the logs are kept in a local
scratch folder while the child runs and put into the cell's folder when it
ends (an object store cannot be tailed); the runs file is appended as there.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from taguru_ray.benchmark.child import TaskFlags, cell_outcome, child_argv, child_env, resolved_rung
from taguru_ray.benchmark.corpus import SegmentInfo
from taguru_ray.benchmark.models_file import ModelEntry
from taguru_ray.benchmark.saturation import Price, Seen, saturation
from taguru_ray.benchmark.transcribe import Cell, Transcriber, runs_header, seeded_counts
from taguru_ray.contract.settings.fingerprint import PROMPT_VERSION
from taguru_ray.store.outdir import OutDir

POLL_SECONDS = 0.05
# The sidecar's name is hidden: the cell folder is an ordinary --out, and `taguru import`,
# `verify` and `--vocabulary` read every visible *.jsonl in it as a source file.
SIDECAR = ".diagnostics.jsonl"
CELL_FILES = (SIDECAR, "stdout.log", "stderr.log", "exit_code")


def _die_with_parent() -> Callable[[], None] | None:
    """Linux: a child gets SIGTERM when the harness dies (killed, out of memory), so it
    stops at its next checkpoint instead of running on, orphaned, holding its --out's
    lock against the rerun that resumes it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def arm() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

    return arm


DIE_WITH_PARENT = _die_with_parent()


class HarnessError(RuntimeError):
    """The harness itself failed (a spawn, an exit it cannot read): `benchmark extract` exits 1."""


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class CellRun:
    results: OutDir
    run_id: str
    flags: TaskFlags
    model: ModelEntry
    run_index: int
    corpus: str
    segments: tuple[SegmentInfo, ...]
    environ: dict[str, str]
    on_child: Callable[[subprocess.Popen[bytes] | None], None] = lambda child: None
    _stderr: list[str] = field(default_factory=list)

    @property
    def cell(self) -> Cell:
        cell_dir = f"cells/{self.model.id}/run{self.run_index:02d}"
        return Cell(
            cell_id=f"{self.model.id}.run{self.run_index:02d}",
            model_id=self.model.id,
            model_name=self.model.model,
            run_index=self.run_index,
            cell_dir=cell_dir,
            out_dir=self.results.url.rstrip("/") + "/" + cell_dir,
        )

    def run(self) -> dict[str, Any]:
        """Run the cell to its end; the manifest's entry for it."""
        cell = self.cell
        started = time.time()
        scratch = None if self.results.local else tempfile.mkdtemp(prefix="taguru-ray-cell-")
        folder = self.results.local_path(cell.cell_dir) if scratch is None else scratch
        os.makedirs(folder, exist_ok=True)
        runs_name = f"runs/{cell.cell_id}.jsonl"
        if self.results.local:
            os.makedirs(self.results.local_path("runs"), exist_ok=True)
        earlier = self.results.read(runs_name)
        transcriber = Transcriber(cell, {s.path: s for s in self.segments})
        if earlier is not None:
            transcriber.attempts, transcriber.written = seeded_counts(_lines(earlier))
        runs = self.results.appender(runs_name, fresh=earlier is None)
        try:
            if earlier is None:
                runs.append(_jsonl([runs_header(cell, self.run_id, PROMPT_VERSION)]))
            sidecar = os.path.join(folder, SIDECAR)
            seen, exit_code = self._child(cell, folder, sidecar, transcriber, runs)
            outcome = cell_outcome(exit_code)
            if outcome is None:
                raise HarnessError(
                    f"{cell.cell_id}: extract exited {exit_code}, which no cell outcome means "
                    f"— see {cell.cell_dir}/stderr.log"
                )
            runs.append(_jsonl(transcriber.close(outcome, exit_code, float(int(time.time())))))
        finally:
            runs.close()
            if scratch is not None:
                self._put(scratch, cell.cell_dir)
                shutil.rmtree(scratch, ignore_errors=True)
        finished = time.time()
        price = (
            Price(self.model.price_per_gpu_hour, self.model.gpu_count or 1)
            if self.model.price_per_gpu_hour is not None
            else None
        )
        return {
            "cell_id": cell.cell_id,
            "model_id": cell.model_id,
            "run_index": cell.run_index,
            "runs_file": runs_name,
            "cell_dir": cell.cell_dir,
            "structured_output_resolved": resolved_rung(self._stderr, self.model.structured_output),
            "started_at": iso(started),
            "finished_at": iso(finished),
            "outcome": outcome,
            "engine": engine_ran(transcriber.engine),
            "saturation": saturation(
                seen,
                transcriber.gateway,
                wall_seconds=finished - started,
                segments_written=transcriber.written,
                price=price,
            ),
        }

    def _child(
        self, cell: Cell, folder: str, sidecar: str, transcriber: Transcriber, runs: Any
    ) -> tuple[list[Seen], int | None]:
        with contextlib.suppress(FileNotFoundError):
            os.remove(sidecar)  # extract truncates it anyway; never tail the last run's
        argv = child_argv(self.flags, self.model, cell.out_dir, sidecar, self.corpus)
        env = child_env(self.environ, self.flags, self.model)
        seen: list[Seen] = []
        with (
            open(os.path.join(folder, "stdout.log"), "wb") as stdout,
            open(os.path.join(folder, "stderr.log"), "wb") as stderr_log,
        ):
            try:
                child = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=subprocess.PIPE,
                    preexec_fn=DIE_WITH_PARENT,  # one libc call after fork: no Python lock taken
                )
            except OSError as error:
                raise HarnessError(f"{cell.cell_id}: cannot start extract ({error})") from None
            self.on_child(child)
            copier = threading.Thread(target=self._copy_stderr, args=(child.stderr, stderr_log))
            copier.start()
            tail = _Tail(sidecar)
            try:
                while True:
                    done = child.poll() is not None
                    self._transcribe(tail.read(), transcriber, runs, seen)
                    if done:
                        break
                    time.sleep(POLL_SECONDS)
                self._transcribe(tail.read(final=True), transcriber, runs, seen)
            finally:
                child.wait()
                copier.join()
                self.on_child(None)
        code = child.returncode
        exit_code = code if code >= 0 else None
        with open(os.path.join(folder, "exit_code"), "w", encoding="utf-8") as handle:
            handle.write("" if exit_code is None else str(exit_code))
        return seen, exit_code

    def _transcribe(
        self, records: list[dict[str, Any]], transcriber: Transcriber, runs: Any, seen: list[Seen]
    ) -> None:
        if not records:
            return
        now, ts = time.monotonic(), float(int(time.time()))
        lines = []
        for record in records:
            lines += transcriber.take(record, ts)
            if record.get("type") == "attempt":
                meta = record.get("provider_metadata") or {}
                seen.append(
                    Seen(
                        at=now,
                        elapsed=float(record.get("elapsed_seconds") or 0.0),
                        input_tokens=meta.get("input_tokens"),
                        output_tokens=meta.get("output_tokens"),
                    )
                )
        if lines:
            runs.append(_jsonl(lines))

    def _copy_stderr(self, pipe: IO[bytes], log: IO[bytes]) -> None:
        for raw in pipe:
            log.write(raw)
            log.flush()
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def _put(self, scratch: str, cell_dir: str) -> None:
        for name in CELL_FILES:
            path = os.path.join(scratch, name)
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    self.results.write(f"{cell_dir}/{name}", handle.read())


def engine_ran(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a cell's own engine ran as, from its sidecar's `engine` record: the engine, the
    version its servers stated, the GPU type read from the nodes (None: no engine)."""
    if record is None:
        return None
    accelerators = [str(a) for a in record.get("accelerators") or []]
    return {
        "engine": record.get("engine"),
        "version": record.get("version"),
        "accelerator": ", ".join(accelerators) or None,
        "gpus": record.get("gpus"),
        "replicas": record.get("replicas"),
        "lost": record.get("lost"),
    }


class _Tail:
    """The complete lines added to a file since the last read; a partial last line waits."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self, *, final: bool = False) -> list[dict[str, Any]]:
        try:
            size = os.path.getsize(self.path)
            if size < self.offset:  # truncated under us: a fresh sidecar
                self.offset, self.partial = 0, b""
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = b"" if final else lines.pop()
        return [record for record in map(_record, lines) if record is not None]


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [record for record in map(_record, data.split(b"\n")) if record is not None]


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        for record in records
    )
