"""Is the Ray head still there? Asked when a worker dies, before blaming the worker.

A segment worker that dies is restarted by Ray and its segment resubmitted
(`engine/workers.py`). When the head itself is gone (its machine lost, its
container stopped) every actor call fails the same way, and four resubmits per
segment would end in "its worker died 4 times" — blaming a worker for a lost
cluster. The head's GCS port answering a TCP connect is the cheapest sign it is
alive that does not go through Ray (whose own calls wait a minute to reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib

CONNECT_TIMEOUT_S = 3.0  # a live head on a loaded machine accepts well within this


def split_address(gcs_address: str) -> tuple[str, int] | None:
    """``host:port`` (an IPv6 host in brackets) → its parts, or None if it is not one."""
    host, colon, port = gcs_address.rpartition(":")
    if not colon or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


async def head_answers(gcs_address: str, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True when the head's GCS port accepts a connection (or its address is unknown:
    then nothing can be said, and the worker keeps the blame)."""
    parts = split_address(gcs_address)
    if parts is None:
        return True
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*parts), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def head_lost_line(prefix: str, gcs_address: str) -> str:
    return (
        f"{prefix}the Ray head at {gcs_address} is gone (its GCS does not answer) — the "
        "segments in flight and those not started are not run; start the head again (or "
        "run without --address) and rerun: every finished segment and chunk checkpoint is kept"
    )
