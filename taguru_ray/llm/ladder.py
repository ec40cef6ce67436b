"""The structured-output ladder: rungs, the run-wide rung, and the `auto` probe.

`--structured-output` picks a rung of the capability ladder (ADR 0001 §6):
``json_schema`` sends the canonical schema as a strict ``response_format``,
``json_object`` sends JSON mode, ``prompted JSON`` sends none. ``auto`` probes
the endpoint once at startup — a tiny completion that invites prose, carrying
exactly the extraction ``response_format`` — and keeps the strongest rung whose
answer verifies, because a backend may accept a parameter without honouring
it. Under ``auto`` the rung is also demoted at run time (ADR 0021) when a piece
exhausts the ladder under a constrained rung: run-wide, compare-and-demote,
never reversed. Pinned rungs never demote.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.answer_schema import (
    response_format_json_object,
    response_format_json_schema,
    schema_errors,
)
from taguru_ray.llm.client import Completion, CompletionRequest
from taguru_ray.pipeline.parse import Answer, parse_answer

JSON_SCHEMA = "json_schema"
JSON_OBJECT = "json_object"
PROMPTED = "prompted JSON"
RUNGS = (JSON_SCHEMA, JSON_OBJECT, PROMPTED)  # strongest first
PINNED = {"json-schema": JSON_SCHEMA, "json-object": JSON_OBJECT}


def response_format(rung: str) -> dict[str, Any] | None:
    if rung == JSON_SCHEMA:
        return response_format_json_schema()
    if rung == JSON_OBJECT:
        return response_format_json_object()
    return None


def below(rung: str) -> str | None:
    index = RUNGS.index(rung)
    return RUNGS[index + 1] if index + 1 < len(RUNGS) else None


@dataclass(frozen=True)
class LadderConfig:
    """The ladder's per-run inputs; `engaged` False keeps the legacy loop."""

    engaged: bool
    demotable: bool  # the rung was resolved by `auto`
    max_output_tokens: int | None
    escalation_factor: int  # 0 = the escalated resend sends no cap
    runaway_ratio: int  # 0 = no runaway judgment

    @staticmethod
    def of(
        structured_output: str, max_output_tokens: int, escalation_factor: int, runaway_ratio: int
    ) -> LadderConfig:
        return LadderConfig(
            engaged=structured_output != "off" or max_output_tokens > 0,
            demotable=structured_output == "auto",
            max_output_tokens=max_output_tokens or None,
            escalation_factor=escalation_factor,
            runaway_ratio=runaway_ratio,
        )

    def escalated(self, budget: int) -> int | None:
        return budget * self.escalation_factor if self.escalation_factor else None


@dataclass
class RungState:
    """The run-wide rung (held by the gateway actor in a Ray run)."""

    rung: str

    def demote(self, ran_under: str) -> tuple[bool, str]:
        """Compare-and-demote: only a piece that ran under the current rung moves it.

        Returns whether this call demoted, and the rung now in force.
        """
        if self.rung != ran_under:
            return False, self.rung
        lower = below(self.rung)
        if lower is None:
            return False, self.rung
        self.rung = lower
        return True, self.rung


def non_conformance(rung: str, text: str | None) -> str | None:
    """Why an answer violates the response_format asked for (None when it does not).

    JSON mode promises a bare JSON object; strict json_schema promises that
    object in the schema's shape. Prose around it, a fence, or a wrong shape
    is the provider not honouring what it accepted.
    """
    if rung == PROMPTED or text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as error:
        return f"not a bare JSON object: {error}"
    if not isinstance(value, dict):
        return "not a JSON object"
    if rung == JSON_SCHEMA:
        errors = schema_errors(value)
        if errors:
            return "; ".join(errors[:3])
    return None


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
