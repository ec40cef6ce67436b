"""A provider's batch API on the wire: OpenAI's /v1/files + /v1/batches, Anthropic's
/v1/messages/batches (`--batch-api`, ADR 0068).

Each wire turns the run's `CompletionRequest` into a line body, hands a round's
lines over (OpenAI: a JSONL file uploaded with purpose=batch, then a batch over
it; Anthropic: the requests in the create call), reads a batch's status, and
streams its results back as one verdict per custom_id (`batch_results.py`): a
`Completion` — the value the live client returns, so the program judges a batch
answer as a live one — a `LineFailure` (the provider said the line has no
answer), or `Unread` (no verdict could be read).

What costs money is never sent twice blindly (issue 49, ADR 0084): a create is
one try (a 429, refused before anything was made, is tried again); a create
whose answer never came whole (a 5xx, a dropped connection) is `Ambiguous`, and
`find` looks for the batch it may have made — by the metadata and input file
(OpenAI) or by creation time and request count (Anthropic) — before anyone
creates again. A poll or a results read is one try too: the caller backs off
and tries again (the batch is still the provider's). Uploads and listings, which
cost nothing, run under the live client's transport policy (4 tries, full
jitter, Retry-After). A 4xx is a `BatchApiError`. The API key goes only to the
configured API host (ADR 0085): a URL the provider hands back naming another
host is not followed with it.

The shared calls and values are in `batch_http.py`, each provider's wire in
`batch_openai.py` and `batch_anthropic.py`; this module picks one.
"""

from __future__ import annotations

import aiohttp

from taguru_ray.contract.settings.groups import Transport
from taguru_ray.llm.batch_anthropic import AnthropicWire
from taguru_ray.llm.batch_http import (
    TRANSIENT,
    Ambiguous,
    BatchApiError,
    BatchWire,
    Line,
    Retrying,
    Snapshot,
    base_url,
)
from taguru_ray.llm.batch_openai import OpenAIWire, completion_of
from taguru_ray.llm.batch_results import LineFailure, LineResult, Unread
from taguru_ray.llm.retry import transport_retrying

__all__ = [
    "TRANSIENT",
    "Ambiguous",
    "AnthropicWire",
    "BatchApiError",
    "BatchWire",
    "Line",
    "LineFailure",
    "LineResult",
    "OpenAIWire",
    "Snapshot",
    "Unread",
    "base_url",
    "completion_of",
    "wire_for",
]


def wire_for(
    http: aiohttp.ClientSession, transport: Transport, retrying: Retrying = transport_retrying
) -> BatchWire:
    if transport.batch_api == "anthropic":
        return AnthropicWire(http, transport, retrying)
    return OpenAIWire(http, transport, retrying)
