"""A completion asked for and what came back: the values the extraction program and
the HTTP client exchange (the client is only one way to get a `Completion`: a
replayed log and a test's canned answers are others)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Message = dict[str, str]


@dataclass(frozen=True)
class CompletionRequest:
    messages: list[Message]
    max_tokens: int | None = None
    response_format: dict[str, Any] | None = None
    retry_timeouts: bool = True  # off under the ladder: a timeout descends instead
    # Its place in the permit queue, lowest first: the segment index, so the oldest
    # segment of the window — the one holding it back — is served first (ADR 0016).
    priority: int = 0


@dataclass(frozen=True)
class Completion:
    """What one attempt got back.

    `outcome` is ``answer`` when a well-formed HTTP 200 arrived (its content
    may still be empty, cut off or refused), ``timeout`` or ``transport``
    when none did within the retry budget (then `error` says why).
    """

    outcome: Literal["answer", "timeout", "transport"]
    text: str | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    transport_retries: int = 0
    elapsed_seconds: float = 0.0
    error: str | None = None
    status: int | None = None
    attempt_seq: int | None = None  # numbered by admission control at the first try
    replayed_from: dict[str, Any] | None = None  # the recorded attempt this answer came from
    extra: dict[str, Any] = field(default_factory=dict)
