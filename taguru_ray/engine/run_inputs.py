"""The run's inputs, read for the settings that name them.

`store.run_inputs` reads the files; what they hash to travels in the
`RunInputs` (`digests`), beside the settings, into every fingerprint.
"""

from __future__ import annotations

from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.settings import Settings
from taguru_ray.store.run_inputs import read_run_inputs


def load_run_inputs(settings: Settings) -> RunInputs:
    """Read the inputs the settings name (--vocabulary, --schema, --redact-rules)."""
    return read_run_inputs(
        vocabulary=settings.prompt.vocabulary,
        schema=settings.prompt.schema_file,
        redact=settings.input.redact,
        redact_rules=settings.input.redact_rules,
        redact_key=settings.input.redact_key,
        chunk_context=settings.prompt.chunk_context,
    )
