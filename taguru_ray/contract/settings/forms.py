"""How a setting reads in the compute inputs, where that is not its value as it is.

Each is named by the setting's declaration (`Input.form`, the function's name here:
the declarations sit below the `Settings` model these read, so they name a form rather
than import it), and `fingerprint` calls it. Several keep an entry written at the
default equal to the reference's (an empty string).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from taguru_ray.contract.settings.groups import DEFAULT_ESCALATION_FACTOR, DEFAULT_RUNAWAY_RATIO
from taguru_ray.contract.settings.sizes import DEFAULT_CHUNK_BYTES

if TYPE_CHECKING:
    from taguru_ray.contract.settings.digests import InputDigests
    from taguru_ray.contract.settings.model import Settings


def description(settings: Settings, _: InputDigests) -> str:
    """--name and --description folded into one field; empty without --name, so entries
    written by default runs keep matching."""

    source = settings.source
    if source.name is None:
        return ""
    return json.dumps([source.name, source.description or ""], ensure_ascii=False)


def structured_output(settings: Settings, _: InputDigests) -> str:
    mode = settings.ladder.structured_output
    return "" if mode == "off" else mode


def escalation(settings: Settings, _: InputDigests) -> str:
    ladder = settings.ladder
    if not ladder.max_output_tokens or ladder.escalation_factor == DEFAULT_ESCALATION_FACTOR:
        return ""
    return str(ladder.escalation_factor)


def runaway(settings: Settings, _: InputDigests) -> str:
    ratio = settings.ladder.runaway_ratio
    return "" if ratio == DEFAULT_RUNAWAY_RATIO else str(ratio)


def chunk_bytes(settings: Settings, _: InputDigests) -> str:
    size = settings.input.chunk_bytes
    return "" if size == DEFAULT_CHUNK_BYTES else str(size)


def chunk_context(settings: Settings, digests: InputDigests) -> str:
    mode = settings.prompt.chunk_context
    if mode == "off":
        return ""
    if mode == "ingested":
        return f"ingested:{digests.ingested_digest}"
    return mode


def candidates(settings: Settings, _: InputDigests) -> str:
    return "seg1" if settings.prompt.candidates else ""


def redaction(_: Settings, digests: InputDigests) -> str:
    return digests.redaction_input


def schema(_: Settings, digests: InputDigests) -> str:
    return digests.schema_digest


def vocabulary(_: Settings, digests: InputDigests) -> str:
    return digests.vocabulary_digest


def date(settings: Settings, _: InputDigests) -> int:
    return settings.source.date or 0


def tags(settings: Settings, _: InputDigests) -> list[str]:
    return list(settings.source.tags)
