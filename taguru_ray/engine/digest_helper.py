"""Segment hashes from a child process: a rerun's skip on two cores instead of one.

A rerun over a corpus that mostly did not change reads and hashes every segment
(the manifest compares the hash) and decides each skip, all in the driver's one
interpreter: hashing a segment of a few KB holds the GIL, so reader threads do
not spread it over cores (ADR 0046). Above HELPER_FROM local segments, when a
manifest could skip them, a child process reads and hashes them a batch at a
time while the driver decides; a segment the run extracts after all is read
again by the driver, its bytes hashed with it, so what a worker gets and what
the manifest records come from one read.

The child answers a digest or nothing: a file it cannot read or hash cleanly
(missing, not UTF-8, a FIFO, over the cap) is read by the driver, which says
why as it always did. A child that fails answers nothing from then on.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

HELPER_FROM = 20_000  # below this a skip hides in Ray's start-up (10 000 took 1 s of its 7)
_LENGTH = struct.Struct(">I")


def worth_a_helper(
    segments: int, *, skippable: bool, files: bool, redacting: bool, coverage: bool, manifest: bool
) -> bool:
    """Whether a run's reading gains from the child: many local segment files, a manifest
    that may skip them, and nothing that needs a segment's bytes to skip it (--coverage
    judges the text; --redact hashes the masked text)."""
    return (
        segments >= HELPER_FROM
        and skippable
        and files
        and manifest
        and not redacting
        and not coverage
    )


class DigestHelper:
    """The driver's side: `digests(paths)` for one batch at a time, in call order."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._child: subprocess.Popen[bytes] | None = child
        self._lock = threading.Lock()

    @classmethod
    def start(cls) -> DigestHelper | None:
        """The child, importing this package from where the driver did; None when it
        cannot start (the driver then reads every segment itself)."""
        if not sys.executable:  # an embedded interpreter: nothing to start
            return None
        # Where the driver found this package, last on the path: an installed one is
        # found first as it was by the driver, a source tree the driver ran from after it.
        root = str(Path(__file__).resolve().parents[2])
        code = f"import sys; sys.path.append({root!r}); import {__name__} as h; h.main()"
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None
        return cls(child)

    def digests(self, paths: Sequence[str]) -> list[str | None]:
        """Each path's manifest hash (`segment_sha256` of its bytes), or None for one the
        driver must read itself — every one once the child has failed."""
        if not paths:
            return []
        with self._lock:
            child = self._child
            if child is None or child.stdin is None or child.stdout is None:
                return [None] * len(paths)
            try:
                _send(child.stdin, b"\0".join(os.fsencode(path) for path in paths))
                reply = _receive(child.stdout)
                answers = reply.decode("ascii").split("\n") if reply is not None else []
            except (OSError, ValueError, struct.error):  # a dead child, a garbled reply
                answers = []
            if len(answers) != len(paths):
                self._stop()
                return [None] * len(paths)
            return [answer or None for answer in answers]

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin is not None:
                child.stdin.close()  # the child's next read ends: it exits
            child.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()
        finally:
            if child.stdout is not None:
                child.stdout.close()


def _send(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes | None:
    """One framed message; None at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return body


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child: answer each batch of NUL-separated paths with one line a path."""
    from taguru_ray.documents.kinds import is_document
    from taguru_ray.pipeline.read import document_sha256, segment_sha256
    from taguru_ray.store.inputs import read_source

    def digest(path: str) -> str:
        try:
            if is_document(path):  # its bytes' digest, BOM and all (ADR 0078)
                return document_sha256(read_source(path))
            return segment_sha256(read_source(path))
        except Exception:  # the driver reads this one itself and reports what it finds
            return ""

    while (request := _receive(requests)) is not None:
        paths = [os.fsdecode(raw) for raw in request.split(b"\0")] if request else []
        _send(replies, "\n".join(digest(path) for path in paths).encode("ascii"))


def main() -> None:
    # The driver's Ctrl+C reaches its whole process group: the driver stops the run and
    # then closes the child's input, which ends it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.stdin.buffer, sys.stdout.buffer)
