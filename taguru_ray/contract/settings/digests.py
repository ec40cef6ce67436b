"""What a run's inputs (``--vocabulary``, ``--schema``, ``--redact-rules``) hash to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputDigests:
    """What the inputs hash to: compute inputs of every segment (the manifest's fields)."""

    redaction_input: str = ""
    vocabulary_digest: str = ""
    ingested_digest: str = ""
    schema_digest: str = ""
