"""The run's inputs besides its segments, once read: what steers and judges every segment.

`store/run_inputs.py` reads them (``--vocabulary``, ``--schema``,
``--redact-rules`` and the redaction key); what they hash to travels with
them (`InputDigests`) into every fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from taguru_ray.contract.context_schema import ContextSchema, schema_type_names
from taguru_ray.contract.settings.digests import InputDigests
from taguru_ray.pipeline.vocabulary import (
    Vocabulary,
    allowlist,
    prompt_names,
    render_vocabulary_block,
)
from taguru_ray.text.occurrence import fold
from taguru_ray.text.redact import Rule


@dataclass(frozen=True)
class RunInputs:
    """What every segment of the run is steered and judged by; shipped once per worker."""

    vocabulary: Vocabulary | None = None
    schema: ContextSchema | None = None
    redaction: tuple[Rule, ...] = ()  # --redact: built-ins of the groups, then the file's
    redact_key: bytes = field(default=b"", repr=False)  # the placeholders' HMAC key
    digests: InputDigests = field(default_factory=InputDigests)  # every segment's inputs

    # Computed once per worker, not once per segment: an export holds many names.
    @cached_property
    def context_names(self) -> tuple[str, ...]:
        """--vocabulary's capped, alphabetical list, as prompted and traced."""
        return tuple(prompt_names(self.vocabulary)) if self.vocabulary else ()

    @cached_property
    def context_block(self) -> str:
        return render_vocabulary_block(list(self.context_names))

    @cached_property
    def allowlist(self) -> frozenset[str]:
        """Folded spellings the prompt offers run-wide: context names and schema types.

        Every concept name of the export, not only the 200 prompted: a context
        spelling never fails the occurrence check (seed 000).
        """
        names = allowlist(self.vocabulary) if self.vocabulary else frozenset()
        if self.schema is not None and self.schema.enforcing:
            names = names | frozenset(fold(name) for name in schema_type_names(self.schema))
        return names
