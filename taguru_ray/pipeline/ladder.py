"""The structured-output ladder: rungs, the run-wide rung, and what a rung promises.

`--structured-output` picks a rung of the capability ladder (taguru ADR 0001 §6):
``json_schema`` sends the canonical schema as a strict ``response_format``,
``json_object`` sends JSON mode, ``prompted JSON`` sends none. ``auto`` probes
the endpoint once at startup — a tiny completion that invites prose, carrying
exactly the extraction ``response_format`` — and keeps the strongest rung whose
answer verifies, because a backend may accept a parameter without honouring
it (`llm/probe.py`). Under ``auto`` the rung is also demoted at run time
(taguru ADR 0021) when a piece exhausts the ladder under a constrained rung:
run-wide, compare-and-demote, never reversed. Pinned rungs never demote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.answer_schema import (
    response_format_json_object,
    response_format_json_schema,
    schema_errors,
)

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


def starting_rung(structured_output: str, max_output_tokens: int) -> str | None:
    """The rung a run starts at when `auto` does not probe for one: the pinned rung, else
    prompted JSON on the ladder (a budget alone engages it), else none — off the ladder."""
    if structured_output in PINNED:
        return PINNED[structured_output]
    return PROMPTED if max_output_tokens else None


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
