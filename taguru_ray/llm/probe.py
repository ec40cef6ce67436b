"""`--structured-output auto`: probe the endpoint once for the strongest rung it honours.

A tiny completion that invites prose, carrying exactly the extraction
``response_format``; the strongest rung whose answer verifies is kept, since a
backend may accept a parameter without honouring it (ADR 0008).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from taguru_ray.contract.completion import Completion, CompletionRequest
from taguru_ray.pipeline.ladder import (
    JSON_OBJECT,
    JSON_SCHEMA,
    PROMPTED,
    non_conformance,
    response_format,
)
from taguru_ray.pipeline.parse import Answer, parse_answer

PROBE_SYSTEM = "You are a helpful assistant."
PROBE_USER = (
    "In a sentence or two, tell me what a knowledge graph is. Then give the facts of "
    "'Ray runs on Kubernetes.' as associations."
)


async def probe(complete: Callable[[CompletionRequest], Awaitable[Completion]]) -> tuple[str, str]:
    """Resolve `auto`: the strongest rung whose probe answer verifies, and why."""
    messages = [
        {"role": "system", "content": PROBE_SYSTEM},
        {"role": "user", "content": PROBE_USER},
    ]
    findings = []
    for rung in (JSON_SCHEMA, JSON_OBJECT):
        completion = await complete(
            CompletionRequest(messages, max_tokens=512, response_format=response_format(rung))
        )
        why = _probe_failure(rung, completion)
        if why is None:
            return rung, "; ".join([*findings, f"{rung} verified"])
        findings.append(f"{rung}: {why}")
    return PROMPTED, "; ".join(findings)


def _probe_failure(rung: str, completion: Completion) -> str | None:
    if completion.outcome != "answer":
        return completion.error or completion.outcome
    if not isinstance(parse_answer(completion.text), Answer):
        return "the answer was not a JSON object"
    return non_conformance(rung, completion.text)
