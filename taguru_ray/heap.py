"""Cyclic garbage collection for the run's long-lived processes (ADR 0016).

A segment worker allocates tens of thousands of short-lived objects a second
(answers, records, futures). With CPython's default young-generation threshold
of 700 it ran over 200 young and two full collections per 2 000 completions,
each walking the 110 000 objects Ray and the imports leave behind: half a
second, about a tenth of the worker's CPU (measured with `gc.callbacks`).
Freezing what is alive once the process is set up takes those objects out of
every later collection, and a higher threshold makes the young collections
rare; the little cyclic garbage a run makes is still collected.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # allocations between young collections (CPython: 700)


def settle() -> None:
    """Call once the process holds what it keeps for the whole run."""
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 20, 20)


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value


def steady_malloc() -> None:
    """Hold glibc malloc's mmap threshold where it starts (ADR 0042).

    glibc raises the threshold to the size of each mmapped block it frees, up to
    32 MB; after a big transient (the sorted listing of a million names) every
    block below that size comes from the heap, and the heap keeps what its
    growing buffers left behind: 30 MB of a million-segment skip's driver peak.
    Elsewhere (macOS, musl) there is nothing to hold.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"


def steady_arrow() -> None:
    """Arrow's allocations from the C library's malloc, not its bundled mimalloc (ADR 0075).

    A dataset's rows stream through Arrow a batch at a time; mimalloc kept about
    40 MB more of what those batches freed than malloc does (a 100 000-row Parquet
    dataset listed and streamed: peak RSS +42 MB against +21 MB). Arrow reads the
    variable when it is first imported, so this is said before that, in the driver
    only; a variable the user set wins.
    """
    import os
    import sys

    if "pyarrow" not in sys.modules:
        os.environ.setdefault(ARROW_POOL, "system")
