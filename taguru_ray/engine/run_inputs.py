"""The run's inputs read for the settings that name them, their digests set back in.

`store.run_inputs` reads the files; the digests are compute inputs, so the
settings the run fingerprints segments with carry them.
"""

from __future__ import annotations

import dataclasses

from taguru_ray.settings import Settings
from taguru_ray.store.run_inputs import RunInputs, read_run_inputs


def load_run_inputs(settings: Settings) -> tuple[Settings, RunInputs]:
    """Read the inputs the settings name; the settings come back with their digests."""
    inputs, digests = read_run_inputs(
        vocabulary=settings.vocabulary,
        schema=settings.schema,
        redact=settings.redact,
        redact_rules=settings.redact_rules,
        redact_key=settings.redact_key,
        chunk_context=settings.chunk_context,
    )
    return dataclasses.replace(settings, **dataclasses.asdict(digests)), inputs
