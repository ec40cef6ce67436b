"""A batch request's `custom_id`, and a round's requests packed within a provider's limits.

The id is the request's identity, not its place: the segment (16 hex of its
source) and the request body (40 hex of its compact JSON), with how many times
the segment asked that same body before (`occurrence`, from 1). A rerun whose
program asks the same request again — the prompt is a function of the segment,
the settings and the answers so far — computes the same id, and so finds the
answer of the batch it was handed to instead of handing it over twice (ADR 0068).
Fits Anthropic's rule for ids: ``^[a-zA-Z0-9_-]{1,64}$``. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from taguru_ray.contract.records import compact_json


def custom_id(source: str, body: dict[str, Any], occurrence: int) -> str:
    segment = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    request = hashlib.sha256(compact_json(body).encode("utf-8")).hexdigest()[:40]
    return f"{segment}-{request}-{occurrence}"


def pack(sizes: Sequence[int], max_requests: int, max_bytes: int) -> list[range]:
    """Consecutive runs of the requests (their sizes in bytes, in order), each within
    `max_requests` requests and `max_bytes` bytes; a request larger than `max_bytes`
    alone still gets a run of its own (the provider then names it)."""
    runs: list[range] = []
    start, size = 0, 0
    for index, bytes_ in enumerate(sizes):
        full = index - start >= max_requests or (index > start and size + bytes_ > max_bytes)
        if full:
            runs.append(range(start, index))
            start, size = index, 0
        size += bytes_
    if start < len(sizes):
        runs.append(range(start, len(sizes)))
    return runs
