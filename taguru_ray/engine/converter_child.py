"""The child process documents are converted in (`engine/converter.py` starts it).

It limits its own address space first (``argv[1]`` bytes), so a document that would
eat a node's memory ends this process, not the worker's; then it answers requests on
stdin, one at a time, until stdin closes. A request is a kind line and a length-prefixed
body; an answer is a length-prefixed JSON object, ``{"converted": …}`` or
``{"refused": "<why>"}``.
"""

from __future__ import annotations

import contextlib
import json
import resource
import struct
import sys
from typing import BinaryIO

from taguru_ray.documents.convert import convert
from taguru_ray.documents.converted import DocumentRefused

LENGTH = struct.Struct(">Q")


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    parts, held = [], 0
    while held < size:
        chunk = stream.read(size - held)
        if not chunk:
            return None
        parts.append(chunk)
        held += len(chunk)
    return b"".join(parts)


def _peak_bytes() -> int:
    """The most address space this process has held (Linux), else its peak resident set."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def serve(stdin: BinaryIO, stdout: BinaryIO, limit: int = 0) -> None:
    while True:
        kind = stdin.readline()
        header = _read_exactly(stdin, LENGTH.size) if kind else None
        if header is None:
            return
        data = _read_exactly(stdin, LENGTH.unpack(header)[0])
        if data is None:
            return
        try:
            answer = {"converted": convert(kind.decode().strip(), data).to_json()}
        except DocumentRefused as refused:
            why = str(refused)
            # A library that runs out of memory under the limit often says only that it
            # failed (lxml: "unknown error"): near the limit, the limit is the why.
            if limit and _peak_bytes() >= limit * 0.9:
                why = (
                    f"needs more than its converter's {limit >> 20} MiB memory limit "
                    f"(--convert-memory; the library said: {why})"
                )
            answer = {"refused": why}
        body = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
        stdout.write(LENGTH.pack(len(body)) + body)
        stdout.flush()


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if limit > 0:
        # A platform without it: the timeout still holds.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer, limit)


if __name__ == "__main__":
    main()
