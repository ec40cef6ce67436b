"""The compute inputs of a segment, derived from the settings' declarations.

A manifest entry (CONTRACT section 2) is the checkpoint fingerprint (section 3)
plus the fields that name the written file. Each field comes from the
declaration that feeds it (`Knob.compute`), from the run inputs' digests, or —
for the segment's hash and the prompt version — from here.
"""

from __future__ import annotations

import functools
from typing import Any

from taguru_ray.contract.manifest_entry import CHECKPOINT_FIELDS, MANIFEST_FIELDS
from taguru_ray.contract.records.attempts import SettingsRecord
from taguru_ray.contract.records.typed import Rung
from taguru_ray.contract.settings import forms
from taguru_ray.contract.settings.digests import InputDigests
from taguru_ray.contract.settings.knob import Declared
from taguru_ray.contract.settings.model import Settings, declarations

# Our prompts are our own words, so our prompt version must never equal one the
# reference writes: a manifest entry from `taguru extract` is not our answer.
# 102: the --schema block joined the prompt (seed 000: the version moves with it).
PROMPT_VERSION = 102


@functools.cache
def compute_declarations() -> dict[str, Declared]:
    """Each compute field with the (first) setting that feeds it (read from the
    declarations once: walking them costs about 0.2 ms, per segment of a skip)."""
    feeding: dict[str, Declared] = {}
    for declared in declarations():
        compute = declared.knob.compute
        if compute is not None:
            if compute.form is not None and not callable(getattr(forms, compute.form, None)):
                raise TypeError(f"{declared.name}: no form {compute.form!r} in settings/forms.py")
            feeding.setdefault(compute.field, declared)
    return feeding


def _field_values(settings: Settings, digests: InputDigests) -> dict[str, Any]:
    """The compute fields every segment of a run shares (a fresh dict: callers add to it)."""
    last = _last_shared
    if last and last[0] is settings and last[1] is digests:
        return dict(last[2])
    shared = _shared_fields(settings, digests)
    _last_shared[:] = [settings, digests, shared]
    return dict(shared)


# The same two objects ask again for every segment of a worker: known by identity, the
# answer skips hashing the whole frozen Settings model (pydantic hashes every field on
# every call), which the lru_cache key below costs each time (issue 51).
_last_shared: list[Any] = []


@functools.lru_cache(maxsize=16)
def _shared_fields(settings: Settings, digests: InputDigests) -> tuple[tuple[str, Any], ...]:
    found: dict[str, Any] = {"prompt_version": PROMPT_VERSION}
    for field, declared in compute_declarations().items():
        compute = declared.knob.compute
        assert compute is not None
        group = getattr(settings, declared.group)
        value = getattr(group, declared.name)
        if compute.own and value == declared.default:
            continue
        form = None if compute.form is None else getattr(forms, compute.form)
        found[field] = value if form is None else form(settings, digests)
    return tuple(found.items())


def checkpoint_fingerprint(
    settings: Settings, digests: InputDigests, segment_sha256: str, converter: str | None = None
) -> dict[str, Any]:
    """The compute inputs a checkpoint file is bound to (CONTRACT section 3); `converter`
    names a document's converter and its version (ADR 0078)."""
    found = _field_values(settings, digests)
    found["sha256"] = segment_sha256
    if converter is not None:
        found["converter"] = converter
    return {key: found[key] for key in CHECKPOINT_FIELDS if key in found}


def compute_inputs(
    settings: Settings,
    digests: InputDigests,
    segment_sha256: str,
    written_id: str | None,
    output: str,
    converter: str | None = None,
) -> dict[str, Any]:
    """A manifest entry: the checkpoint fingerprint plus what names the written file."""
    found = _field_values(settings, digests)
    if converter is not None:
        found["converter"] = converter
    found.update(
        sha256=segment_sha256,
        source_id=written_id if settings.source.source_id is not None else "",
        output=output,
    )
    return {key: found[key] for key in MANIFEST_FIELDS if key in found}


def settings_record(
    settings: Settings, digests: InputDigests, rung: Rung | None = None
) -> SettingsRecord:
    """The attempts log's `settings` record (a diagnostic snapshot, never a gate); `rung`
    on the ladder only."""
    found = _field_values(settings, digests)
    fields = {key: found[key] for key in SettingsRecord.model_fields if key in found}
    return SettingsRecord(**fields, rung=rung)
